"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIOKALMA = ROOT.parent / "shared" / "data" / "biokalma"
RESULTS = ROOT / "perf" / "results"


def require_biokalma() -> Path:
    if not (BIOKALMA / "complex_question_graph.json").exists():
        print(f"skipped: {BIOKALMA} is not present", file=sys.stderr)
        raise SystemExit(0)
    return BIOKALMA


def scratch() -> str:
    """A temporary folder removed when the script ends: a benchmark leaves /tmp as it found it."""
    path = tempfile.mkdtemp(prefix="kalma-bench-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def report(name: str, rows: dict[str, Any]) -> None:
    """Print the figures and keep them under perf/results/ (git-ignored)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(rows, indent=2))
    width = max(len(k) for k in rows)
    for k, v in rows.items():
        print(f"{k:<{width}}  {v:.4g}" if isinstance(v, float) else f"{k:<{width}}  {v}")


# The first lines of a child script that runs a commit's code: the editable install's finder is
# taken out of the import path, so the worktree's `kalma` is what imports (format with `root`).
AT_COMMIT = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__ and "editable" not in repr(f)]
sys.path.insert(0, {root!r})
"""


@contextmanager
def at_commits(commits: Iterable[str], into: Path) -> Iterator[dict[str, Path]]:
    """Each commit checked out into a git worktree under `into` (`.` is this tree), by commit;
    the worktrees are removed on the way out."""
    roots: dict[str, Path] = {}
    try:
        for commit in dict.fromkeys(commits):
            roots[commit] = ROOT if commit == "." else into / commit
            if commit != ".":
                subprocess.run(["git", "worktree", "add", "-q", "--detach", str(roots[commit]), commit], cwd=ROOT, check=True)
        yield roots
    finally:
        for commit, root in roots.items():
            if commit != ".":
                subprocess.run(["git", "worktree", "remove", "--force", str(root)], cwd=ROOT, check=False)
