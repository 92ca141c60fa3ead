"""The front door and the documentation site: README.md stays what a new user needs, every page
it names exists, and the site builds with `mkdocs build --strict` (no broken page, link or anchor)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def test_the_readme_is_short_and_every_page_it_names_exists():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    assert "make demo" in readme and "make test" in readme
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", readme))
    assert linked and all((ROOT / p).is_file() for p in linked)
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages == set(re.findall(r": ([\w-]+\.md)$", nav, re.M))  # every page in the site's navigation, none missing
    assert {f"docs/{p}" for p in pages} - {"docs/index.md"} == linked  # and named from the front door


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') builds the site")
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert res.returncode == 0, res.stderr
    assert "WARNING" not in res.stderr
    assert (tmp_path / "site" / "formats" / "index.html").is_file()
