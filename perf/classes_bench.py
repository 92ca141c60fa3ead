"""The builder's throughput on organizations and cities against people, in one run, on the same
machine, the same store and the same scorer: entries per minute of `kalma build`.

One dump `perf.dumpgen` writes holds both (people, then organizations and cities; kept under
`--work`, default runs/classes, which git ignores). The people's records are the dump's kinship
and teaching links; the organizations' and cities' are drawn from the store by `kalma records
from-kg` (headquarters and twin towns). Each build runs in a fresh process from an empty call
cache, the two alternating for `--rounds` rounds; the LLM is the template backend, the scorer
`kalma build`'s default (SmolLM2) unless `--lm` names another.

    python -m perf.classes_bench --records 100 --rounds 1

Figures go to perf/results/classes_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import ROOT, report

CHILD = """
import json, time
from dataset_builder.build import BuildConfig, build
t0 = time.perf_counter()
rep = build({records!r}, {out!r}, BuildConfig(kg={kg!r}, llm="template", lm={lm!r}), progress=False, overwrite=True)
e = rep["entries"]
print(json.dumps({{"seconds": time.perf_counter() - t0, "written": e["written"], "failed": sum(e["failed"].values()),
                  "resolved": rep["records"]["built from"], "evolution_s": rep["seconds"]["evolution"]}}))
"""


def prepare(work: Path, records: int) -> tuple[Path, Path, Path]:
    """(people's records, organizations' and cities' records, the store), made once under `work`."""
    from dataset_builder.from_kg import records_from_kg
    from kalma.kg import open_source
    from kalma.kg.store import import_dump
    from kalma.models import get_llm

    from .dumpgen import write_dump

    dump, every, store = work / "truthy.nt.gz", work / "people-records.jsonl", work / "store"
    if not (store / "meta.json").exists():
        write_dump(dump, max(500, 2 * records), "nt", records=every, with_release=False, organizations=2000, cities=2000)
        import_dump(dump, store, progress=False)
    people = work / f"people-{records}.jsonl"
    lines = [line for line in every.read_text().splitlines(keepends=True) if not json.loads(line)["relation"].startswith("P")]
    people.write_text("".join(lines[:records]))
    orgs = work / f"organizations-{records}.jsonl"
    drawn = records_from_kg(open_source(f"wikidata-local:{store}"), ["Q43229", "Q515"], ["P159", "P190"], records, 0, get_llm("template"))
    orgs.write_text("".join(r.model_dump_json() + "\n" for r in drawn))
    return people, orgs, store


def run(records: Path, store: Path, lm: str, scratch: Path) -> dict[str, Any]:
    out, cache = Path(tempfile.mkdtemp(dir=scratch)), Path(tempfile.mkdtemp(dir=scratch))
    code = CHILD.format(records=str(records), out=str(out / "ds.jsonl"), kg=f"wikidata-local:{store}", lm=lm)
    load = os.getloadavg()[0]
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "KALMA_CACHE_DIR": str(cache)}, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"the build of {records.name} failed:\n{done.stderr[-3000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {**found, "entries_per_min": 60 * (found["written"] + found["failed"]) / found["seconds"], "load_before": load}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100, help="records of each kind (default 100)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--lm", default="smollm2", help="the LM scorer's spec (default: smollm2, kalma build's own)")
    ap.add_argument("--work", default=str(ROOT / "runs" / "classes"))
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    people, orgs, store = prepare(work, args.records)
    kinds = {"people": people, "organizations and cities": orgs}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="kalma-classes-bench-") as tmp:
        for r in range(args.rounds):
            for kind, records in kinds.items():
                runs[kind].append(run(records, store, args.lm, Path(tmp)))
                last = runs[kind][-1]
                print(f"round {r + 1}, {kind}: {last['entries_per_min']:.0f} entries/min, {last['seconds']:.1f} s, load {last['load_before']:.2f}", flush=True)
    rows: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}",
        "records of each kind": args.records,
        "LLM": "template",
        "LM scorer": args.lm,
        "KG": "local Wikidata store (wikidata-local:) of one generated dump",
    }
    for kind, done in runs.items():
        rates = [x["entries_per_min"] for x in done]
        rows[f"{kind}: entries/min, median (range)"] = f"{statistics.median(rates):.0f} ({min(rates):.0f}-{max(rates):.0f})"
        rows[f"{kind}: runs"] = done
    people = statistics.median(x["entries_per_min"] for x in runs["people"])
    rows["organizations and cities / people"] = round(statistics.median(x["entries_per_min"] for x in runs["organizations and cities"]) / people, 2)
    report("classes_bench", rows)


if __name__ == "__main__":
    main()
