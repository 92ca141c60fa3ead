"""The knowledge-source protocol and the SPARQL-driven base every backend shares.

A backend implements two primitives, `select` (rows of SPARQL JSON-style terms) and
`construct` (N-Triples text). Everything the stages ask for is built on them here, from the
SAME query texts (`kalma.kg.sparql`), so a local snapshot and a remote endpoint cannot drift
apart.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from ..languages import check_tag
from ..schema import EntityGraph, Triple
from . import sparql

XSD = "http://www.w3.org/2001/XMLSchema#"
_DATE_TYPES = {XSD + "dateTime", XSD + "date"}
_QID_IRI = re.compile(r"^http://www\.wikidata\.org/entity/([QP][0-9]+)$")  # [0-9]: `P٣` is no property
_PID_IRI = re.compile(r"^http://www\.wikidata\.org/entity/P[0-9]+$")
WD_ENTITY = "http://www.wikidata.org/entity/"
PROPERTY_VARIABLES = ("prop", "inverse")  # what the queries bind to a property: its IRI must name a PID
_DATE_RE = re.compile(r"^([+-]?[0-9]{1,16})-([0-9]{2})-([0-9]{2})")  # a longer year is no date: kept as text


class Term(TypedDict, total=False):
    type: str  # "uri" | "literal" | "bnode"
    value: str
    datatype: str
    lang: str


Row = dict[str, Term]


# Wikidata's label language for a name valid in many languages (since 2024): it stands for every
# language, so a source reads it for its language when that language has no label of its own.
MUL = "mul"


def label_languages(lang: str, fallback: str | None = None) -> tuple[str, ...]:
    """The languages a source reads labels in, best first: its own, `mul`, then the fallback
    the user allowed (`--label-fallback`), if any.

    >>> label_languages("fr"), label_languages("fr", "en"), label_languages("en", "en")
    (('fr', 'mul'), ('fr', 'mul', 'en'), ('en', 'mul'))
    """
    return tuple(dict.fromkeys((lang, MUL, *([fallback] if fallback else []))))


@dataclass
class LabelNotes:
    """What a source could not label in its language, and what it labelled in the fallback: an
    entity or property with no label in the language is never shown in another one silently."""

    lang: str
    fallback: str | None = None
    missing: dict[str, str] = field(default_factory=dict)  # id -> why it has no label
    fell_back: set[str] = field(default_factory=set)  # ids labelled in the fallback language

    def saw(self, eid: str, used: str | None) -> None:
        """`eid` was labelled in `used` (None: in none of the source's label languages)."""
        if used is None:
            also = f" nor in {self.fallback} (--label-fallback)" if self.fallback else " (--label-fallback en allows English)"
            self.missing.setdefault(eid, f"no label in {self.lang}{' or mul' if self.lang != MUL else ''}{also}")
        elif used == self.fallback and used not in (self.lang, MUL):
            self.fell_back.add(eid)

    def summary(self) -> dict[str, Any]:
        """What a file's header records of the labels: the language, the fallback and its use."""
        return {"language": self.lang, "label_fallback": self.fallback, "labels_missing": len(self.missing), "labels_from_fallback": len(self.fell_back)}


def label_header(source: Any) -> dict[str, Any]:
    """What a file's header says of the labels `source` answered in (`language`, `label_fallback`,
    how many were missing or taken from the fallback); a source of another package that has no
    languages answers in English."""
    notes = getattr(source, "notes", None)
    return notes.summary() if isinstance(notes, LabelNotes) else {"language": getattr(source, "lang", "en"), "label_fallback": None}


class KnowledgeSource(Protocol):
    """What every stage may ask a knowledge graph."""

    name: str
    lang: str
    fallback: str | None
    notes: LabelNotes

    def lookup(self, names: Iterable[str], classes: Iterable[str] = ()) -> dict[str, list[str]]: ...
    def subgraphs(self, qids: Iterable[str]) -> dict[str, EntityGraph]: ...
    def subgraph(self, qid: str) -> EntityGraph | None: ...
    def linked(self, triples: Iterable[tuple[str, str, str]]) -> set[tuple[str, str, str]]: ...
    def labels(self, qids: Iterable[str]) -> dict[str, str]: ...
    def inverse_properties(self, pids: Iterable[str]) -> dict[str, list[str]]: ...
    def property_aliases(self, pids: Iterable[str]) -> dict[str, list[str]]: ...
    def class_status(self, qids: Iterable[str]) -> dict[str, str]:
        """{QID: CLASS_STATUS}: whether each is a class with instances (subclasses' included), a
        class without any (it stands in a P279 statement), or no class this source knows."""
        ...

    def type_constraints(self, pids: Iterable[str]) -> dict[str, dict[str, list[str]]]:
        """{PID: {"subject": classes, "value": classes}}: what each property's Wikidata type
        constraints name, for the properties that have any this source holds."""
        ...

    def pairs(self, classes_a: Sequence[str], pids: Sequence[str], classes_b: Sequence[str] = ()) -> list[tuple[str, str, str]]:
        """Every (a, PID, b), sorted, where a is an instance of one of `classes_a` and b of one of
        `classes_b` (any entity when none), subclasses included, and `a PID b` holds."""
        ...

    def neighbourhood(self, qids: Sequence[str]) -> str:
        """N-Triples of the one-hop neighbourhood of `qids`, with every label the queries above
        need: what a snapshot is cut from (`kalma.kg.snapshot.write_snapshot`)."""
        ...

    def redirects(self, qids: Iterable[str]) -> dict[str, str]:
        """{old id: the id it was merged into}, for those of `qids` the source holds as redirects
        (`owl:sameAs` between two Wikidata entities); the others are absent."""
        ...


CLASS_STATUS = ("has instances", "no instances", "not a class")
TERM_TYPES = frozenset({"uri", "literal", "bnode", "typed-literal"})


class BadResult(ValueError):
    """A SELECT result that does not have the shape the query asks for."""


def check_rows(rows: Any, required: Sequence[str], where: str = "source", allowed: Mapping[str, Collection[str]] | None = None) -> list[Row]:
    """`rows` if it is a list of bindings whose values are SPARQL JSON terms, which bind every
    `required` variable, and whose variables in `allowed` hold only what was asked (an entity's
    QID, or a literal's text); else BadResult naming the first problem. One pass: linear."""
    if not isinstance(rows, list):
        raise BadResult(f"{where}: bindings must be a list, got {type(rows).__name__}")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise BadResult(f"{where}: binding {i} is {type(row).__name__}, not an object")
        for var, term in row.items():
            if not isinstance(term, dict) or term.get("type") not in TERM_TYPES or not isinstance(term.get("value"), str):
                raise BadResult(f"{where}: binding {i}, variable {var!r}: not a SPARQL term ({str(term)[:80]})")
        for var in required:
            if var not in row:
                raise BadResult(f"{where}: binding {i} lacks the variable {var!r}")
        for var in PROPERTY_VARIABLES:  # a Wikidata IRI must name a PID; an imported graph's own property IRIs pass
            iri = row[var]["value"] if var in row else ""
            if iri.startswith(WD_ENTITY) and not _PID_IRI.match(iri):
                raise BadResult(f"{where}: binding {i}, variable {var!r}: {iri[:80]!r} is not a Wikidata property (P and ASCII digits)")
        for var, values in (allowed or {}).items():
            term = row.get(var)
            if term is not None and (iri_id(term["value"]) if term["type"] == "uri" else term["value"]) not in values:
                raise BadResult(f"{where}: binding {i}, variable {var!r}: {term['value'][:80]!r} was not asked for")
    return rows


def iri_id(iri: str) -> str | None:
    m = _QID_IRI.match(iri)
    return m.group(1) if m else None


def render_date(lexical: str) -> str:
    """Wikidata's `1596-07-08T00:00:00Z` as the ISO date `1596-07-08` (BCE keeps its sign)."""
    m = _DATE_RE.match(lexical.strip())
    if not m:
        return lexical
    year = m.group(1).lstrip("+")
    sign = "-" if year.startswith("-") else ""
    return f"{sign}{int(year.lstrip('-')):04d}-{m.group(2)}-{m.group(3)}"


def _property_order(t: Triple) -> tuple[Any, ...]:
    pid = int(t.relation[1:]) if t.relation else 10**9
    return (pid, t.relation_label, t.value_label, t.value)


class SparqlSource(ABC):
    """Answers the protocol with SPARQL; subclasses only run queries.

    `batch_size` bounds the entities per VALUES block (URL length and endpoint time-outs);
    `round_trips` counts queries sent, for the benchmarks.
    """

    name = "sparql"
    batch_size = 50

    def __init__(self, lang: str = "en", fallback: str | None = None):
        self.lang = check_tag(lang, f"{self.name}: lang")
        self.fallback = check_tag(fallback, f"{self.name}: fallback") if fallback else None
        self.langs = label_languages(self.lang, self.fallback)
        self.notes = LabelNotes(self.lang, self.fallback)
        self.round_trips = 0

    @abstractmethod
    def _select(self, query: str, required: Sequence[str] = (), allowed: Mapping[str, Collection[str]] | None = None) -> list[Row]:
        """Rows of the query; remote sources check them with `check_rows` before caching."""

    @abstractmethod
    def _construct(self, query: str) -> str: ...

    def select(self, query: str, required: Sequence[str] = (), allowed: Mapping[str, Collection[str]] | None = None) -> list[Row]:
        """Rows of a SELECT query, each holding a term for every variable in `required`, and in
        each variable of `allowed` only what it lists (the entities asked about)."""
        self.round_trips += 1
        return check_rows(self._select(query, required, allowed), required, self.name, allowed)

    def construct(self, query: str) -> str:
        self.round_trips += 1
        return self._construct(query)

    def neighbourhood(self, qids: Sequence[str]) -> str:
        return "".join(self.construct(sparql.snapshot_construct(chunk, self.langs)) for chunk in _chunks(list(qids), self.batch_size))

    # ------------------------------------------------------------ protocol

    def lookup(self, names: Iterable[str], classes: Iterable[str] = ()) -> dict[str, list[str]]:
        """{name: sorted QIDs whose label or alias in the source's languages equals it}; every name is a key."""
        names = list(dict.fromkeys(names))
        out: dict[str, set[str]] = {n: set() for n in names}
        for chunk in _chunks(names, self.batch_size):
            for row in self.select(sparql.lookup_query(chunk, classes, self.langs), ("item", "name")):
                qid = iri_id(row["item"]["value"])
                name = row["name"]["value"]
                if qid and name in out:
                    out[name].add(qid)
        return {n: sorted(q, key=_qid_num) for n, q in out.items()}

    def subgraphs(self, qids: Iterable[str]) -> dict[str, EntityGraph]:
        """One-hop graphs of many entities: two queries per batch, whatever the number of values.
        Entities the source does not know are absent from the result."""
        qids = list(dict.fromkeys(qids))
        graphs: dict[str, EntityGraph] = {}
        for chunk in _chunks(qids, self.batch_size):
            info = self._entity_info(chunk)
            claims = self.select(sparql.subgraph_query(chunk, self.langs), ("item", "prop", "value"), {"item": chunk})
            triples: dict[str, list[Triple]] = {q: [] for q in chunk}
            for row in best_labelled(claims, self.langs, self.notes):
                t = row_to_triple(row, info, self.lang)
                if t is not None:
                    triples[t.subject].append(t)
            prop_aliases = self.property_aliases({t.relation for ts in triples.values() for t in ts if t.relation})
            graphs.update(assemble_graphs(chunk, info, triples, prop_aliases))
        return graphs

    def property_aliases(self, pids: Iterable[str]) -> dict[str, list[str]]:
        """{PID: its other names}, for the properties that have any (one query per batch)."""
        pids = sorted(set(pids), key=_qid_num)
        out: dict[str, set[str]] = {}
        for chunk in _chunks(pids, self.batch_size * 4):
            for row in self.select(sparql.property_aliases_query(chunk, self.langs), ("prop", "alias")):
                pid = iri_id(row["prop"]["value"])
                if pid:
                    out.setdefault(pid, set()).add(row["alias"]["value"])
        return {p: sorted(a) for p, a in out.items()}

    def inverse_properties(self, pids: Iterable[str]) -> dict[str, list[str]]:
        """{PID: the properties that state its facts from the other end}, as the source says
        (Wikidata's P1696), in both directions; properties with none are absent."""
        pids = sorted(set(pids), key=_qid_num)
        out: dict[str, set[str]] = {}
        for chunk in _chunks(pids, self.batch_size * 4):
            for row in self.select(sparql.inverse_properties_query(chunk), ("prop", "inverse")):
                p, q = iri_id(row["prop"]["value"]), iri_id(row["inverse"]["value"])
                if p and q and p.startswith("P") and q.startswith("P"):
                    out.setdefault(p, set()).add(q)
                    out.setdefault(q, set()).add(p)
        return {p: sorted(q, key=_qid_num) for p, q in out.items()}

    def subgraph(self, qid: str) -> EntityGraph | None:
        return self.subgraphs([qid]).get(qid)

    def linked(self, triples: Iterable[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """The (a, PID, b) among `triples` that hold in either direction."""
        asked = list(dict.fromkeys(triples))
        found: set[tuple[str, str, str]] = set()
        for chunk in _chunks(asked, self.batch_size):
            for row in self.select(sparql.links_query(chunk), ("a", "p", "b")):
                a, b = iri_id(row["a"]["value"]), iri_id(row["b"]["value"])
                p = row["p"]["value"].rsplit("/", 1)[-1]
                if a and b:
                    found.add((a, p, b))
        return found

    def class_status(self, qids: Iterable[str]) -> dict[str, str]:
        qids = list(dict.fromkeys(qids))
        out: dict[str, str] = {}
        for chunk in _chunks(qids, self.batch_size):
            for row in self.select(sparql.class_query(chunk), ("cls", "instances", "subclass"), {"cls": chunk}):
                q = iri_id(row["cls"]["value"])
                if q:
                    out[q] = class_status(_true(row["instances"]), _true(row["subclass"]))
        return {q: out.get(q, "not a class") for q in qids}

    def type_constraints(self, pids: Iterable[str]) -> dict[str, dict[str, list[str]]]:
        pids = sorted(set(pids), key=_qid_num)
        out: dict[str, dict[str, set[str]]] = {}
        for chunk in _chunks(pids, self.batch_size * 4):
            asked = {"prop": chunk, "constraint": tuple(sparql.TYPE_CONSTRAINTS)}
            for row in self.select(sparql.type_constraints_query(chunk), ("prop", "constraint", "cls"), asked):
                p, kind, cls = (iri_id(row[v]["value"]) for v in ("prop", "constraint", "cls"))
                if p and kind and cls and cls.startswith("Q"):
                    out.setdefault(p, {}).setdefault(sparql.TYPE_CONSTRAINTS[kind], set()).add(cls)
        return {p: {k: sorted(v, key=_qid_num) for k, v in sorted(ends.items())} for p, ends in out.items()}

    def pairs(self, classes_a: Sequence[str], pids: Sequence[str], classes_b: Sequence[str] = ()) -> list[tuple[str, str, str]]:
        found = set()
        for row in self.select(sparql.pairs_query(classes_a, pids, classes_b), ("a", "prop", "b")):
            a, p, b = (iri_id(row[v]["value"]) for v in ("a", "prop", "b"))
            if a and p and b and b.startswith("Q"):
                found.add((a, p, b))
        return sorted(found, key=lambda x: (_qid_num(x[0]), _qid_num(x[1]), _qid_num(x[2])))

    def labels(self, qids: Iterable[str]) -> dict[str, str]:
        qids = list(dict.fromkeys(qids))
        out: dict[str, str] = {}
        for chunk in _chunks(qids, self.batch_size):
            out.update({q: v[0] for q, v in self._entity_info(chunk).items()})
        return out

    def redirects(self, qids: Iterable[str]) -> dict[str, str]:
        qids = list(dict.fromkeys(qids))
        found: dict[str, set[str]] = {}
        for chunk in _chunks(qids, self.batch_size):
            for row in self.select(sparql.redirects_query(chunk), ("old", "new"), {"old": chunk}):
                old, new = iri_id(row["old"]["value"]), iri_id(row["new"]["value"])
                if old and new:
                    found.setdefault(old, set()).add(new)
        return {q: min(found[q], key=_qid_num) for q in qids if q in found}  # one answer where a source holds two

    # ------------------------------------------------------------ helpers

    def _entity_info(self, qids: Sequence[str]) -> Info:
        found = []
        for row in self.select(sparql.entity_info_query(qids, self.langs), ("item", "kind", "text"), {"item": qids, "kind": ("label", "alias", "description")}):
            q = iri_id(row["item"]["value"])
            if q:
                found.append((q, row["kind"]["value"], term_lang(row["text"]), row["text"]["value"]))
        return entity_info(found, qids, self.langs, self.notes)


Info = dict[str, tuple[str, list[str], str]]  # entity -> (label, aliases, description)


def term_lang(term: Term | None) -> str:
    """A literal's language tag, lower case, as rdflib and Oxigraph give it (`lang`) or as a
    SPARQL JSON result writes it (`xml:lang`); '' for none."""
    if not term:
        return ""
    return str(term.get("lang") or term.get("xml:lang") or "").lower()


def entity_info(found: Iterable[tuple[str, str, str, str]], asked: Iterable[str], langs: Sequence[str], notes: LabelNotes | None = None) -> Info:
    """(entity, kind, lang, text) rows as each entity's label (the least in the best of `langs`
    it has, else its id), sorted aliases (in the languages better than the fallback, and in the
    label's own) and description (the least in the best language): how every source reads what it
    holds of an entity. Each asked entity is noted in `notes` (no label, or one from the fallback)."""
    acc: dict[str, dict[str, dict[str, list[str]]]] = {}
    for q, kind, lang, text in found:
        acc.setdefault(q, {"label": {}, "alias": {}, "description": {}})[kind].setdefault(lang, []).append(text)
    own = langs[:2]  # the language and mul: what is no fallback
    out: Info = {}
    for q, d in acc.items():
        used = next((lang for lang in langs if lang in d["label"]), None)
        desc = next((d["description"][lang] for lang in langs if lang in d["description"]), [])
        aliases = {a for lang, texts in d["alias"].items() if lang in own or lang == used for a in texts}
        out[q] = (min(d["label"][used]) if used else q, sorted(aliases), min(desc) if desc else "")
    if notes is not None:
        for q in asked:
            notes.saw(q, next((lang for lang in langs if lang in acc.get(q, {}).get("label", {})), None))
    return out


def best_labelled(rows: Iterable[Row], langs: Sequence[str], notes: LabelNotes | None = None) -> list[Row]:
    """Claim rows, one per claim and label language found, as the claims with their best labels
    (rows tied for best all kept): a claim whose property has no label in `langs` is left out, a
    value with none keeps its id; each is noted in `notes`."""
    rows = list(rows)

    def rank(term: Term | None) -> int:
        lang = term_lang(term) if term else None
        return langs.index(lang) if lang in langs else len(langs)

    def key(row: Row) -> tuple[str, ...]:
        v = row["value"]
        return (row["item"]["value"], row["prop"]["value"], v["type"], v["value"], v.get("datatype", ""), term_lang(v))

    best: dict[tuple[str, ...], tuple[int, int]] = {}
    for row in rows:
        k, p, v = key(row), rank(row.get("propLabel")), rank(row.get("valueLabel"))
        bp, bv = best.get(k, (len(langs), len(langs)))
        best[k] = (min(p, bp), min(v, bv))
    out = []
    for row in rows:
        bp, bv = best[key(row)]
        if rank(row.get("propLabel")) != bp or rank(row.get("valueLabel")) != bv:
            continue
        pid = iri_id(row["prop"]["value"])
        if notes is not None and pid:
            notes.saw(pid, langs[bp] if bp < len(langs) else None)
        if "propLabel" not in row:
            continue
        value = iri_id(row["value"]["value"]) if row["value"]["type"] == "uri" else None
        if notes is not None and value:
            notes.saw(value, langs[bv] if bv < len(langs) else None)
        out.append(row)
    return out


def row_to_triple(row: Row, info: Info, lang: str) -> Triple | None:
    """A claim row (`item`, `prop`, `propLabel`, `value`, maybe `valueLabel`, as SPARQL terms) as a
    Triple: a date as its ISO date, monolingual text in another language and empty text left out,
    an entity value by its QID and its label (else its id)."""
    subject = iri_id(row["item"]["value"])
    pid = iri_id(row["prop"]["value"])
    value = row["value"]
    if subject is None:
        return None
    if value["type"] == "literal":
        if term_lang(value) and term_lang(value) != lang:
            return None  # monolingual text in another language
        lexical = value["value"]
        text = render_date(lexical) if value.get("datatype") in _DATE_TYPES else lexical
        if not text.strip():
            return None
        kind, vid, vlabel = "literal", text, text
    else:
        vid = iri_id(value["value"]) or value["value"]
        label = row.get("valueLabel")
        kind, vlabel = "item", (label["value"] if label else vid)
    return Triple(
        subject=subject,
        subject_label=info.get(subject, (subject,))[0],
        relation=pid or "",
        relation_label=row["propLabel"]["value"],
        value=vid,
        value_label=vlabel,
        value_type=kind,  # type: ignore[arg-type]
    )


def assemble_graphs(qids: Sequence[str], info: Info, triples: Mapping[str, list[Triple]], prop_aliases: Mapping[str, list[str]]) -> dict[str, EntityGraph]:
    """The one-hop graph of each of `qids` the source knows (an entity with no label and no claim
    is absent): its triples deduplicated in property order, with the aliases of the properties used."""
    graphs: dict[str, EntityGraph] = {}
    for q in qids:
        if q not in info and not triples.get(q):
            continue
        label, aliases, desc = info.get(q, (q, [], ""))
        uniq = sorted(set(triples.get(q, [])), key=_property_order)
        used = {t.relation: prop_aliases[t.relation] for t in uniq if t.relation in prop_aliases}
        graphs[q] = EntityGraph(qid=q, label=label, aliases=aliases, description=desc, triples=uniq, property_aliases=dict(sorted(used.items())))
    return graphs


def class_status(instances: bool, subclass: bool) -> str:
    return CLASS_STATUS[0] if instances else CLASS_STATUS[1] if subclass else CLASS_STATUS[2]


def _true(term: Term) -> bool:
    return term["value"] in ("true", "1")


def _qid_num(q: str) -> int:
    return int(q[1:])


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
