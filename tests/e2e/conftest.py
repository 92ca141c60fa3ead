"""Fixtures shared by the end-to-end tests."""

from __future__ import annotations

import fcntl
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dataset_builder.demo import demo_entries
from kalma.jsonl import write_jsonl
from kalma.kg import open_source


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo dataset as a file, written once per session (tests only read it)."""
    path = tmp_path_factory.mktemp("demo-dataset") / "dataset.jsonl"
    write_jsonl(path, demo_entries(open_source("demo")), "dataset")
    return path


# ---------------------------------------------------------------- runs made once for every worker (lm-evaluation-harness, Inspect)

# `python -m lm_eval` with its task index narrowed to the tasks of --include_path. Its CLI indexes
# all 13,986 of its built-in task files first (10 s of CPU here, and no option skips it); a task of
# --include_path overrides a built-in one of its name, so the KaLMA tasks run as in the user's command.
LM_EVAL = [
    sys.executable,
    "-c",
    "import functools; from lm_eval.tasks import TaskManager; "
    "TaskManager.__init__ = functools.partialmethod(TaskManager.__init__, include_defaults=False); "
    "from lm_eval.__main__ import cli_evaluate; cli_evaluate()",
]


@contextmanager
def made_once(name: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[tuple[Path, bool]]:
    """A folder made by one pytest-xdist worker for all of them: (the folder, whether to make it).
    A making that fails leaves the folder unfinished, for the next worker to make again."""
    root = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        folder = root / name
        yield folder, not (folder / ".done").exists()
        (folder / ".done").touch()


@pytest.fixture(scope="session")
def inspect_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, Path]:
    """One real `inspect eval kalma/kalma_specific` of the demo (`tests/e2e/test_inspect.py`'s
    `demo_run`), read by every test that reads a KaLMA log: its log, and the dataset file it asked."""
    pytest.importorskip("inspect_ai")
    from tests.e2e.test_inspect import demo_run

    with made_once("inspect-run", tmp_path_factory, worker_id) as (folder, make):
        if make:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            write_jsonl(folder / "dataset.jsonl", demo_entries(open_source("demo")), "dataset")
            demo_run(folder / "dataset.jsonl", folder / "logs")
    (log,) = (folder / "logs").glob("*.eval")
    return {"log": log, "dataset": folder / "dataset.jsonl"}
