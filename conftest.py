"""Doctest collection of the packages: pytest's `--doctest-modules` imports every module to look
for doctests. A module whose text holds no ">>>" has none; importing it only to find that out made
each xdist worker load Inspect (about 3 s) while collecting, whether or not it ran an Inspect test.
That every module imports is a test of its own (tests/unit/test_layout.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGES = ("kalma", "dataset_builder", "baselines", "evaluation", "bench")
ROOT = Path(__file__).resolve().parent


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.suffix != ".py" or not collection_path.is_relative_to(ROOT):
        return None
    parts = collection_path.relative_to(ROOT).parts
    if len(parts) > 1 and parts[0] in PACKAGES and ">>>" not in collection_path.read_text(encoding="utf-8"):
        return True
    return None
