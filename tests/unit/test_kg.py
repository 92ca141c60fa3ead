"""Knowledge-graph contract: rdflib, pyoxigraph and a real Oxigraph SPARQL server answer the
same queries identically, hostile names included; the endpoint client survives faults."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kalma.cache import Cache
from kalma.kg import demo_snapshot_path, open_source
from kalma.kg.local import OxigraphSource, RdflibSource
from kalma.kg.remote import EndpointError, EndpointSource, RetryPolicy
from kalma.kg.snapshot import import_biokalma, write_snapshot
from kalma.kg.sparql import literal

from .servers import hang, oxigraph_server, reply, scripted_server

HOSTILE = 'O\'Brien "the \\ Great"'
HOSTILE_TTL = """
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix wikibase: <http://wikiba.se/ontology#> .
wd:P31 wikibase:directClaim wdt:P31 ; rdfs:label "instance of"@en .
wd:P106 wikibase:directClaim wdt:P106 ; rdfs:label "occupation"@en .
wd:Q5 rdfs:label "human"@en .
wd:Q800000001 rdfs:label "O'Brien \\"the \\\\ Great\\""@en ; wdt:P31 wd:Q5 ; wdt:P106 wd:Q800000003 .
wd:Q800000002 rdfs:label "Mallory"@en ; skos:altLabel "x\\" } UNION { ?item ?p ?o } #"@en ; wdt:P31 wd:Q5 .
wd:Q800000003 rdfs:label "poet\\nlaureate"@en .
"""


@pytest.fixture(scope="module")
def data_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo snapshot plus a few entities with hostile labels."""
    d = tmp_path_factory.mktemp("kg")
    path = d / "contract.ttl"
    path.write_text(demo_snapshot_path().read_text(encoding="utf-8") + HOSTILE_TTL, encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["rdflib", "oxigraph", "server"])
def source(request: pytest.FixtureRequest, data_file: Path, tmp_path_factory: pytest.TempPathFactory):
    if request.param == "rdflib":
        yield RdflibSource(data_file)
    elif request.param == "oxigraph":
        yield OxigraphSource(data_file)
    else:
        with oxigraph_server(data_file, tmp_path_factory.mktemp("ox")) as url:
            yield EndpointSource(url, cache=Cache(None), policy=RetryPolicy(attempts=2, timeout=10))


def _answers(src) -> dict:
    graphs = src.subgraphs(["Q212657", "Q367360", "Q258115", "Q206534", "Q800000001", "Q404"])
    return {
        "lookup": src.lookup(["Stephen Crane", "Orazio Gentileschi", "Oskar Hertwig", "Nobody", HOSTILE], ["Q5"]),
        "lookup_any": src.lookup(["Rome", "painter"]),
        "graphs": {q: g.model_dump() for q, g in graphs.items()},
        "linked": sorted(
            src.linked([("Q212657", "P22", "Q367360"), ("Q367360", "P22", "Q212657"), ("Q900000002", "P22", "Q212657"), ("Q85907", "P3373", "Q68753")])
        ),
        "labels": src.labels(["Q220", "Q5", "Q404", "Q800000003"]),
    }


def test_contract_answers(source):
    a = _answers(source)
    assert a["lookup"]["Stephen Crane"] == ["Q206534", "Q900000001"]
    assert a["lookup"]["Oskar Hertwig"] == ["Q68753"]  # by alias
    assert a["lookup"]["Nobody"] == []
    assert a["lookup_any"] == {"Rome": ["Q220"], "painter": ["Q1028181"]}
    art = a["graphs"]["Q212657"]
    rels = [(t["relation_label"], t["value_label"]) for t in art["triples"]]
    assert ("date of birth", "1596-07-08") in rels and ("place of birth", "Rome") in rels
    assert not any(r == "VIAF ID" for r, _ in rels)  # external identifiers filtered
    assert art["aliases"] == ["Artemisia Gentileschi Lomi"] and art["description"] == "Italian Baroque painter"
    diego = [t["value_label"] for t in a["graphs"]["Q258115"]["triples"] if t["relation"] == "P54"]
    assert diego == ["Atlético Madrid", "S.S. Lazio"]  # multi-valued kept
    assert "Q404" not in a["graphs"]
    assert a["linked"] == [("Q212657", "P22", "Q367360"), ("Q367360", "P22", "Q212657"), ("Q85907", "P3373", "Q68753")]
    assert a["labels"] == {"Q220": "Rome", "Q5": "human", "Q800000003": "poet\nlaureate"}


def test_hostile_names_are_literal_text(source):
    got = source.lookup([HOSTILE, 'x" } UNION { ?item ?p ?o } #', "Mallory"], ["Q5"])
    assert got[HOSTILE] == ["Q800000001"]
    assert got['x" } UNION { ?item ?p ?o } #'] == ["Q800000002"]  # found as an alias, injected nothing
    assert got["Mallory"] == ["Q800000002"]
    g = source.subgraphs(["Q800000001"])["Q800000001"]
    assert g.label == HOSTILE and [t.value_label for t in g.triples if t.relation == "P106"] == ["poet\nlaureate"]


def test_all_backends_identical(data_file, tmp_path):
    with oxigraph_server(data_file, tmp_path) as url:
        remote = _answers(EndpointSource(url, cache=Cache(None)))
    assert _answers(RdflibSource(data_file)) == _answers(OxigraphSource(data_file)) == remote


def test_batched_subgraphs_take_three_round_trips(data_file):
    """Entity labels, claims, and the aliases of the properties used: three queries per batch."""
    src = OxigraphSource(data_file)
    graphs = src.subgraphs(["Q212657", "Q367360", "Q258115", "Q6439494", "Q206534"])
    assert src.round_trips == 3
    assert graphs["Q212657"].property_aliases["P19"] == ["birthplace", "born in"]
    assert "P19" not in graphs["Q206534"].property_aliases or any(t.relation == "P19" for t in graphs["Q206534"].triples)


def test_ids_are_validated_not_spliced():
    with pytest.raises(ValueError):
        RdflibSource(demo_snapshot_path()).subgraphs(["Q1 } ?s ?p ?o {"])
    assert literal("a\nb") == '"a\\nb"@en'


# ---------------------------------------------------------------- faults

SPARQL_OK = json.dumps(
    {
        "head": {"vars": ["name", "item"]},
        "results": {
            "bindings": [{"name": {"type": "literal", "value": "X", "xml:lang": "en"}, "item": {"type": "uri", "value": "http://www.wikidata.org/entity/Q42"}}]
        },
    }
).encode()


def test_endpoint_survives_429_503_hang_then_succeeds(tmp_path):
    script = [reply(429, b"slow down", {"Retry-After": "1"}), reply(503), hang(3), reply(200, SPARQL_OK, {"Content-Type": "application/sparql-results+json"})]
    with scripted_server(script) as (url, log):
        src = EndpointSource(url, cache=Cache(tmp_path / "c.sqlite"), policy=RetryPolicy(attempts=5, timeout=1, backoff=0.05))
        t0 = time.time()
        assert src.lookup(["X"]) == {"X": ["Q42"]}
        elapsed = time.time() - t0
        assert len(log) == 4 and src.requests_sent == 4
        assert elapsed >= 1.0  # Retry-After: 1 was honoured
        assert all(r["headers"]["User-Agent"].startswith("kalma-bench/") for r in log)
        # a second run is served by the cache: no request leaves
        again = EndpointSource(url, cache=Cache(tmp_path / "c.sqlite"))
        assert again.lookup(["X"]) == {"X": ["Q42"]} and again.requests_sent == 0 and len(log) == 4


def test_endpoint_gives_up_after_budget():
    with scripted_server([reply(503)]) as (url, log):
        src = EndpointSource(url, cache=Cache(None), policy=RetryPolicy(attempts=3, timeout=2, backoff=0.01))
        with pytest.raises(EndpointError, match="gave up after 3 attempts: HTTP 503"):
            src.lookup(["X"])
        assert len(log) == 3


def test_empty_200_is_suspicious_and_retried():
    with scripted_server([reply(200, b""), reply(200, SPARQL_OK)]) as (url, log):
        src = EndpointSource(url, cache=Cache(None), policy=RetryPolicy(attempts=3, timeout=2, backoff=0.01))
        assert src.lookup(["X"]) == {"X": ["Q42"]} and len(log) == 2


def test_bad_query_is_not_retried():
    with scripted_server([reply(400, b"syntax error")]) as (url, log):
        src = EndpointSource(url, cache=Cache(None), policy=RetryPolicy(attempts=3, backoff=0.01))
        with pytest.raises(EndpointError, match="HTTP 400"):
            src.lookup(["X"])
        assert len(log) == 1


# ---------------------------------------------------------------- snapshots and import


def test_snapshot_from_a_server_round_trips(data_file, tmp_path):
    out = tmp_path / "snap.ttl"
    with oxigraph_server(data_file, tmp_path) as url:
        src = EndpointSource(url, cache=Cache(None))
        write_snapshot(src, ["Q212657", "Q367360"], out)
        expected = src.subgraphs(["Q212657", "Q367360"])
    assert RdflibSource(out).subgraphs(["Q212657", "Q367360"]) == expected


def test_open_source_suggests():
    with pytest.raises(ValueError, match="Did you mean 'oxigraph'"):
        open_source("oxigraf:x.ttl")


@pytest.mark.shared
def test_import_biokalma_release(biokalma_dir, tmp_path):
    out = tmp_path / "bk.nt"
    stats = import_biokalma(biokalma_dir / "complex_question_graph.json", out)
    assert stats["people"] == 1076 and stats["facts"] > 15000
    src = OxigraphSource(out)
    crane = src.subgraphs(["Q206534"])["Q206534"]
    vals = {(t.relation_label, t.value_label) for t in crane.triples}
    assert ("place of birth", "Newark") in vals and ("date of birth", "1871-11-01") in vals
    assert src.lookup(["Stephen Crane"], ["Q5"]) == {"Stephen Crane": ["Q206534"]}
    minted = [t.value for t in crane.triples if t.relation_label == "place of birth"][0]
    assert minted.startswith("https://kalma.invalid/biokalma/value/")
