"""Snapshot tools: write a local snapshot from any source, or import the authors' release."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import sparql
from .base import SparqlSource

BIOKALMA_NS = "https://kalma.invalid/biokalma/"

# Release property labels whose Wikidata PID is certain. Others are minted under BIOKALMA_NS.
KNOWN_PIDS: dict[str, str] = {
    "instance of": "P31", "sex or gender": "P21", "place of birth": "P19", "place of death": "P20",
    "father": "P22", "mother": "P25", "spouse": "P26", "country of citizenship": "P27", "child": "P40",
    "member of sports team": "P54", "educated at": "P69", "alma mater": "P69", "occupation": "P106",
    "employer": "P108", "place of burial": "P119", "movement": "P135", "genre": "P136",
    "religion": "P140", "ethnic group": "P172", "doctoral advisor": "P184", "doctoral student": "P185",
    "position played on team": "P413", "member of": "P463", "cause of death": "P509",
    "residence": "P551", "sport": "P641", "family name": "P734", "surname": "P734",
    "given name": "P735", "notable work": "P800", "notable works": "P800", "student": "P802",
    "work location": "P937", "relative": "P1038", "medical condition": "P1050", "student of": "P1066",
    "manner of death": "P1196", "described by source": "P1343", "nominated for": "P1411",
    "languages spoken": "P1412", "award received": "P166", "sibling": "P3373",
    "native language": "P103", "member of political party": "P102", "field of work": "P101",
    "position held": "P39", "date of birth": "P569", "date of death": "P570",
}
_HEX_UNKNOWN = re.compile(r"^[0-9a-f]{32}$")
_ISO_DATE = re.compile(r"^-?\d{1,4}-\d{2}-\d{2}$")


def write_snapshot(source: SparqlSource, qids: Iterable[str], out: str | Path) -> int:
    """CONSTRUCT the one-hop neighbourhood of `qids` (with every label the queries need) from
    `source` and write it as N-Triples or Turtle (by suffix). Returns the number of triples."""
    import rdflib

    qids = list(dict.fromkeys(qids))
    g = rdflib.Graph()
    for i in range(0, len(qids), source.batch_size):
        g.parse(data=source.construct(sparql.snapshot_construct(qids[i : i + source.batch_size], source.lang)), format="nt")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _bind_prefixes(g)
    g.serialize(str(out), format="nt" if out.suffix == ".nt" else "turtle", encoding="utf-8")
    return len(g)


def _bind_prefixes(g: Any) -> None:
    g.bind("wd", sparql.WD)
    g.bind("wdt", sparql.WDT)
    g.bind("wikibase", "http://wikiba.se/ontology#")
    g.bind("schema", "http://schema.org/")
    g.bind("skos", "http://www.w3.org/2004/02/skos/core#")


def _slug(text: str) -> str:
    ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^A-Za-z0-9]+", "_", ascii_).strip("_").lower()
    return slug or "x" + text.encode("utf-8").hex()[:16]


def import_biokalma(path: str | Path, out: str | Path) -> dict[str, int]:
    """Convert the authors' release (`[[question, [graph, ...]], ...]`, each graph a flat
    `{property label: value label}` dict with `qid`, `name`, `date_of_birth`, `date_of_death`)
    into a snapshot in Wikidata's vocabulary.

    Properties get their real PID where `KNOWN_PIDS` is sure of it, else a minted IRI under
    BIOKALMA_NS. Values have no QIDs in the release: a value naming a person of the release
    links to that person's QID; `instance of: human` is Q5; everything else is minted under
    BIOKALMA_NS. Dates become xsd:dateTime; empty and "unknown value" dates are skipped.
    """
    import rdflib

    from .local import quiet_rdflib

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    people: dict[str, dict[str, str]] = {}
    for entry in data:
        for graph in entry[1] if len(entry) > 1 else []:
            merged = people.setdefault(graph["qid"], {})
            for k, v in graph.items():
                merged.setdefault(k, v)  # the same person recurs; keep the first value seen
    g = rdflib.Graph()
    with quiet_rdflib():
        stats = _BiokalmaWriter(g, people).run()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _bind_prefixes(g)
    g.bind("bk", BIOKALMA_NS)
    g.serialize(str(out), format="nt" if out.suffix == ".nt" else "turtle", encoding="utf-8")
    stats["triples"] = len(g)
    return dict(stats)


class _BiokalmaWriter:
    def __init__(self, g: Any, people: dict[str, dict[str, str]]):
        from rdflib import URIRef

        self.g, self.people = g, people
        by_name = Counter(p.get("name", "") for p in people.values())
        self.person_iri = {
            p["name"]: URIRef(sparql.WD + q) for q, p in people.items() if p.get("name") and by_name[p["name"]] == 1
        }
        self.props: dict[str, Any] = {}
        self.stats: Counter[str] = Counter()

    def prop(self, label: str) -> Any:
        from rdflib import RDFS, Literal, Namespace, URIRef

        if label not in self.props:
            pid = KNOWN_PIDS.get(label)
            iri = URIRef(sparql.WD + pid) if pid else URIRef(BIOKALMA_NS + "prop/" + _slug(label))
            direct = URIRef(sparql.WDT + pid) if pid else URIRef(BIOKALMA_NS + "direct/" + _slug(label))
            self.g.add((iri, Namespace("http://wikiba.se/ontology#").directClaim, direct))
            self.g.add((iri, RDFS.label, Literal(label, lang="en")))
            self.props[label] = direct
        return self.props[label]

    def run(self) -> Counter[str]:
        from rdflib import RDFS, XSD, Literal, URIRef

        g, stats = self.g, self.stats
        human = URIRef(sparql.WD + "Q5")
        for qid, graph in self.people.items():
            if not re.fullmatch(r"Q\d+", qid):
                stats["bad_qid"] += 1
                continue
            s = URIRef(sparql.WD + qid)
            g.add((s, RDFS.label, Literal(graph.get("name", qid), lang="en")))
            for key, value in graph.items():
                if key in {"qid", "name"} or not isinstance(value, str):
                    continue
                label = {"date_of_birth": "date of birth", "date_of_death": "date of death"}.get(key, key)
                if key.startswith("date_of"):
                    if not _ISO_DATE.match(value) or _HEX_UNKNOWN.match(value):
                        stats["dates_skipped"] += 1
                        continue
                    g.add((s, self.prop(label), Literal(value + "T00:00:00Z", datatype=XSD.dateTime)))
                elif not value.strip():
                    stats["empty_values"] += 1
                    continue
                elif label == "instance of" and value == "human":
                    g.add((s, self.prop(label), human))
                    g.add((human, RDFS.label, Literal("human", lang="en")))
                elif value in self.person_iri:
                    g.add((s, self.prop(label), self.person_iri[value]))
                    stats["person_links"] += 1
                else:
                    v = URIRef(BIOKALMA_NS + "value/" + _slug(value))
                    g.add((s, self.prop(label), v))
                    g.add((v, RDFS.label, Literal(value, lang="en")))
                stats["facts"] += 1
        stats["people"] = len(self.people)
        stats["properties"] = len(self.props)
        stats["minted_properties"] = sum(1 for p in self.props.values() if str(p).startswith(BIOKALMA_NS))
        return stats
