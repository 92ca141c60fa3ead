"""Shared fixtures: an isolated cache per test, and the optional ../shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BIOKALMA = SHARED / "data" / "biokalma"

# The machines have no route to model hubs: fail fast instead of waiting on the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


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
