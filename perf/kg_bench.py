"""Subgraph retrieval for 200 BioKaLMA questions: batched (VALUES, two queries per question)
against one query per entity plus one per property and value label, on a real Oxigraph
server; and the local rdflib store against pyoxigraph.

    python -m perf.kg_bench
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from kalma.cache import Cache
from kalma.kg.base import SparqlSource
from kalma.kg.local import OxigraphSource, RdflibSource
from kalma.kg.remote import EndpointSource
from kalma.kg.snapshot import import_biokalma
from kalma.kg.sparql import PREFIXES, entity

from .common import report, require_biokalma, timed

N_QUESTIONS = 200


def naive_subgraph(src: SparqlSource, qid: str) -> int:
    """What a straightforward client does: claims first, then a label query per property and
    per value. Returns the number of triples seen."""
    rows = src.select(PREFIXES + f"SELECT ?p ?value WHERE {{ {entity(qid)} ?p ?value }}")
    for row in rows:
        src.select(PREFIXES + f"SELECT ?prop ?l WHERE {{ ?prop wikibase:directClaim <{row['p']['value']}> ; rdfs:label ?l }}")
        if row["value"]["type"] == "uri":
            src.select(PREFIXES + f"SELECT ?l WHERE {{ <{row['value']['value']}> rdfs:label ?l }}")
    return len(rows)


def main() -> None:
    from kalma.kg.serve import serve_snapshot  # the same real server the tests start

    data = require_biokalma()
    questions = json.loads((data / "complex_question_graph.json").read_text())
    per_question = [[g["qid"] for g in graphs] for _, graphs in questions if graphs][:N_QUESTIONS]
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "biokalma.nt"
        import_biokalma(data / "complex_question_graph.json", snap)
        with serve_snapshot(snap, Path(tmp)) as url:
            batched = EndpointSource(url, cache=Cache(None))
            t_batched, _ = timed(lambda: [batched.subgraphs(q) for q in per_question])
            naive = EndpointSource(url, cache=Cache(None))
            t_naive, _ = timed(lambda: [naive_subgraph(naive, qid) for q in per_question for qid in q])
        t_rdflib_load, rdf = timed(lambda: RdflibSource(snap))
        t_ox_load, ox = timed(lambda: OxigraphSource(snap))
        t_rdflib, _ = timed(lambda: [rdf.subgraphs(q) for q in per_question])
        t_ox, _ = timed(lambda: [ox.subgraphs(q) for q in per_question])
    report(
        "kg_bench",
        {
            "questions": len(per_question),
            "entities": sum(len(q) for q in per_question),
            "server_batched_round_trips": batched.round_trips,
            "server_batched_seconds": t_batched,
            "server_naive_round_trips": naive.round_trips,
            "server_naive_seconds": t_naive,
            "server_speedup_naive_over_batched": t_naive / t_batched,
            "round_trip_ratio": naive.round_trips / batched.round_trips,
            "rdflib_load_seconds": t_rdflib_load,
            "pyoxigraph_load_seconds": t_ox_load,
            "rdflib_query_seconds": t_rdflib,
            "pyoxigraph_query_seconds": t_ox,
            "query_speedup_pyoxigraph_over_rdflib": t_rdflib / t_ox,
        },
    )


if __name__ == "__main__":
    main()
