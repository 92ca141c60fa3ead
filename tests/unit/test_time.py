"""A KG's version (kalma.kg.version): what a dataset's header records of the KG it was built on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kalma.kg import demo_snapshot_path
from kalma.kg.version import describe, kg_version, same_kg
from perf.dumpgen import write_dump

pytest.importorskip("duckdb")


def test_a_snapshot_is_known_by_its_content(tmp_path: Path):
    a, b = tmp_path / "a.ttl", tmp_path / "b.ttl"
    shutil.copy(demo_snapshot_path(), a)
    shutil.copy(demo_snapshot_path(), b)
    va, vb = kg_version(str(a)), kg_version(f"oxigraph:{b}")
    assert va["kind"] == "rdflib" and vb["kind"] == "oxigraph" and va["dump_date"] is None and va["languages"] == ["en"]
    assert same_kg(va, vb) and same_kg(va, kg_version("demo"))  # same bytes, same KG, whatever opens it
    b.write_text(b.read_text().replace('"Rome"@en', '"Roma"@en'))
    assert not same_kg(va, kg_version(str(b)))
    live = kg_version("sparql:http://127.0.0.1:1/query")
    assert live["digest"] is None and not same_kg(live, live) and "no digest" in describe(live)


def test_a_store_is_known_by_its_dump_not_by_where_or_when_it_was_imported(tmp_path: Path):
    from kalma.kg.store import import_dump

    write_dump(tmp_path / "wikidata-20261118-truthy.nt", 6, "nt", seed=1, with_release=False, named_only=True)
    write_dump(tmp_path / "other.nt", 6, "nt", seed=2, with_release=False, named_only=True)
    for dump, store in (("wikidata-20261118-truthy.nt", "s1"), ("wikidata-20261118-truthy.nt", "s2"), ("other.nt", "s3")):
        import_dump(tmp_path / dump, tmp_path / store, progress=False)
    v1, v2, v3 = (kg_version(f"wikidata-local:{tmp_path / s}") for s in ("s1", "s2", "s3"))
    assert v1["kind"] == "wikidata-local" and v1["dump_date"] == "2026-11-18" and v1["languages"] == ["en"]
    assert same_kg(v1, v2) and not same_kg(v1, v3)
    assert describe(v1).startswith(f"wikidata-local:{tmp_path / 's1'} (dump 2026-11-18, sha256:")


def test_the_leaderboard_gives_each_split_with_its_interval():
    from dataclasses import replace

    from bench.leaderboard import COLUMNS, Row, Table, _splits_html, _splits_md

    metric, _, name = COLUMNS[0][0].partition(".")
    found = {"entries": 3, "answers": 3, "metrics": {metric: {name: 0.25}}, "intervals": {metric: {name: {"low": 0.1, "high": 0.4, "undefined": 0}}}}
    row = Row(name="sys", model="m", url="", answers=3, seeds="0", values={}, malformed=0, filed="", backends="", splits={"changed": found})
    assert "| sys | changed | 3 | 25.0 [10.0, 40.0] | n/a |" in "\n".join(_splits_md(Table("ds", [row])))
    assert "<td>25.0 [10.0, 40.0]</td>" in _splits_html(Table("ds", [row]))
    plain = Table("ds", [replace(row, splits={})])
    assert _splits_md(plain) == [] and _splits_html(plain) == ""  # a dataset without splits: the board as before


def test_the_card_of_a_refreshed_dataset_records_both_kg_versions(tmp_path: Path):
    pytest.importorskip("huggingface_hub")
    from dataset_builder.demo import demo_entries
    from dataset_builder.publish import publish
    from kalma.jsonl import write_jsonl
    from kalma.kg import open_source

    old, new = kg_version("demo"), {**kg_version("demo"), "spec": "wikidata-local:new", "dump_date": "2026-02-01", "digest": "sha256:" + "b" * 64}
    refreshed = {
        "kg_version": new,
        "from": old,
        "counts": {"kept": 3, "rebuilt": 1, "dropped": 2},
        "changelog": "ds.changelog.jsonl",
        "created": "2026-11-29T09:00:00",
    }
    config = {"kg": "demo", "llm": "template", "lm": "smollm2", "seed": 0}
    write_jsonl(tmp_path / "ds.jsonl", demo_entries(open_source("demo")), "dataset", {"config": config, "refreshed": refreshed})
    publish(tmp_path / "ds.jsonl", tmp_path / "pub", "cc0-1.0")
    card = (tmp_path / "pub" / "README.md").read_text()
    assert f"| refreshed for | `wikidata-local:new`, dump 2026-02-01, digest `sha256:{'b' * 64}`; on 2026-11-29 |" in card
    assert f"| refreshed from | `demo`, dump date unknown, digest `{old['digest']}` |" in card
    assert "| refresh | 3 entries kept as built, 1 rebuilt, 2 dropped (`ds.changelog.jsonl`) |" in card
    write_jsonl(tmp_path / "plain.jsonl", demo_entries(open_source("demo")), "dataset", {"config": config})
    publish(tmp_path / "plain.jsonl", tmp_path / "plain", "cc0-1.0")
    assert "refreshed" not in (tmp_path / "plain" / "README.md").read_text()  # a dataset never refreshed: its card as before
