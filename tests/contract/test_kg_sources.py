"""The contract every knowledge source keeps, run against every registered source: built from
its spec string, each answers the same questions with the same answers, treats hostile labels
as literal text, and leaves nothing unexplained. A new source adds its case to CASES."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kalma.kg import SOURCES, demo_snapshot_path, open_source
from kalma.kg.base import KnowledgeSource
from kalma.kg.local import RdflibSource
from tests.kg_data import HOSTILE

# name -> spec, given the contract snapshot and a SPARQL server loaded with it. `demo` and
# `wikidata` have fixed data or endpoints: demo serves the bundled snapshot, and wikidata is
# pointed at the local server as it would be at a mirror.
CASES: dict[str, Callable[[Path, str, Path], str]] = {
    "rdflib": lambda data, url, store: f"rdflib:{data}",
    "oxigraph": lambda data, url, store: f"oxigraph:{data}",
    "sparql": lambda data, url, store: f"sparql:{url},attempts=2,timeout=10",
    "wikidata": lambda data, url, store: "wikidata:attempts=2,timeout=10",
    "demo": lambda data, url, store: "demo",
    "wikidata-local": lambda data, url, store: f"wikidata-local:{store}",  # the same triples, imported as a dump
}


def test_every_registered_source_has_a_case():
    assert sorted(CASES) == sorted(SOURCES.names())


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest, kg_data: Path, kg_server: str, kg_store: Path) -> Iterator[tuple[KnowledgeSource, Path]]:
    """(the source built from its spec, the snapshot it serves)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KALMA_WIKIDATA_ENDPOINT", kg_server)
        src = open_source(CASES[request.param](kg_data, kg_server, kg_store))
    yield src, (demo_snapshot_path() if request.param == "demo" else kg_data)


def _answers(src: KnowledgeSource) -> dict[str, Any]:
    graphs = src.subgraphs(["Q212657", "Q367360", "Q258115", "Q206534", "Q800000001", "Q404"])
    return {
        "lookup": src.lookup(["Stephen Crane", "Orazio Gentileschi", "Oskar Hertwig", "Nobody", HOSTILE], ["Q5"]),
        "lookup_any": src.lookup(["Rome", "painter"]),
        "graphs": {q: g.model_dump() for q, g in graphs.items()},
        "linked": sorted(
            src.linked([("Q212657", "P22", "Q367360"), ("Q367360", "P22", "Q212657"), ("Q900000002", "P22", "Q212657"), ("Q85907", "P3373", "Q68753")])
        ),
        "labels": src.labels(["Q220", "Q5", "Q404", "Q800000003"]),
        "redirects": src.redirects(["Q800000004", "Q800000005", "Q800000006", "Q220", "Q404"]),
    }


def test_answers_equal_an_in_memory_graph_of_the_same_data(case):
    src, data = case
    assert _answers(src) == _answers(RdflibSource(data))


def test_the_known_facts(case):
    a = _answers(case[0])
    assert a["lookup"]["Stephen Crane"] == ["Q206534", "Q900000001"]  # the writer and a namesake
    assert a["lookup"]["Oskar Hertwig"] == ["Q68753"]  # by alias
    assert a["lookup"]["Nobody"] == []
    assert a["lookup_any"] == {"Rome": ["Q220"], "painter": ["Q1028181"]}
    art = a["graphs"]["Q212657"]
    rels = [(t["relation_label"], t["value_label"]) for t in art["triples"]]
    assert ("date of birth", "1596-07-08") in rels and ("place of birth", "Rome") in rels
    assert not any(r == "VIAF ID" for r, _ in rels)  # external identifiers filtered
    assert art["aliases"] == ["Artemisia Gentileschi Lomi"] and art["description"] == "Italian Baroque painter"
    assert art["property_aliases"]["P19"] == ["birthplace", "born in"]
    diego = [t["value_label"] for t in a["graphs"]["Q258115"]["triples"] if t["relation"] == "P54"]
    assert diego == ["Atlético Madrid", "S.S. Lazio"]  # multi-valued kept
    assert "Q404" not in a["graphs"]  # unknown ids are absent, not empty graphs
    assert a["linked"] == [("Q212657", "P22", "Q367360"), ("Q367360", "P22", "Q212657"), ("Q85907", "P3373", "Q68753")]
    assert a["labels"]["Q220"] == "Rome" and a["labels"]["Q5"] == "human" and "Q404" not in a["labels"]


def test_hostile_labels_are_literal_text(case):
    src, data = case
    if data == demo_snapshot_path():
        pytest.skip("the bundled snapshot holds no hostile labels")
    got = src.lookup([HOSTILE, 'x" } UNION { ?item ?p ?o } #', "Mallory"], ["Q5"])
    assert got[HOSTILE] == ["Q800000001"]
    assert got['x" } UNION { ?item ?p ?o } #'] == ["Q800000002"]  # found as an alias, injected nothing
    assert got["Mallory"] == ["Q800000002"]
    g = src.subgraphs(["Q800000001"])["Q800000001"]
    assert g.label == HOSTILE and [t.value_label for t in g.triples if t.relation == "P106"] == ["poet\nlaureate"]
    assert src.labels(["Q800000003"]) == {"Q800000003": "poet\nlaureate"}


def test_redirects_are_the_merged_items_and_no_other(case):
    src, data = case
    if data == demo_snapshot_path():
        pytest.skip("the bundled snapshot holds no redirect")
    # owl:sameAs to an entity is a redirect; to another IRI, or an id that is no redirect, none
    assert src.redirects(["Q800000004", "Q800000005", "Q800000006", "Q220", "Q404"]) == {"Q800000004": "Q800000001", "Q800000005": "Q220"}
    assert src.redirects([]) == {}


def test_ids_are_validated_never_spliced(case):
    with pytest.raises(ValueError):
        case[0].subgraphs(["Q1 } ?s ?p ?o {"])
