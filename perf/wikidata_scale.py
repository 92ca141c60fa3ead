"""A local Wikidata at scale: decompression alone against the import of the same file, a 100 M
line truthy dump imported, and the builder at 10,000 and 100,000 records against the store
beside the same build on the Oxigraph server.

Every step runs in a fresh process, so its peak memory (its own, and its worker processes')
and CPU time are its own. Dumps come from `perf.dumpgen` (the release's people first when
../shared is present, then invented ones) and are kept under `--work` (default runs/scale,
which git ignores), so a second run skips making them.

    python -m perf.wikidata_scale --steps parsers        # CPU-s per GB: decoding, the pattern parser, the columnar one
    python -m perf.wikidata_scale --steps stages --commits 07ee337 .   # CPU-s per GB of each stage, at each commit
    python -m perf.wikidata_scale --steps json           # the JSON dump: orjson per line against columnar JSON readers
    python -m perf.wikidata_scale --steps decode         # small dump, four compressions
    python -m perf.wikidata_scale --steps import,build   # the 100 M line dump; 10k and 100k records

Figures go to perf/results/wikidata_scale.json (one key per step, kept across runs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .common import AT_COMMIT, RESULTS, ROOT, at_commits

LINES_PER_PERSON = 55.4  # measured on dumpgen's people (the vocabulary adds 0.1 M lines)


def _usage() -> dict[str, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "cpu_s_main": me.ru_utime + me.ru_stime,
        "cpu_s_workers": kids.ru_utime + kids.ru_stime,
        "peak_rss_mb_main": me.ru_maxrss / 1024,
        "peak_rss_mb_worker": kids.ru_maxrss / 1024,
    }


# ---------------------------------------------------------------- the steps, each in a child


def child_decode(dump: str) -> dict[str, Any]:
    from kalma.kg.dumps import blocks, decoder_name, dump_format, open_dump

    t0, size = time.perf_counter(), 0
    with open_dump(dump) as stream:
        for _, block in blocks(stream):
            size += len(block)
    return {"seconds": time.perf_counter() - t0, "decompressed_bytes": size, "decoder": decoder_name(dump_format(dump)[1]), **_usage()}


def child_import(dump: str, folder: str, classes: str) -> dict[str, Any]:
    import shutil

    from kalma.kg.dumps import Filter
    from kalma.kg.store import import_dump

    store = Path(folder)
    shutil.rmtree(store, ignore_errors=True)
    t0 = time.perf_counter()
    meta = import_dump(dump, store, keep=Filter(frozenset(c for c in classes.split(",") if c)), progress=False)
    seconds = time.perf_counter() - t0
    disk = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    return {"seconds": seconds, "parse_seconds": meta["read"]["seconds"], "meta": meta, "store_bytes": disk, **_usage()}


def child_build(records: str, size: str, kg: str, lm: str, dataset: str, limit: str = "all") -> dict[str, Any]:
    """A build of the first `size` records; `limit` entries evolved at most (`all`, or a number:
    0 measures the knowledge-graph part alone)."""
    from dataset_builder.build import BuildConfig, build

    out, n = Path(dataset), int(size)
    part = out.parent / f"records-first-{n}.jsonl"  # one name for every build of this size: entry ids name it
    with open(records) as src, part.open("w") as dst:
        for i, line in enumerate(src):
            if i == n:
                break
            dst.write(line)
    t0 = time.perf_counter()
    stop = None if limit == "all" else int(limit)
    rep = build(part, out, BuildConfig(kg=kg, llm="template", lm=lm), progress=False, overwrite=True, stop_after=stop)
    seconds = time.perf_counter() - t0
    entries: Any = rep["entries"]
    built = entries["written"] + sum(entries["failed"].values())
    times: Any = rep["seconds"]
    return {
        "records": n,
        "resolved": rep["records"]["built from"],  # type: ignore[index]
        "evolution_s": times["evolution"],
        "seconds_per_entry": times["evolution"] / built if built else None,
        "written": entries["written"],
        "failed": sum(entries["failed"].values()),
        "seconds": seconds,
        "entries_per_minute": 60 * built / seconds if built else None,
        "kg_seconds": rep["seconds"]["knowledge graph"],  # type: ignore[index]
        "removed": rep["records"]["removed"],  # type: ignore[index]
        **_usage(),
    }


def child_snapshot(store: str, records: str, size: str, out: str) -> dict[str, Any]:
    from kalma.kg.snapshot import write_snapshot
    from kalma.kg.store import LocalWikidata

    src = LocalWikidata(store)
    names = set()
    with open(records) as fh:
        for i, line in enumerate(fh):
            if i == int(size):
                break
            r = json.loads(line)
            names |= {r["person_a"], r["person_b"]}
    t0 = time.perf_counter()
    qids = sorted({q for hits in src.lookup(sorted(names), ["Q5"]).values() for q in hits})
    triples = write_snapshot(src, qids, out)
    return {"seconds": time.perf_counter() - t0, "entities": len(qids), "triples": triples, **_usage()}


def _run(step: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`step` in a fresh process; its figures."""
    cmd = [sys.executable, "-m", "perf.wikidata_scale", "--child", step, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **(env or {})})
    if done.returncode:
        raise SystemExit(f"{step} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the runs


def make_dump(path: Path, people: int, records: Path | None = None) -> None:
    if path.exists() and (records is None or records.exists()):
        return
    from .dumpgen import write_dump

    t0 = time.perf_counter()
    counts = write_dump(path, people, "nt", records=records)
    print(f"made {path.name}: {counts} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def step_decode(work: Path, people: int) -> dict[str, Any]:
    """Decompression alone against the import, per compression of one dump, same decoder."""
    out: dict[str, Any] = {"people": people}
    for suffix in ("nt", "nt.gz", "nt.bz2", "nt.zst"):
        dump = work / f"decode-{people}.{suffix}"
        make_dump(dump, people)
        alone = _run("decode", str(dump))
        imported = _run("import", str(dump), str(work / "decode-store"), "")
        meta = imported["meta"]
        mb = meta["read"]["decompressed_bytes"] / 1e6
        out[suffix] = {
            "decoder": alone["decoder"],
            "file_mb": dump.stat().st_size / 1e6,
            "decompressed_mb": mb,
            "decode_alone_mb_s": mb / alone["seconds"],
            "import_mb_s": mb / meta["read"]["seconds"],
            "import_vs_decode": alone["seconds"] / meta["read"]["seconds"],
            "lines_per_s": meta["read"]["lines"] / meta["read"]["seconds"],
            "finalize_s": imported["seconds"] - meta["read"]["seconds"],
            "cpu_s_per_gb_decode": (alone["cpu_s_main"]) / (mb / 1e3),
            "cpu_s_per_gb_import_main": imported["cpu_s_main"] / (mb / 1e3),
            "cpu_s_per_gb_import_workers": imported["cpu_s_workers"] / (mb / 1e3),
            "peak_rss_mb_main": imported["peak_rss_mb_main"],
            "peak_rss_mb_worker": imported["peak_rss_mb_worker"],
        }
        print(json.dumps({suffix: out[suffix]}), file=sys.stderr)
    return out


def step_parsers(work: Path, people: int, rounds: int = 3) -> dict[str, Any]:
    """CPU-seconds per GB of decompressed input: igzip alone, then the whole import with the
    pattern parser (worker processes) and with the columnar one (threads), on one .gz dump,
    alternating, each in a fresh process; the streaming pass and the final step apart."""
    import statistics

    dump = work / f"parsers-{people}.nt.gz"
    make_dump(dump, people)
    load = os.getloadavg()[0]  # of the minute before: the machine's own load, not this step's
    runs: dict[str, list[dict[str, float]]] = {"decode": [], "pattern": [], "columnar": []}
    for _ in range(rounds):
        alone = _run("decode", str(dump))
        gb = alone["decompressed_bytes"] / 1e9
        runs["decode"].append({"cpu_s_per_gb": alone["cpu_s_main"] / gb, "mb_s": gb * 1e3 / alone["seconds"]})
        for name, flag in (("pattern", "0"), ("columnar", "1")):
            done = _run("import", str(dump), str(work / "parsers-store"), "", env={"KALMA_COLUMNAR": flag})
            read = done["meta"]["read"]
            total = done["cpu_s_main"] + done["cpu_s_workers"]
            streaming = read.get("cpu_s_main", 0.0) + read.get("cpu_s_workers", 0.0)
            runs[name].append(
                {
                    "cpu_s_per_gb": total / gb,
                    "cpu_s_per_gb_streaming": streaming / gb,
                    "cpu_s_per_gb_final_step": (total - streaming) / gb,
                    "mb_s": gb * 1e3 / done["seconds"],
                    "mb_s_streaming": gb * 1e3 / read["seconds"],
                }
            )
    out: dict[str, Any] = {"dump": dump.name, "decompressed_gb": round(gb, 3), "rounds": rounds, "load_average_at_start": load}
    for name, rows in runs.items():
        for key in rows[0]:
            values = [r[key] for r in rows]
            out[f"{name}: {key}"] = f"{statistics.median(values):.2f} ({min(values):.2f} to {max(values):.2f})"
    ratio = [p["cpu_s_per_gb_streaming"] / c["cpu_s_per_gb_streaming"] for p, c in zip(runs["pattern"], runs["columnar"])]
    out["streaming pass: pattern / columnar CPU"] = f"{statistics.median(ratio):.2f} ({min(ratio):.2f} to {max(ratio):.2f})"
    out["load_average_at_end"] = os.getloadavg()[0]
    return out


# A stage of the N-Triples import alone, in a fresh process, with the code of a commit's worktree
# (the editable install's finder taken out of the import path). The stages run cumulatively, so
# each one's cost is the difference from the one before: decoding and cutting into blocks;
# splitting a block's lines into a polars column, as the commit's parser does; parsing the block (one thread); the streaming
# pass as the import runs it (parser threads, Arrow parts written); the whole import.
STAGE = (
    AT_COMMIT
    + """
import json, os, resource, time
stage, dump, store = {stage!r}, {dump!r}, {store!r}
from kalma.kg.dumps import Filter, blocks, open_dump
def cpu():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
t0, size, out = time.perf_counter(), 0, {{}}
if stage == "import":
    import shutil
    from kalma.kg.store import import_dump
    shutil.rmtree(store, ignore_errors=True)
    meta = import_dump(dump, store, progress=False)
    size, reading = meta["read"]["decompressed_bytes"], json.loads(json.dumps(meta["read"]))
    out = {{"streaming_cpu": reading.get("cpu_s_main", 0) + reading.get("cpu_s_workers", 0), "streaming_wall": reading["seconds"],
           "main_thread": reading.get("cpu_s_main_thread")}}
else:
    import inspect
    import polars as pl
    from kalma.kg import columnar
    from kalma.kg.columnar import parse_block
    named = [dump] if "name" in inspect.signature(parse_block).parameters else []  # a commit before issue 54 takes the dump's name
    with open_dump(dump) as stream:
        for _, block in blocks(stream):
            size += len(block)
            if stage == "split" and hasattr(columnar, "_lines"):  # as the commit's parser splits
                columnar._lines(block, 1)
            elif stage == "split":
                pl.Series("line", [block.decode("utf-8", "replace")]).str.split("\\n").explode()
            elif stage == "parse":
                parse_block(block, 1, ("en",), Filter(), *named)
print(json.dumps({{"cpu": cpu(), "wall": time.perf_counter() - t0, "bytes": size, **out}}))
"""
)


def step_stages(work: Path, people: int, commits: list[str], rounds: int = 3) -> dict[str, Any]:
    """CPU-seconds per GB of decompressed input, stage by stage, at each commit, on one .gz dump;
    rounds alternate commits and stages, each a fresh process; the load average before each."""
    import statistics
    import tempfile

    dump = work / f"parsers-{people}.nt.gz"
    make_dump(dump, people)
    stages = ("decode", "split", "parse", "import")
    runs: dict[str, dict[str, list[dict[str, float]]]] = {c: {s: [] for s in stages} for c in commits}
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kalma-stages-") as tmp, at_commits(commits, Path(tmp)) as roots:
        for _ in range(rounds):
            for c in commits:
                for stage in stages:
                    loads.append(os.getloadavg()[0])
                    code = STAGE.format(root=str(roots[c]), stage=stage, dump=str(dump), store=str(work / "stages-store"))
                    env = {**os.environ, **({"POLARS_MAX_THREADS": "1"} if stage != "import" else {})}
                    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=roots[c])
                    if done.returncode:
                        raise SystemExit(f"stage {stage} at {c} failed:\n{done.stderr[-3000:]}")
                    runs[c][stage].append(json.loads(done.stdout.strip().splitlines()[-1]))
    gb = runs[commits[0]]["decode"][0]["bytes"] / 1e9
    out: dict[str, Any] = {"dump": dump.name, "decompressed_gb": round(gb, 3), "rounds": rounds}
    out["load average before each run (min, max)"] = [min(loads), max(loads)]

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} ({min(values):.2f} to {max(values):.2f})"

    for c in commits:
        r = runs[c]
        per = {s: [x["cpu"] / gb for x in r[s]] for s in stages}
        streaming = [x["streaming_cpu"] / gb for x in r["import"]]
        rows = {
            "decode and cut": per["decode"],
            "split lines (polars)": [b - a for a, b in zip(per["decode"], per["split"])],
            "parse a block, one thread (after splitting)": [b - a for a, b in zip(per["split"], per["parse"])],
            "threads, main process, Arrow parts (streaming less parse)": [b - a for a, b in zip(per["parse"], streaming)],
            "streaming pass": streaming,
            "final step (DuckDB)": [t - s for t, s in zip(per["import"], streaming)],
            "whole import": per["import"],
        }
        if all(x.get("main_thread") is not None for x in r["import"]):  # the serial part: what bounds many cores
            rows["of it, the import's main thread alone"] = [x["main_thread"] / gb for x in r["import"]]
        for name, values in rows.items():
            out[f"{c}: {name}, CPU-s/GB"] = cell(values)
        out[f"{c}: decode alone, MB/s"] = cell([gb * 1e3 / x["wall"] for x in r["decode"]])
        out[f"{c}: streaming pass, MB/s"] = cell([gb * 1e3 / x["streaming_wall"] for x in r["import"]])
        out[f"{c}: whole import, MB/s"] = cell([gb * 1e3 / x["wall"] for x in r["import"]])
    return out


def step_json(work: Path, people: int = 10_000) -> dict[str, Any]:
    """CPU-seconds per GB of a JSON dump's blocks (one thread, best of three): orjson per line,
    the import's parser (orjson and the rows), and columnar JSON readers on the same entities as
    JSON Lines. A columnar reader infers one schema for every entity, whose claims and labels are
    maps keyed by property and language: a struct of every key seen."""
    import io

    os.environ["POLARS_MAX_THREADS"] = "1"
    import orjson
    import polars as pl
    import pyarrow.json as pj

    from kalma.kg.dumps import JsonEntities, Malformed, Rows, blocks, open_dump

    from .dumpgen import write_dump

    dump = work / f"json-{people}.json.gz"
    if not dump.exists():
        write_dump(dump, people, "json")
    with open_dump(str(dump)) as stream:
        raw = [bytes(block) for _, block in blocks(stream, cut=JsonEntities.cut)]
    gb = sum(map(len, raw)) / 1e9
    lines = [b"\n".join(x.rstrip(b",") for x in b.split(b"\n") if x.strip() not in (b"[", b"]", b"")) for b in raw]

    def orjson_lines(block: bytes) -> None:
        for line in block.split(b"\n"):
            if line:
                orjson.loads(line)

    def best(fn: Any, data: list[bytes]) -> str:
        spent = []
        for _ in range(3):
            start = time.process_time()
            for block in data:
                fn(block)
            spent.append((time.process_time() - start) / gb)
        return f"{min(spent):.2f}"

    out: dict[str, Any] = {"dump": dump.name, "decompressed_mb": round(gb * 1e3), "load_average_at_start": os.getloadavg()[0]}
    out["orjson per line, parse only"] = best(orjson_lines, lines)
    out["the import's parser (orjson, then the rows)"] = best(lambda b: JsonEntities().parse(b, Rows(), Malformed()), raw)
    out["pyarrow.json.read_json, parse only"] = best(lambda b: pj.read_json(io.BytesIO(b)), lines)
    out["polars.read_ndjson, parse only"] = best(lambda b: pl.read_ndjson(io.BytesIO(b), infer_schema_length=None), lines)
    return out


def step_import(work: Path, lines: int) -> dict[str, Any]:
    people = int(lines / LINES_PER_PERSON)
    dump = work / f"truthy-{people}.nt.gz"
    make_dump(dump, people, work / f"records-{people}.jsonl")
    alone = _run("decode", str(dump))
    r = _run("import", str(dump), str(work / "store"), "")
    meta = r["meta"]
    mb = meta["read"]["decompressed_bytes"] / 1e6
    return {
        "decoder": alone["decoder"],
        "decode_alone_s": alone["seconds"],
        "decode_alone_cpu_s": alone["cpu_s_main"],
        "dump": dump.name,
        "file_mb": dump.stat().st_size / 1e6,
        "decompressed_mb": mb,
        "lines": meta["read"]["lines"],
        "rows": meta["rows"],
        "malformed": meta["malformed"]["lines"],
        "seconds_total": r["seconds"],
        "seconds_reading": meta["read"]["seconds"],
        "seconds_finalize": r["seconds"] - meta["read"]["seconds"],
        "mb_s": mb / meta["read"]["seconds"],
        "lines_per_s": meta["read"]["lines"] / meta["read"]["seconds"],
        "store_mb": r["store_bytes"] / 1e6,
        "peak_rss_mb_reading": meta["read"].get("peak_rss_mb"),
        "cpu_s_main_reading": meta["read"].get("cpu_s_main"),
        "cpu_s_workers_reading": meta["read"].get("cpu_s_workers"),
        "peak_rss_mb_main": r["peak_rss_mb_main"],
        "peak_rss_mb_worker": r["peak_rss_mb_worker"],
        "cpu_s_main": r["cpu_s_main"],
        "cpu_s_workers": r["cpu_s_workers"],
        "people": people,
    }


def step_build(work: Path, lines: int, sizes: list[int], oxigraph_up_to: int, evolve_up_to: int, sample: int, done: dict[str, Any]) -> dict[str, Any]:
    """Each size against the store; sizes up to `oxigraph_up_to` on the Oxigraph server too; past
    `evolve_up_to` records, the knowledge-graph part whole and the first `sample` entries evolved."""
    from kalma.kg.serve import serve_snapshot

    from .random_models import build_llama

    people = int(lines / LINES_PER_PERSON)
    records, store = work / f"records-{people}.jsonl", work / "store"
    lm = "hf:" + str(build_llama(work / "lm", hidden=64, layers=2, heads=2, intermediate=128, vocab=2000))
    out: dict[str, Any] = {"LLM": "template", "LM scorer": "random Llama (hidden 64, 2 layers), fp32, CPU, one thread", "store": str(store)}
    for size in sizes:
        if f"store {size}" in done:  # --resume: kept from an earlier run of this step
            out.update({k: v for k, v in done.items() if k.endswith(f" {size}")})
            if f"oxigraph {size}" in done or size > oxigraph_up_to:
                continue
        # one torch thread: as fast for a model this small (measured), and the server keeps a core
        env = {"KALMA_CACHE_DIR": str(work / f"cache-store-{size}"), "OMP_NUM_THREADS": "1"}
        limit = "all" if size <= evolve_up_to else str(sample)
        out[f"store {size}"] = out.get(f"store {size}") or _run(
            "build", str(records), str(size), f"wikidata-local:{store}", lm, str(work / f"ds-store-{size}.jsonl"), limit, env=env
        )
        print(json.dumps({f"store {size}": out[f"store {size}"]}), file=sys.stderr)
        if size <= oxigraph_up_to:
            snap = work / f"snapshot-{size}.nt"
            out[f"snapshot {size}"] = _run("snapshot", str(store), str(records), str(size), str(snap))
            with serve_snapshot(snap, work / f"oxigraph-{size}") as url:
                env = {"KALMA_CACHE_DIR": str(work / f"cache-oxigraph-{size}"), "OMP_NUM_THREADS": "1"}
                out[f"oxigraph {size}"] = _run("build", str(records), str(size), f"sparql:{url}", lm, str(work / f"ds-oxigraph-{size}.jsonl"), env=env)
            same = _entries(work / f"ds-store-{size}.jsonl") == _entries(work / f"ds-oxigraph-{size}.jsonl")
            out[f"oxigraph {size}"]["entries equal the store's"] = same
            print(json.dumps({f"oxigraph {size}": out[f"oxigraph {size}"]}), file=sys.stderr)
    return out


def _entries(path: Path) -> list[str]:
    return path.read_text().splitlines()[1:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", default="decode,import,build")
    ap.add_argument("--work", default=str(ROOT / "runs" / "scale"))
    ap.add_argument("--decode-people", type=int, default=40_000, help="people in the dump of the decode step")
    ap.add_argument("--lines", type=int, default=100_000_000, help="lines (triples) of the import step's dump")
    ap.add_argument("--sizes", default="10000,100000", help="records built from")
    ap.add_argument("--oxigraph-up-to", type=int, default=10_000, help="the Oxigraph server path for sizes up to this")
    ap.add_argument("--evolve-up-to", type=int, default=10_000, help="build whole up to this many records; past it, the KG part and a sample")
    ap.add_argument("--sample", type=int, default=1_000, help="entries evolved past --evolve-up-to")
    ap.add_argument("--resume", action="store_true", help="keep the builds an earlier run of the build step finished")
    ap.add_argument("--commits", nargs="+", default=["."], help="the stages step: commits to compare ('.' is the working tree)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        step, *rest = args.child
        fn: Any = {"decode": child_decode, "import": child_import, "build": child_build, "snapshot": child_snapshot}[step]
        print(json.dumps(fn(*rest), default=str))
        return
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "wikidata_scale.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    machine = {"cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
    for step in args.steps.split(","):
        if step == "decode":
            results["decode"] = {**machine, **step_decode(work, args.decode_people)}
        elif step == "parsers":
            results["parsers"] = {**machine, **step_parsers(work, args.decode_people)}
        elif step == "json":
            results["json"] = {**machine, **step_json(work)}
        elif step == "stages":
            results["stages"] = {**machine, **step_stages(work, args.decode_people, args.commits)}
        elif step == "import":
            results["import"] = {**machine, **step_import(work, args.lines)}
        elif step == "build":
            results["build"] = {
                **machine,
                **step_build(
                    work,
                    args.lines,
                    [int(s) for s in args.sizes.split(",")],
                    args.oxigraph_up_to,
                    args.evolve_up_to,
                    args.sample,
                    results.get("build", {}) if args.resume else {},
                ),
            }
        RESULTS.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1, default=str))
        print(json.dumps(results[step], indent=1, default=str))


if __name__ == "__main__":
    main()
