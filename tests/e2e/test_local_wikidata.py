"""A local Wikidata end to end: a generated truthy dump imported by `kalma kg import`, a snapshot
cut from the store by `kalma kg snapshot`, served by the Oxigraph server, and the same records
built against both: the datasets are equal entry for entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_builder.build import BuildConfig, beside, build
from kalma.cli import main
from kalma.jsonl import read_jsonl
from kalma.kg import open_source
from kalma.schema import DatasetEntry, RemovedRecord
from perf.dumpgen import write_dump
from perf.random_models import build_causal
from tests.servers import serve_snapshot

pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 invented people (namesakes among them) in a truthy dump, its records, and its store."""
    work = tmp_path_factory.mktemp("local-wikidata")
    counts = write_dump(work / "wikidata-20261118-truthy.nt.gz", 60, "nt", seed=1, records=work / "all-records.jsonl", with_release=False, named_only=True)
    assert counts["records"] > 20
    kept = (work / "all-records.jsonl").read_text().splitlines()[::4]  # a quarter, spread over the people: each build is made twice
    (work / "records.jsonl").write_text("".join(line + "\n" for line in kept))
    with (work / "records.jsonl").open("a") as fh:  # two that must be removed, alike from both sources
        first, last = json.loads(kept[0]), json.loads(kept[-1])
        for a, b in ((first["person_a"], last["person_a"]), (first["person_a"], "Nobody Atall")):
            fh.write(json.dumps({"paragraph": f"{a} married {b}.", "person_a": a, "relation": "spouse", "person_b": b}) + "\n")
    res = CliRunner().invoke(main, ["kg", "import", str(work / "wikidata-20261118-truthy.nt.gz"), "-o", str(work / "store"), "--threads", "2"])
    assert res.exit_code == 0, res.output
    assert "0 malformed lines" in res.output and "MB/s decompressed" in res.output
    return work


def _published(folder: Path, built: Path) -> None:
    """The folder loads with `datasets`, and every field of every entry equals the built file's."""
    import datasets
    import yaml

    entries = {e.id: e for e in read_jsonl(built, DatasetEntry, kind="dataset")}
    cache = str(folder.parent / "hf-cache")  # its own: datasets' shared cache can answer for an earlier folder of the same name
    rows = datasets.load_dataset(str(folder), split="test", cache_dir=cache)
    assert len(rows) == len(entries) and set(rows.column_names) == set(DatasetEntry.model_fields)
    for row in rows:
        want = entries[row["id"]].model_dump(mode="json")
        for g in want["knowledge_pool"]["entities"]:
            g["property_aliases"] = [{"key": p, "value": a} for p, a in g["property_aliases"].items()]
        assert {**row, "meta": json.loads(row["meta"])} == want, row["id"]
    removed = datasets.load_dataset(str(folder), "removed", split="records", cache_dir=cache)
    assert [r["reason"] for r in removed] == [r.reason for r in read_jsonl(beside(built, "removed"), RemovedRecord, kind="removed_records")]
    text = (folder / "README.md").read_text()
    meta = yaml.safe_load(text.split("---")[1])
    assert meta["license"] == "cc-by-sa-4.0" and meta["size_categories"] == ["n<1K"] and "question-answering" in meta["task_categories"]
    assert meta["dataset_info"][0]["splits"][0]["num_examples"] == len(entries)
    for fact in ("wikidata-20261118-truthy.nt.gz", "2026-11-18", "`template`", "| seed | 0 ", "- unlinked: 1", "- not found: 1", "BioKaLMA (paper §2.3)"):
        assert fact in text, fact


def _entries(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_the_store_knows_the_dump(world: Path) -> None:
    meta = json.loads((world / "store" / "meta.json").read_text())
    assert meta["dump"]["date"] == "2026-11-18" and meta["dump"]["compression"] == "gz" and meta["malformed"]["lines"] == 0
    src = open_source(f"wikidata-local:{world / 'store'}")
    first = json.loads((world / "records.jsonl").read_text().splitlines()[0])
    hits = src.lookup([first["person_a"]], ["Q5"])[first["person_a"]]
    assert hits and all(src.subgraph(q) is not None for q in hits)


def test_a_build_from_the_store_equals_one_from_its_snapshot_on_oxigraph(world: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in (world / "records.jsonl").read_text().splitlines()]
    names = sorted({r[k] for r in records for k in ("person_a", "person_b")})
    res = CliRunner().invoke(
        main, ["kg", "snapshot", "--endpoint", f"wikidata-local:{world / 'store'}", "--names", ",".join(names), "-o", str(tmp_path / "cut.nt")]
    )
    assert res.exit_code == 0, res.output
    lm = "hf:" + str(build_causal(tmp_path / "lm"))
    reports = {}
    with serve_snapshot(tmp_path / "cut.nt", tmp_path) as url:
        for name, kg in (("store", f"wikidata-local:{world / 'store'}"), ("oxigraph", f"sparql:{url}")):
            reports[name] = build(world / "records.jsonl", tmp_path / f"{name}.jsonl", BuildConfig(kg=kg, llm="template", lm=lm), progress=False)
    assert reports["store"]["entries"]["written"] >= 5  # type: ignore[index]
    for report in reports.values():
        del report["records"]["removed_file"], report["files"], report["seconds"]  # type: ignore[attr-defined]
    assert reports["store"] == reports["oxigraph"]
    assert _entries(tmp_path / "store.jsonl") == _entries(tmp_path / "oxigraph.jsonl")
    removed = [(tmp_path / f"{n}.removed.jsonl").read_text().splitlines()[1:] for n in ("store", "oxigraph")]
    assert removed[0] == removed[1] and reports["store"]["records"]["removed"] == {"unlinked": 1, "not found": 1}  # type: ignore[index]
    res = CliRunner().invoke(main, ["dataset", "publish", str(tmp_path / "store.jsonl"), "-o", str(tmp_path / "pub"), "--license", "cc-by-sa-4.0"])
    assert res.exit_code == 0, res.output
    _published(tmp_path / "pub", tmp_path / "store.jsonl")
