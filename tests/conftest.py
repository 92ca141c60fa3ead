"""Shared fixtures: an isolated cache per test, and the optional ../shared data."""

from __future__ import annotations

import os
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
