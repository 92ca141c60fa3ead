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

    write_dump(tmp_path / "wikidata-20261118-truthy.nt", 6, "nt", seed=1, with_release=False)
    write_dump(tmp_path / "other.nt", 6, "nt", seed=2, with_release=False)
    for dump, store in (("wikidata-20261118-truthy.nt", "s1"), ("wikidata-20261118-truthy.nt", "s2"), ("other.nt", "s3")):
        import_dump(tmp_path / dump, tmp_path / store, progress=False)
    v1, v2, v3 = (kg_version(f"wikidata-local:{tmp_path / s}") for s in ("s1", "s2", "s3"))
    assert v1["kind"] == "wikidata-local" and v1["dump_date"] == "2026-11-18" and v1["languages"] == ["en"]
    assert same_kg(v1, v2) and not same_kg(v1, v3)
    assert describe(v1).startswith(f"wikidata-local:{tmp_path / 's1'} (dump 2026-11-18, sha256:")
