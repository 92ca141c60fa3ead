"""The builder's coherence scoring with SmolLM2: padded rows (each candidate sentence with the
whole paragraph before it, the path before shared prefixes) against shared prefixes (the
paragraph run once, and remembered from one round to the next), on the bundled demo records,
each from an empty call cache, in one run.

Reports CPU-seconds (the process's, all threads) and wall seconds per entry, the ratio, and the
largest relative difference between the two builds' candidate perplexities (they must agree
within 1e-4).

    python -m perf.builder_bench [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from .common import report, scratch


def _build(shared: bool, out: Path) -> tuple[float, float, list[float], int]:
    """(CPU s, wall s, every candidate perplexity, entries) of one build from an empty cache."""
    from dataset_builder.build import BuildConfig, build
    from kalma import cache, models
    from kalma.jsonl import read_jsonl
    from kalma.models.hf import HFCausalScorer
    from kalma.models.smollm2 import SPEC, converted_dir
    from kalma.schema import DatasetEntry

    cache.set_cache(cache.Cache(Path(scratch()) / "cache.sqlite"))
    scorer = HFCausalScorer(str(converted_dir()), spec=SPEC, shared_prefix=shared)
    scorer.perplexity(["The model is loaded before the clock starts."])  # load time is not per-entry cost
    models._instances[(models.SCORERS.group, SPEC)] = scorer  # the build's `smollm2` is this path
    records = Path(__file__).resolve().parents[1] / "dataset_builder" / "data" / "demo_records.jsonl"
    cpu, wall = time.process_time(), time.perf_counter()
    build(records, out, BuildConfig(llm="template", lm=SPEC), progress=False)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    entries = list(read_jsonl(out, DatasetEntry, kind="dataset"))
    ppl = [c.perplexity for e in entries for r in e.trace for c in r.candidates if c.perplexity is not None]
    return cpu, wall, ppl, len(entries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2, help="builds per path, alternating; the fastest of each counts")
    args = ap.parse_args()
    os.environ.setdefault("KALMA_CACHE_DIR", scratch())
    tmp = Path(scratch())
    runs: dict[bool, list[tuple[float, float, list[float], int]]] = {False: [], True: []}
    for i in range(args.repeats):
        for shared in (False, True):
            runs[shared].append(_build(shared, tmp / f"{'shared' if shared else 'padded'}-{i}.jsonl"))
    old, new = (min(runs[s], key=lambda r: r[0]) for s in (False, True))
    n = old[3]
    worst = max(abs(a - b) / a for a, b in zip(old[2], new[2]))
    report(
        "builder_bench",
        {
            "entries": n,
            "candidates scored": len(old[2]),
            "scorer": "smollm2 (SmolLM2-135M-Instruct, fp32, CPU)",
            "padded: CPU s per entry": old[0] / n,
            "padded: wall s per entry": old[1] / n,
            "shared prefix: CPU s per entry": new[0] / n,
            "shared prefix: wall s per entry": new[1] / n,
            "CPU-seconds ratio (padded / shared)": old[0] / new[0],
            "wall ratio (padded / shared)": old[1] / new[1],
            "largest relative perplexity difference": worst,
            "perplexities equal within 1e-4": worst <= 1e-4 and len(old[2]) == len(new[2]),
        },
    )


if __name__ == "__main__":
    main()
