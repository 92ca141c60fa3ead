"""Shared fixtures: an isolated cache per test, and the optional ../shared data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BIOKALMA = SHARED / "data" / "biokalma"

# The machines have no route to model hubs: fail fast instead of waiting on the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Plans must not depend on how fast this machine is: the CPU's pass width is fixed for the tests
# (the calibration's own tests unset it), and a calibration never writes the user's file.
os.environ.setdefault("KALMA_PASS_TOKENS", "2048")
os.environ.setdefault("KALMA_CALIBRATION", os.path.join(os.environ.get("TMPDIR", "/tmp"), f"kalma-test-calibration-{os.getpid()}.json"))

# Hypothesis draws new examples on every run here, to keep exploring; CI (`.ci/run` sets the
# profile) draws the same ones each time, so a landing is never refused by a draw nobody reran.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# The modules whose tests take longest (real models, Spark, lm_eval and Inspect runs), longest
# first, by `--durations` here. They start the run: pytest-xdist's worksteal hands each worker a
# contiguous share of the collection and an idle worker steals from the end of another's queue, so
# a long test left for the end runs alone while the other core idles (13 s of a run, measured).
# Each module stays whole, so its module-scoped fixtures are made once.
LONGEST_FIRST = (
    "tests/e2e/test_inspect.py",
    "tests/e2e/test_harness.py",
    "tests/unit/test_other_metrics.py",
    "tests/unit/test_spark_import.py",
    "tests/e2e/test_baseline.py",
    "tests/e2e/test_judge_pairs.py",
    "tests/e2e/test_first_contact_7.py",
    "tests/unit/test_gpu.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))  # stable: the rest keep their order


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A pytest-xdist worker ends here, its reports sent and every fixture torn down: it leaves at
    once instead of spending 2-7 s (measured) freeing, object by object, the models, tensors and
    modules that the system takes back whole when the process ends. A worker by its config, not
    by PYTEST_XDIST_WORKER: a pytest that a test starts inherits that variable, and its exit
    status must survive."""
    if hasattr(config, "workerinput"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    from kalma import cache

    monkeypatch.setenv("KALMA_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    cache.set_cache(cache.Cache("default"))


@pytest.fixture(scope="session")
def biokalma_dir() -> Path:
    if not (BIOKALMA / "complex_question_graph.json").exists():
        pytest.skip("../shared/data/biokalma is not present")
    return BIOKALMA
