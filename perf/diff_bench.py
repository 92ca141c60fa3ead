"""`kalma kg diff` on two generated dumps of at least 0.3 GB each (the second evolved from the
first by `perf.dumpgen --evolve`), timed against the import of one of them, in one run.

Each step runs as its own command in a fresh process (`kalma kg import`, `kalma kg diff`), so its
CPU time (its own and its threads') is its own; wall time and CPU-seconds are both reported, and
the diff's changes are checked against the generator's list (the same count per kind). The dumps
and stores are kept under `--work` (default runs/diff-bench, which git ignores): a second run
skips making them.

    python -m perf.diff_bench                       # 55,000 people: dumps of 0.36 and 0.32 GB
    python -m perf.diff_bench --people 5000 --work /tmp/small   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from .common import ROOT, report


def _command(*args: str) -> dict[str, float]:
    """`kalma ARGS` in a fresh process: its wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from kalma.cli import main; main()", *args], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"kalma {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    print(done.stdout.strip(), file=sys.stderr)
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def main() -> None:
    from kalma.kg.diff import KINDS, read_diff

    from .dumpgen import write_dump
    from .evolve import evolve, read_changes

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--people", type=int, default=55_000, help="people in the first dump (default 55,000: 0.36 GB, the second 0.32 GB)")
    ap.add_argument("--changes", type=float, default=0.05, help="the share of facts the second dump changes (default 0.05)")
    ap.add_argument("--threads", type=int, default=None, help="the import's and the diff's threads (default: one per core)")
    ap.add_argument("--work", default=str(ROOT / "runs" / "diff-bench"))
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    first, second = work / f"first-{args.people}.nt", work / f"second-{args.people}-{args.changes}.nt"
    if not first.exists():
        t0 = time.perf_counter()
        write_dump(first, args.people, "nt", seed=0, with_release=False)
        print(f"made {first.name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if not second.exists():
        t0 = time.perf_counter()
        evolve(first, second, args.changes, seed=1)
        print(f"evolved {second.name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    threads = ["--threads", str(args.threads)] if args.threads else []
    stores = [work / f"{dump.stem}.store" for dump in (first, second)]
    load = [os.getloadavg()[0]]
    imports = []
    for dump, store in zip((first, second), stores):
        shutil.rmtree(store, ignore_errors=True)
        imports.append(_command("kg", "import", str(dump), "-o", str(store), *threads))
        load.append(os.getloadavg()[0])
    out = work / "changes.diff"
    diffed = _command("kg", "diff", str(stores[0]), str(stores[1]), "-o", str(out), "--overwrite", *threads)
    load.append(os.getloadavg()[0])
    found = read_diff(out)
    header, listed = read_changes(second)
    wanted = Counter(r["kind"] for r in listed if r["lang"] in (None, "en"))  # the stores hold English labels
    assert found.meta["counts"]["kinds"] == {k: wanted[k] for k in KINDS}, (found.meta["counts"]["kinds"], wanted)
    gb = [d.stat().st_size / 1e9 for d in (first, second)]
    rows: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPUs, shared: load average {min(load):.1f} to {max(load):.1f} during the run",
        "date": time.strftime("%Y-%m-%d"),
        "dumps (GB, uncompressed N-Triples)": f"{gb[0]:.3f} and {gb[1]:.3f}",
        "claims in the first": header["claims"],
        "changes listed by the generator (English labels)": sum(wanted.values()),
        "changes found by kg diff": found.meta["rows"],
        "import of the first: wall s": round(imports[0]["wall_s"], 1),
        "import of the first: CPU s": round(imports[0]["cpu_s"], 1),
        "import of the second: wall s": round(imports[1]["wall_s"], 1),
        "kg diff: wall s": round(diffed["wall_s"], 1),
        "kg diff: CPU s": round(diffed["cpu_s"], 1),
        "kg diff / import of the first, wall": round(diffed["wall_s"] / imports[0]["wall_s"], 3),
        "kg diff / import of the first, CPU": round(diffed["cpu_s"] / imports[0]["cpu_s"], 3),
    }
    report("diff_bench", rows)
    print(json.dumps(found.meta["counts"]["kinds"]), file=sys.stderr)


if __name__ == "__main__":
    main()
