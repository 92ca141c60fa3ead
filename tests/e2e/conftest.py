"""Fixtures shared by the end-to-end tests."""

from __future__ import annotations

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
