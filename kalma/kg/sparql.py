"""The SPARQL texts every knowledge source runs, in Wikidata's own vocabulary.

No label SERVICE (only Wikidata runs it): labels come from `rdfs:label`, aliases from
`skos:altLabel`, descriptions from `schema:description`, and a property's statements are
found through `?prop wikibase:directClaim ?p`. The same text therefore runs on Wikidata,
QLever, an Oxigraph or Fuseki server, and a local rdflib or pyoxigraph snapshot.

Everything spliced into a query goes through `literal()` or `entity()`: strings are escaped
per the SPARQL 1.1 grammar (ECHAR), identifiers are validated, so no input changes a query's
meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX wdt: <http://www.wikidata.org/prop/direct/>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
PREFIX schema: <http://schema.org/>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
"""

_ID_RE = re.compile(r"[QP][0-9]+")  # used with fullmatch: no trailing newline, ASCII digits only
# `'` needs no escape inside "…", and rdflib's parser rejects the (legal) `\'` form.
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def literal(text: str, lang: str | None = "en") -> str:
    """A SPARQL string literal for `text`, safe whatever it contains.

    >>> print(literal('O\\'Brien "the \\\\ Great"'))
    "O'Brien \\"the \\\\ Great\\""@en
    """
    # A query's four-hex-digit \u escapes are expanded before it is parsed (SPARQL 1.1 §19.2), even after an
    # escaped backslash: a `u` or `U` that follows a backslash is itself written as an escape, the
    # eight-digit form, since rdflib reads `\u` followed by eight hex digits as one code point.
    body = "".join(_ESCAPES.get(ch, ch) if not (ch in "uU" and prev == "\\") else f"\\U{ord(ch):08X}" for prev, ch in zip(" " + text, text))
    if lang is not None and not re.fullmatch(r"[a-zA-Z]+(-[a-zA-Z0-9]+)*", lang):
        raise ValueError(f"bad language tag {lang!r}")
    return f'"{body}"' + (f"@{lang}" if lang else "")


def entity(qid_or_pid: str, prefix: str = "wd") -> str:
    """`wd:Q42` for a validated id; anything else is refused rather than spliced."""
    if not _ID_RE.fullmatch(qid_or_pid):
        raise ValueError(f"not a Wikidata id: {qid_or_pid!r}")
    return f"{prefix}:{qid_or_pid}"


def _values(var: str, terms: Iterable[str]) -> str:
    return f"VALUES ?{var} {{ {' '.join(terms)} }}"


def lang_filter(var: str, langs: Sequence[str]) -> str:
    """`FILTER(LANG(?var) IN (…))`: the text of `var` in one of the label languages `langs` (a
    source's language, Wikidata's `mul`, its fallback; `kalma.kg.base.label_languages`)."""
    return f"FILTER(LANG(?{var}) IN ({', '.join(literal(lang, None) for lang in langs)}))"


# An instance of a class or of any of its subclasses (P279, followed as far as it goes).
INSTANCE_OF = "wdt:P31/wdt:P279*"


def lookup_query(names: Iterable[str], classes: Iterable[str] = (), langs: Sequence[str] = ("en",)) -> str:
    """Entities whose label or alias in one of `langs` equals one of `names`, optionally instances
    of one of `classes` or of their subclasses."""
    cls = list(classes)
    class_filter = f"{_values('cls', (entity(c) for c in cls))} ?item {INSTANCE_OF} ?cls ." if cls else ""
    return (
        PREFIXES
        + f"""SELECT DISTINCT ?name ?item WHERE {{
  {_values("name", (literal(n, lang) for n in names for lang in langs))}
  {{ ?item rdfs:label ?name }} UNION {{ ?item skos:altLabel ?name }}
  {class_filter}
}}"""
    )


def class_query(qids: Iterable[str]) -> str:
    """For each of `qids`: whether anything is an instance of it (or of a subclass), and whether
    it stands in a subclass statement at all (which makes it a class without instances)."""
    return (
        PREFIXES
        + f"""SELECT ?cls ?instances ?subclass WHERE {{
  {_values("cls", (entity(q) for q in qids))}
  BIND(EXISTS {{ ?x {INSTANCE_OF} ?cls }} AS ?instances)
  BIND(EXISTS {{ {{ ?cls wdt:P279 ?y }} UNION {{ ?z wdt:P279 ?cls }} }} AS ?subclass)
}}"""
    )


def pairs_query(classes_a: Iterable[str], pids: Iterable[str], classes_b: Iterable[str]) -> str:
    """Every (a, property, b) where a is an instance of one of `classes_a` (subclasses included),
    b of one of `classes_b` (any entity when none), linked by one of `pids`."""
    cb = list(classes_b)
    b_filter = f"{_values('cb', (entity(c) for c in cb))} ?b {INSTANCE_OF} ?cb ." if cb else "FILTER(isIRI(?b))"
    return (
        PREFIXES
        + f"""SELECT DISTINCT ?a ?prop ?b WHERE {{
  {_values("prop", (entity(p) for p in pids))}
  {_values("ca", (entity(c) for c in classes_a))}
  ?prop wikibase:directClaim ?p .
  ?a ?p ?b . ?a {INSTANCE_OF} ?ca .
  {b_filter}
}}"""
    )


def subgraph_query(qids: Iterable[str], langs: Sequence[str] = ("en",)) -> str:
    """Every direct claim of the given entities, with property and value labels in `langs`, in one
    query (a claim comes back once per label language found: the caller keeps the best).

    External identifiers are left out (Wikidata lists hundreds per person); a property or value
    without a label in `langs` comes back unlabelled: the caller leaves the claim out, or keeps
    the value's id, and counts it.
    """
    return (
        PREFIXES
        + f"""SELECT ?item ?prop ?propLabel ?value ?valueLabel WHERE {{
  {_values("item", (entity(q) for q in qids))}
  ?item ?p ?value .
  ?prop wikibase:directClaim ?p .
  FILTER NOT EXISTS {{ ?prop wikibase:propertyType wikibase:ExternalId }}
  OPTIONAL {{ ?prop rdfs:label ?propLabel . {lang_filter("propLabel", langs)} }}
  OPTIONAL {{ ?value rdfs:label ?valueLabel . {lang_filter("valueLabel", langs)} }}
}}"""
    )


def entity_info_query(qids: Iterable[str], langs: Sequence[str] = ("en",)) -> str:
    """Labels, aliases and descriptions of the given entities in `langs`."""
    return (
        PREFIXES
        + f"""SELECT ?item ?kind ?text WHERE {{
  {_values("item", (entity(q) for q in qids))}
  {{ ?item rdfs:label ?text . BIND("label" AS ?kind) }}
  UNION {{ ?item skos:altLabel ?text . BIND("alias" AS ?kind) }}
  UNION {{ ?item schema:description ?text . BIND("description" AS ?kind) }}
  {lang_filter("text", langs)}
}}"""
    )


def property_aliases_query(pids: Iterable[str], langs: Sequence[str] = ("en",)) -> str:
    """The other names (`skos:altLabel`) of the given properties in `langs`."""
    return (
        PREFIXES
        + f"""SELECT ?prop ?alias WHERE {{
  {_values("prop", (entity(p) for p in pids))}
  ?prop skos:altLabel ?alias . {lang_filter("alias", langs)}
}}"""
    )


def inverse_properties_query(pids: Iterable[str]) -> str:
    """The inverse properties (P1696) Wikidata states for the given properties."""
    return (
        PREFIXES
        + f"""SELECT ?prop ?inverse WHERE {{
  {_values("prop", (entity(p) for p in pids))}
  ?prop wdt:P1696 ?inverse .
}}"""
    )


# Wikidata's type constraints (P2302) on a property, each naming its classes in P2308 qualifiers.
TYPE_CONSTRAINTS = {"Q21503250": "subject", "Q21510865": "value"}  # subject type, value-type constraint


def type_constraints_query(pids: Iterable[str]) -> str:
    """The classes the given properties' subject-type and value-type constraints name. They live
    in qualifiers, which only full statements hold (the query service; not a truthy dump)."""
    return (
        PREFIXES
        + f"""PREFIX p: <http://www.wikidata.org/prop/>
PREFIX ps: <http://www.wikidata.org/prop/statement/>
PREFIX pq: <http://www.wikidata.org/prop/qualifier/>
SELECT DISTINCT ?prop ?constraint ?cls WHERE {{
  {_values("prop", (entity(p) for p in pids))}
  {_values("constraint", (entity(c) for c in TYPE_CONSTRAINTS))}
  ?prop p:P2302 ?st . ?st ps:P2302 ?constraint ; pq:P2308 ?cls .
}}"""
    )


def links_query(triples: Iterable[tuple[str, str, str]]) -> str:
    """Which (a, property, b) hold in either direction."""
    rows = " ".join(f"({entity(a)} {entity(p, 'wdt')} {entity(b)})" for a, p, b in triples)
    return (
        PREFIXES
        + f"""SELECT ?a ?p ?b WHERE {{
  VALUES (?a ?p ?b) {{ {rows} }}
  {{ ?a ?p ?b }} UNION {{ ?b ?p ?a }}
}}"""
    )


def snapshot_construct(qids: Iterable[str], langs: Sequence[str] = ("en",)) -> str:
    """The one-hop neighbourhood of `qids` plus every label in `langs` a snapshot needs to answer
    the queries above (entity, property and value labels; entity and property aliases;
    descriptions; property types; inverse properties)."""
    return (
        PREFIXES
        + f"""CONSTRUCT {{
  ?item ?p ?value . ?item rdfs:label ?l . ?item skos:altLabel ?a . ?item schema:description ?d .
  ?prop wikibase:directClaim ?p . ?prop rdfs:label ?pl . ?prop wikibase:propertyType ?pt .
  ?prop skos:altLabel ?pa . ?value rdfs:label ?vl . ?prop wdt:P1696 ?inv .
}} WHERE {{
  {_values("item", (entity(q) for q in qids))}
  {{ ?item rdfs:label ?l . {lang_filter("l", langs)} }}
  UNION {{ ?item skos:altLabel ?a . {lang_filter("a", langs)} }}
  UNION {{ ?item schema:description ?d . {lang_filter("d", langs)} }}
  UNION {{
    ?item ?p ?value . ?prop wikibase:directClaim ?p .
    FILTER NOT EXISTS {{ ?prop wikibase:propertyType wikibase:ExternalId }}
    {{ ?prop rdfs:label ?pl . {lang_filter("pl", langs)} }}
    UNION {{ ?prop wikibase:propertyType ?pt }}
    UNION {{ ?prop skos:altLabel ?pa . {lang_filter("pa", langs)} }}
    UNION {{ ?prop wdt:P1696 ?inv }}
    UNION {{ ?value rdfs:label ?vl . {lang_filter("vl", langs)} }}
  }}
}}"""
    )


def redirects_query(qids: Iterable[str]) -> str:
    """The entity each of `qids` was merged into: a redirect, which Wikidata's RDF writes as
    `wd:OLD owl:sameAs wd:NEW`."""
    return (
        PREFIXES
        + f"""PREFIX owl: <http://www.w3.org/2002/07/owl#>
SELECT ?old ?new WHERE {{
  {_values("old", (entity(q) for q in qids))}
  ?old owl:sameAs ?new .
  FILTER(isIRI(?new) && STRSTARTS(STR(?new), "{WD}"))
}}"""
    )
