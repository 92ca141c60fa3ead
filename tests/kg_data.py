"""The knowledge-graph test data: the bundled demo snapshot plus entities whose labels are
hostile to a query builder (quotes, backslashes, newlines, an injection attempt)."""

from __future__ import annotations

from pathlib import Path

from kalma.kg import demo_snapshot_path

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


# Redirects as Wikidata's RDF writes them (an item merged into another), and an `owl:sameAs` to
# something that is no Wikidata entity, which is none
REDIRECTS_TTL = """
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
wd:Q800000004 owl:sameAs wd:Q800000001 .
wd:Q800000005 owl:sameAs wd:Q220 .
wd:Q800000006 owl:sameAs <http://example.org/elsewhere> .
"""


def contract_snapshot(folder: Path) -> Path:
    path = folder / "contract.ttl"
    path.write_text(demo_snapshot_path().read_text(encoding="utf-8") + HOSTILE_TTL + REDIRECTS_TTL, encoding="utf-8")
    return path
