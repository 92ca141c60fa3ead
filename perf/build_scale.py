"""The builder at the release's scale: relation records derived from the authors' release (pairs
of people one entry's graphs link by a family or teaching relation, each with a one-line
paragraph), built against the imported release served by the Oxigraph SPARQL server, with the
template LLM and a small random-weight Llama as the LM scorer. Each size runs in a fresh
process (so its peak memory is its own) from an empty call cache. Time and memory should grow
linearly from 100 to 1,000 records: the seconds per further entry and the memory per further
record (between one size and the next) stay flat.

Nothing derived from the release is written into the repository: records, snapshot and
datasets live in a temporary folder.

    python -m perf.build_scale [--sizes 100,300,1000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import report, require_biokalma

RELATIONS = ("father", "mother", "spouse", "child", "sibling", "relative", "student of", "doctoral advisor", "doctoral student", "student")


def derive_records(release: Path, out: Path) -> int:
    """One record per (person, relation, person) the release's graphs state, with a one-line paragraph."""
    seen: set[tuple[str, str, str]] = set()
    lines = []
    for _, graphs in json.loads(release.read_text()):
        for g in graphs:
            for rel in RELATIONS:
                other = g.get(rel)
                if isinstance(other, str) and other and (g["name"], rel, other) not in seen:
                    seen.add((g["name"], rel, other))
                    lines.append(json.dumps({"paragraph": f"{g['name']}'s {rel} was {other}.", "person_a": g["name"], "relation": rel, "person_b": other}))
    out.write_text("\n".join(lines) + "\n")
    return len(lines)


def child(records: Path, size: int, url: str, lm: str, out: Path) -> None:
    """One build of the first `size` records, in this process; prints its figures as JSON."""
    from dataset_builder.build import BuildConfig, build

    part = out.with_suffix(".records.jsonl")
    part.write_text("".join(records.read_text().splitlines(keepends=True)[:size]))
    t0 = time.perf_counter()
    rep = build(part, out, BuildConfig(kg=f"sparql:{url}", llm="template", lm=lm), progress=False)
    seconds = time.perf_counter() - t0
    entries = rep["entries"]
    print(
        json.dumps(
            {
                "records": size,
                "written": entries["written"],  # type: ignore[index]
                "failed": sum(entries["failed"].values()),  # type: ignore[index]
                "seconds": seconds,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "removed": rep["records"]["removed"],  # type: ignore[index]
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100,300,1000")
    ap.add_argument("--child", nargs=4, metavar=("RECORDS", "SIZE", "URL", "LM"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        records, size, url, lm = args.child
        child(Path(records), int(size), url, lm, Path(args.out))
        return
    from kalma.kg.serve import serve_snapshot
    from kalma.kg.snapshot import import_biokalma

    from .random_models import build_llama

    data = require_biokalma()
    rows: dict[str, object] = {"LLM": "template", "LM scorer": "random Llama (hidden 64, 2 layers)", "KG": "imported release on the Oxigraph server"}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows["records derived"] = derive_records(data / "complex_question_graph.json", work / "records.jsonl")
        import_biokalma(data / "complex_question_graph.json", work / "biokalma.nt")
        lm = "hf:" + str(build_llama(work / "lm", hidden=64, layers=2, heads=2, intermediate=128, vocab=2000))
        previous: dict[str, float] | None = None
        with serve_snapshot(work / "biokalma.nt", work) as url:
            for size in (int(s) for s in args.sizes.split(",")):
                env_cache = work / f"cache-{size}"
                cmd = [
                    sys.executable,
                    "-m",
                    "perf.build_scale",
                    "--child",
                    str(work / "records.jsonl"),
                    str(size),
                    url,
                    lm,
                    "--out",
                    str(work / f"ds-{size}.jsonl"),
                ]
                done = subprocess.run(cmd, capture_output=True, text=True, env={**_env(), "KALMA_CACHE_DIR": str(env_cache)}, check=True)
                r = json.loads(done.stdout.strip().splitlines()[-1])
                built = r["written"] + r["failed"]
                rows[f"{size} records: entries written / failed"] = f"{r['written']} / {r['failed']}"
                rows[f"{size} records: seconds"] = r["seconds"]
                rows[f"{size} records: entries per minute"] = 60 * built / r["seconds"] if r["seconds"] else 0.0
                rows[f"{size} records: peak memory (MB)"] = r["peak_rss_mb"]
                rows[f"{size} records: not built from, by reason"] = ", ".join(f"{k} {v}" for k, v in sorted(r["removed"].items(), key=lambda kv: -kv[1]))
                if previous is not None and built > previous["built"]:  # what each further entry costs, start-up aside
                    rows[f"{size} records: seconds per further entry"] = (r["seconds"] - previous["seconds"]) / (built - previous["built"])
                    rows[f"{size} records: MB per further record"] = (r["peak_rss_mb"] - previous["rss"]) / (size - previous["size"])
                previous = {"built": built, "seconds": r["seconds"], "rss": r["peak_rss_mb"], "size": size}
    report("build_scale", rows)


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "KALMA_CACHE_DIR"}


if __name__ == "__main__":
    main()
