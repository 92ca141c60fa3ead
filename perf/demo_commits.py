"""`kalma demo` at several commits, in one run, interleaved, each from an empty call cache: what a
change did to the main job on this machine, as a ratio that holds on the reader's.

Each commit is checked out into a temporary git worktree and run with this environment's
packages (the editable install's finder is taken out of the child's import path, so the
worktree's code is what runs). The working tree itself is `.`. Rounds alternate the commits, so
a machine that slows down midway slows all of them alike. The demo's own stage lines (the
builder, each experiment by model, the total) are kept beside the wall and CPU seconds.

    python -m perf.demo_commits b6a94d7 61eb023 . --rounds 2
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import AT_COMMIT, at_commits, report

CHILD = (
    AT_COMMIT
    + """
from kalma.cli import main
sys.argv = ["kalma", "demo", "-o", {out!r}]
main()
"""
)


def run_demo(root: Path, scratch: Path) -> dict[str, Any]:
    """One demo from an empty call cache: wall and CPU seconds, and the stage seconds it printed."""
    out, cache = Path(tempfile.mkdtemp(dir=scratch)), Path(tempfile.mkdtemp(dir=scratch))
    env = {**os.environ, "KALMA_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD.format(root=str(root), out=str(out / "demo"))], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the demo at {root} failed: {done.stderr[-2000:]}")
    stages: dict[str, float] = {}
    if found := re.search(r"\[2\] builder:.*\((\d+) s\)", done.stdout):
        stages["builder"] = float(found.group(1))
    for block in re.finditer(r"\(((?:[\w.-]+ \d+ s(?:, )?)+)\)\s*$", done.stdout, re.M):
        for llm, seconds in re.findall(r"([\w.-]+) (\d+) s", block.group(1)):
            stages[f"experiments, {llm}"] = stages.get(f"experiments, {llm}", 0.0) + float(seconds)
    return {"wall": wall, "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), "stages": stages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="+", help="commits to compare ('.' is the working tree); the first is the baseline")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kalma-demo-commits-") as tmp, at_commits(args.commits, Path(tmp)) as roots:
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in args.commits}
        for r in range(args.rounds):
            for c in args.commits:
                runs[c].append(run_demo(roots[c], Path(tmp)))
                print(f"round {r + 1}, {c}: {runs[c][-1]['wall']:.1f} s wall, {runs[c][-1]['cpu']:.1f} CPU s {runs[c][-1]['stages']}", flush=True)
    base = statistics.median(x["wall"] for x in runs[args.commits[0]])
    rows: dict[str, Any] = {}
    for c in args.commits:
        walls = [x["wall"] for x in runs[c]]
        rows[f"{c}: wall s (each run)"] = [round(w, 1) for w in walls]
        rows[f"{c}: CPU s (each run)"] = [round(x["cpu"], 1) for x in runs[c]]
        rows[f"{c}: median wall / {args.commits[0]}'s"] = round(statistics.median(walls) / base, 3)
        for stage in runs[c][0]["stages"]:
            rows[f"{c}: {stage} s (each run)"] = [x["stages"].get(stage) for x in runs[c]]
    report("demo_commits", rows)
    for k, v in rows.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
