"""Snapshot tools: write a local snapshot from any source, or import the authors' release."""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..biokalma import ReleaseFact, release_facts
from ..schema import QID_RE
from . import sparql
from .base import KnowledgeSource

BIOKALMA_NS = "https://kalma.invalid/biokalma/"


def write_snapshot(source: KnowledgeSource, qids: Iterable[str], out: str | Path) -> int:
    """The one-hop neighbourhood of `qids` (with every label the queries need) from `source`,
    written as N-Triples or Turtle (by suffix). Returns the number of triples."""
    import rdflib

    g = rdflib.Graph()
    # rdflib logs a traceback for each BCE date it cannot turn into a Python datetime; the lexical
    # form is kept as written, which is all a snapshot needs
    quiet = logging.getLogger("rdflib.term")
    level, quiet.level = quiet.level, logging.ERROR
    try:
        g.parse(data=source.neighbourhood(list(dict.fromkeys(qids))), format="nt")
    finally:
        quiet.setLevel(level)
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
    """Convert the authors' release (`kalma.biokalma` reads it) into a snapshot in Wikidata's
    vocabulary.

    Properties get their real PID where the built-in property table is sure of it, else a
    minted IRI under BIOKALMA_NS; a second release name of one PID (`alma mater` beside
    `educated at`, the raw `date_of_birth`) becomes its `skos:altLabel`. Values have no QIDs in
    the release: a value naming a person of the release links to that person's QID;
    `instance of: human` is Q5; everything else is minted under BIOKALMA_NS. Dates become
    xsd:dateTime; empty and "unknown value" dates are skipped. A value that would link a person
    to themselves (51 in the release, e.g. Q216838 `father` "Robert Southey") is dropped and
    counted (`self_loops_dropped`).
    """
    import rdflib

    from ..biokalma import read_release_raw
    from .local import quiet_rdflib

    people: dict[str, dict[str, Any]] = {}
    for _, graphs in read_release_raw(path):
        for graph in graphs:
            merged = people.setdefault(str(graph.get("qid", "")), {})
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
    def __init__(self, g: Any, people: dict[str, dict[str, Any]]):
        from rdflib import URIRef

        self.g, self.people = g, people
        by_name = Counter(p.get("name", "") for p in people.values())
        self.person_iri = {p["name"]: URIRef(sparql.WD + q) for q, p in people.items() if p.get("name") and by_name[p["name"]] == 1}
        self.props: dict[str, Any] = {}  # property IRI -> its direct-claim IRI
        self.named: set[tuple[str, str]] = set()
        self.stats: Counter[str] = Counter()

    def prop(self, fact: ReleaseFact) -> Any:
        """The direct-claim IRI of `fact`'s property; its first name is the label, later ones aliases."""
        from rdflib import RDFS, Literal, Namespace, URIRef
        from rdflib.namespace import SKOS

        slug = _slug(fact.label)
        iri = URIRef(sparql.WD + fact.pid) if fact.pid else URIRef(BIOKALMA_NS + "prop/" + slug)
        if iri not in self.props:
            direct = URIRef(sparql.WDT + fact.pid) if fact.pid else URIRef(BIOKALMA_NS + "direct/" + slug)
            self.g.add((iri, Namespace("http://wikiba.se/ontology#").directClaim, direct))
            self.g.add((iri, RDFS.label, Literal(fact.label, lang="en")))
            self.props[iri] = direct
            self.named.add((str(iri), fact.label))
        for name in (fact.label, fact.key):
            if (str(iri), name) not in self.named:
                self.g.add((iri, SKOS.altLabel, Literal(name, lang="en")))
                self.named.add((str(iri), name))
        return self.props[iri]

    def run(self) -> Counter[str]:
        from rdflib import RDFS, XSD, Literal, URIRef

        g, stats = self.g, self.stats
        human = URIRef(sparql.WD + "Q5")
        for qid, graph in self.people.items():
            if not QID_RE.match(qid):
                stats["bad_qid"] += 1
                continue
            s = URIRef(sparql.WD + qid)
            g.add((s, RDFS.label, Literal(graph.get("name", qid), lang="en")))
            for fact in release_facts(graph, stats):
                p = self.prop(fact)
                if fact.is_date:
                    g.add((s, p, Literal(fact.value + "T00:00:00Z", datatype=XSD.dateTime)))
                elif fact.label == "instance of" and fact.value == "human":
                    g.add((s, p, human))
                    g.add((human, RDFS.label, Literal("human", lang="en")))
                elif fact.value in self.person_iri:
                    if self.person_iri[fact.value] == s:  # "X father X": a person is not their own relative
                        stats["self_loops_dropped"] += 1
                        continue
                    g.add((s, p, self.person_iri[fact.value]))
                    stats["person_links"] += 1
                else:
                    v = URIRef(BIOKALMA_NS + "value/" + _slug(fact.value))
                    g.add((s, p, v))
                    g.add((v, RDFS.label, Literal(fact.value, lang="en")))
                stats["facts"] += 1
        stats["people"] = len(self.people)
        stats["properties"] = len(self.props)
        stats["minted_properties"] = sum(1 for p in self.props.values() if str(p).startswith(BIOKALMA_NS))
        return stats
