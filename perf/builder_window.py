"""The builder's throughput against a local Wikidata store: entries evolved one at a time
against interleaved windows of entries (`kalma build --window`), and any earlier commit, in
one run, rounds alternating, each build in a fresh process from an empty call cache.

The records and the store come from a dump `perf.dumpgen` writes (kept under `--work`,
default runs/scale, which git ignores); the LLM is the template backend and the LM scorer a
random Llama (hidden 64, 2 layers, fp32, one torch thread): the builder's own cost, what a
small scorer leaves of it. `--lm smollm2 --threads 2` measures `kalma build`'s own default
scorer instead, with the threads a user's torch would take. Each row says the machine's load
average before it ran.

    python -m perf.builder_window --records 2000 --windows 1,32,128,512 --before 07ee337 --rounds 3
    python -m perf.builder_window --records 100000 --windows 128 --rounds 1   # the 100,000-record build
    python -m perf.builder_window --records 40 --windows 1,128 --lm smollm2 --threads 2   # the default scorer

Figures go to perf/results/builder_window.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import AT_COMMIT, ROOT, at_commits, report

RECORDS_PER_PERSON = 1.4  # dumpgen's people give about 1.4 relation records each

CHILD = (
    AT_COMMIT
    + """
import json, resource, time
import inspect
from dataset_builder.build import BuildConfig, build
window = {window!r}
options = {{"window": window}} if window and "window" in inspect.signature(build).parameters else {{}}
t0 = time.perf_counter()
rep = build({records!r}, {out!r}, BuildConfig(kg={kg!r}, llm="template", lm={lm!r}), progress=False, overwrite=True, **options)
seconds = time.perf_counter() - t0
e = rep["entries"]
print(json.dumps({{"seconds": seconds, "written": e["written"], "failed": sum(e["failed"].values()), "kg_s": rep["seconds"]["knowledge graph"],
                  "evolution_s": rep["seconds"]["evolution"], "resolved": rep["records"]["built from"], "removed": rep["records"]["removed"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""
)


def prepare(work: Path, records: int, lm: str | None) -> tuple[Path, Path, str]:
    """(the first `records` records, the store, the scorer's spec: `lm`, else the random Llama
    made once under `work`)."""
    from kalma.kg.store import import_dump

    from .dumpgen import write_dump
    from .random_models import build_llama

    people = int(records / RECORDS_PER_PERSON) + 1000
    dump, every = work / f"truthy-{people}.nt.gz", work / f"records-{people}.jsonl"
    if not (dump.exists() and every.exists()):
        write_dump(dump, people, "nt", records=every)
    store = work / f"store-{people}"
    if not (store / "meta.json").exists():
        import_dump(dump, store, progress=False)
    first = work / f"records-first-{records}.jsonl"
    lines = every.read_text().splitlines(keepends=True)
    if len(lines) < records:
        raise SystemExit(f"{every} holds {len(lines)} records, fewer than {records}")
    first.write_text("".join(lines[:records]))
    return first, store, lm or "hf:" + str(build_llama(work / "lm", hidden=64, layers=2, heads=2, intermediate=128, vocab=2000))


def run(root: Path, window: int | None, records: Path, store: Path, lm: str, scratch: Path, threads: int) -> dict[str, Any]:
    out, cache = Path(tempfile.mkdtemp(dir=scratch)), Path(tempfile.mkdtemp(dir=scratch))
    code = CHILD.format(root=str(root), window=window, records=str(records), out=str(out / "ds.jsonl"), kg=f"wikidata-local:{store}", lm=lm)
    env = {**os.environ, "KALMA_CACHE_DIR": str(cache), "OMP_NUM_THREADS": str(threads)}
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=root)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"the build at {root} failed:\n{done.stderr[-3000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    built = found["written"] + found["failed"]
    return {
        **found,
        "entries_per_min": 60 * built / found["seconds"],
        "cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "load_before": load,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--windows", default="1,32,128,512", help="windows to run at this tree")
    ap.add_argument("--before", nargs="*", default=[], help="earlier commits, run as they built (one entry at a time)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=str(ROOT / "runs" / "scale"))
    ap.add_argument("--lm", help="the LM scorer's spec (default: a random Llama, hidden 64, 2 layers)")
    ap.add_argument("--threads", type=int, default=1, help="torch's threads in each build (OMP_NUM_THREADS)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    records, store, lm = prepare(work, args.records, args.lm)
    variants = [(c, None) for c in args.before] + [(".", int(w)) for w in args.windows.split(",")]
    names = [f"{c}" if w is None else f"window {w}" for c, w in variants]
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="kalma-builder-window-") as tmp, at_commits((c for c, _ in variants), Path(tmp)) as roots:
        for r in range(args.rounds):
            for name, (commit, window) in zip(names, variants):
                runs[name].append(run(roots[commit], window, records, store, lm, Path(tmp), args.threads))
                last = runs[name][-1]
                rate, took, load = last["entries_per_min"], last["seconds"], last["load_before"]
                print(f"round {r + 1}, {name}: {rate:.0f} entries/min, {took:.1f} s, load {load:.2f}", flush=True)
    rows: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}",
        "records": args.records,
        "LLM": "template",
        "LM scorer": f"{args.lm}, default dtype, CPU" if args.lm else "random Llama (hidden 64, 2 layers), fp32, CPU",
        "torch threads": args.threads,
        "KG": "local Wikidata store (wikidata-local:) of a generated dump",
    }
    base = statistics.median(x["entries_per_min"] for x in runs[names[0]])
    for name in names:
        rates = [x["entries_per_min"] for x in runs[name]]
        rows[f"{name}: entries/min, median (range)"] = f"{statistics.median(rates):.0f} ({min(rates):.0f}-{max(rates):.0f})"
        rows[f"{name}: rate / {names[0]}'s"] = round(statistics.median(rates) / base, 2)
        rows[f"{name}: runs"] = runs[name]
    report("builder_window", rows)


if __name__ == "__main__":
    main()
