"""Generated N-Triples lines over the grammar's edges, and the differential check of the two
N-Triples parsers (`NTriples`, by a compiled pattern; `columnar`, by polars columns) against each
other and against rdflib's parser. `tests/unit/test_ntriples_fuzz.py` runs a few blocks of one seed
in `make test`; `python -m perf.ntriples_fuzz` runs seed after seed for as long as asked.

Lines are drawn, seeded, over the grammar's edges: one space or two or a tab before the final
dot, no space before it, a space after it, a CR before the newline; `>` inside IRIs, blank nodes
with spaces, language tags with spaces, digits (`es-419`) or none, `#directClaim> <` and a claim
predicate's words inside literals, every escape N-Triples defines (`\\t \\b \\n \\r \\f \\" \\' \\\\`,
`\\uXXXX`, `\\UXXXXXXXX`) and some it does not, a UTF-16 pair, a half alone, one past U+10FFFF, raw
tabs and non-ASCII text, bytes that are not UTF-8, a last line without its newline; claims, labels
in and out of the languages asked, property types and direct predicates, redirects (`owl:sameAs`,
to an entity or to anything else), and predicates that only look like them. Terms are separated by one space, as Wikidata writes them. Every block is read with
and without `--classes`/`--qids` and `--lang` filters:

- by both parsers: the same rows, and the same malformed lines (every one, by number);
- its well-formed lines alone (those rdflib reads, into text that is valid Unicode) by both
  parsers and by rdflib, whose triples become rows by the store's rules as this module states
  them: the same rows.

The caller names every malformed line (`kalma.kg.dumps.EXAMPLES` raised) and keeps rdflib's
literals as written (`rdflib.NORMALIZE_LITERALS = False`), as the test's fixture does.
"""

from __future__ import annotations

import random
import re
from typing import Any

from kalma.kg.dumps import Filter

SEED = 54
BLOCKS = 12  # blocks of LINES lines, each read under every filter of FILTERS
LINES = 150
FILTERS = (
    (("en",), Filter()),
    (("en", "de"), Filter()),
    (("es-419",), Filter()),
    (("de",), Filter(classes=frozenset({"Q5"}))),
    (("en",), Filter(qids=frozenset({"Q2"}))),
    (("en", "en-gb"), Filter(classes=frozenset({"Q5", "Q6"}))),
)

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
ONTOLOGY = "http://wikiba.se/ontology#"
XSD = "http://www.w3.org/2001/XMLSchema#"
SAME_AS = "http://www.w3.org/2002/07/owl#sameAs"
LABEL, ALIAS, DESCRIPTION = "http://www.w3.org/2000/01/rdf-schema#label", "http://www.w3.org/2004/02/skos/core#altLabel", "http://schema.org/description"

SUBJECTS = [f"<{WD}Q1>", f"<{WD}Q2>", f"<{WD}Q3>", f"<{WD}P31>", f"<{WD}P569>", f"<{WD}Q4>"]
ODD_SUBJECTS = [
    "<http://x/a>b>",  # two `>`
    f"<{WD}Q9\tx>",  # a tab inside
    "<>",
    "_:b1",  # a blank node: no subject the store keeps
    f"<{WD}Q\u00b2>",  # not an entity id: digits outside ASCII
    f"<{WD}L5>",
    f"<{ONTOLOGY}directClaim>",
    '<http://x/a"b>',
    f"<{WD}Q1",  # never closed
    "<P31>",
]
CLAIMS = [f"<{WDT}P31>", f"<{WDT}P569>", f"<{WDT}P1476>", f"<{WDT}P18>", f"<{WDT}P2>"]
ODD_PREDICATES = [f"<{WDT}P31x>", f"<{WDT}P\u00b2>", f"<{WDT}>", "<http://www.wikidata.org/prop/P31>", "<http://schema.org/about>"]
LABEL_PREDICATES = [f"<{LABEL}>", f"<{ALIAS}>", f"<{DESCRIPTION}>", "<http://www.w3.org/2004/02/skos/core#prefLabel>", "<http://schema.org/name>"]
IRIS = [f"<{WD}Q5>", f"<{WD}Q6>", f"<{WD}P31>", "<https://example.org/a>", f"<{WD}Q\u00b2>", f"<{WD}L1>", f"<{WDT}P31>", "<http://commons.wikimedia.org/x.jpg>"]
ODD_IRIS = ["<https://example.org/a b>", "<http://x/a>b>", "<>", "<http://x/a", "<urn:x<y>"]
BNODES = ["_:b0", "_:genid7"]
ODD_BNODES = ["_:b 0", "_:", "_:b\u00a0x", "_:b0\t"]
TEXTS = [
    "Ada",
    "Caf\u00e9",
    "a\tb",
    "see #directClaim> <here",
    f"a> <{WDT}P1 b",
    "@en",
    "\u00e9t\u00e9 \u4e2d",
    "1953-01-01T00:00:00Z",
    "x . y",
    "",
]
ESCAPES = ["\\u00e9", '\\"', "\\\\", "\\n", "\\t", "\\U0001F600", "\\uD83D\\uDE00", "\\uD800", "\\U00110000", "\\q", "\\'", "\\r", "\\b", "\\f"]
SUFFIXES = ["", "@en", "@de", "@en-gb", "@fr", "@es-419", "@ES-419", f"^^<{XSD}string>", f"^^<{XSD}dateTime>", f"^^<{WD}Q5>"]
ODD_SUFFIXES = ["@en US", "@", "@en^^<x>", "^^<a>b>", "^^<x", "@EN", "@en-"]
ENDS = [" .", " .", " .", " .", "  .", "\t.", ".", " . ", " .\t", " .\r", " . \r"]
ODD_ENDS = ["", " ..", " . .", " .x", " ;"]
NOT_UTF8 = [b"\xe9", b"\xff", b"\xc3", b"\xed\xa0\x80"]
NOT_IN_IRI = re.compile(r'[\x00-\x20<>"{}|^`\\]')  # N-Triples' IRIREF leaves these out


def _literal(rng: random.Random) -> str:
    text = rng.choice(TEXTS)
    if rng.random() < 0.3:
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(ESCAPES) + text[at:]
    if rng.random() < 0.03:
        text += '"unescaped'
    if rng.random() < 0.03:
        text += "\\"  # escapes the closing quote
    return f'"{text}"' + (rng.choice(ODD_SUFFIXES) if rng.random() < 0.1 else rng.choice(SUFFIXES))


def _object(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:
        return rng.choice(ODD_IRIS) if rng.random() < 0.1 else rng.choice(IRIS)
    if kind < 0.55:
        return rng.choice(ODD_BNODES) if rng.random() < 0.3 else rng.choice(BNODES)
    return _literal(rng)


def _line(rng: random.Random, subject: str) -> bytes:
    """One generated line, with its newline."""
    if rng.random() < 0.1:
        subject = rng.choice(ODD_SUBJECTS)
    kind = rng.random()
    if kind < 0.5:
        predicate = rng.choice(ODD_PREDICATES) if rng.random() < 0.05 else rng.choice(CLAIMS)
        obj = _object(rng)
    elif kind < 0.8:
        predicate = rng.choice(LABEL_PREDICATES)
        obj = _literal(rng)
    elif kind < 0.85:
        predicate = f"<{ONTOLOGY}propertyType>"
        obj = rng.choice([f"<{ONTOLOGY}WikibaseItem>", f"<{ONTOLOGY}ExternalId>", f"<{ONTOLOGY}Wikibase-Item>", f"<{ONTOLOGY}>", _object(rng)])
    elif kind < 0.9:
        predicate = f"<{SAME_AS}>"  # a redirect when both ends are entities
        obj = _object(rng) if rng.random() < 0.3 else rng.choice(SUBJECTS)
    else:
        predicate = f"<{ONTOLOGY}directClaim>"
        pid = subject.removeprefix(f"<{WD}").removesuffix(">")
        obj = rng.choice([f"<{WDT}{pid}>", f"<{WDT}P31>", f"<{WDT}P31> <{WDT}P2>", f"<{WDT}{pid}x>", _object(rng)])
    end = rng.choice(ODD_ENDS) if rng.random() < 0.05 else rng.choice(ENDS)
    line = f"{subject} {predicate} {obj}{end}".encode()
    if rng.random() < 0.03:
        at = rng.randrange(len(line) + 1)
        line = line[:at] + rng.choice(NOT_UTF8) + line[at:]
    return line + b"\n"


def block(rng: random.Random, lines: int = LINES) -> bytes:
    """Lines of a few subjects, each subject's lines together, as in a dump; sometimes the last
    line has no newline."""
    out: list[bytes] = []
    while len(out) < lines:
        subject = rng.choice(SUBJECTS)
        out += [_line(rng, subject) for _ in range(rng.randint(1, 8))]
    data = b"".join(out[:lines])
    return data[:-1] if rng.random() < 0.2 else data


# ---------------------------------------------------------------- the two parsers


def read_both(data: bytes, languages: tuple[str, ...], keep: Filter) -> tuple[dict[str, list[tuple]], dict[str, list[tuple]], list, list]:
    """Rows (sorted, by table) and malformed lines (line, why) of `data` by the pattern parser and
    by the columns, each from line 1 (needs polars)."""
    from kalma.kg.columnar import parse_block
    from kalma.kg.dumps import Malformed, NTriples, Rows

    parser, rows, bad = NTriples(languages, keep), Rows(), Malformed()
    parser.parse(data, rows, bad, 1)
    parser.finish(rows)
    pattern: dict[str, list[tuple]] = {
        "labels": list(rows.labels),
        "claims": list(rows.claims),
        "properties": list(rows.props),
        "redirects": list(rows.redirects),
    }
    tables, found, n_lines = parse_block(data, 1, languages, keep)
    assert n_lines == data.count(b"\n")
    columns = {name: [tuple(r.values()) for r in t.to_pylist()] for name, t in tables.items()}
    assert bad.count == found.count  # every malformed line is named (EXAMPLES is raised for these tests)
    lines = data.split(b"\n")
    for n, _, text in bad.first:  # named by its own number
        assert lines[n - 1].decode("utf-8", "replace")[:160] == text, (n, text)
    return _sorted(pattern), _sorted(columns), [x[:2] for x in bad.first], [x[:2] for x in found.first]


def _sorted(tables: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    return {name: sorted(rows, key=repr) for name, rows in tables.items()}


# ---------------------------------------------------------------- rdflib, and the store's rules


def rdflib_triples(line: bytes) -> list[tuple[Any, Any, Any, dict[str, str]]] | None:
    """The triple rdflib reads from one line, with the labels of its blank nodes; None when rdflib
    refuses the line or reads text that is no valid Unicode (a UTF-16 half alone)."""
    from rdflib import URIRef
    from rdflib.plugins.parsers.ntriples import DummySink, W3CNTriplesParser

    class Sink(DummySink):  # (DummySink prints each triple: what rdflib's parser is typed to take)
        def __init__(self) -> None:
            self.triples: list[tuple[Any, Any, Any]] = []

        def triple(self, s: Any, p: Any, o: Any) -> None:
            self.triples.append((s, p, o))

    try:
        text = line.decode()
    except UnicodeDecodeError:
        return None
    labels: dict[str, str]
    sink, labels = Sink(), {}  # each blank node's label in the line, to rdflib's own id for it
    try:
        W3CNTriplesParser(sink).parsestring(text, bnode_context=labels)
        for triple in sink.triples:
            "".join(map(str, triple)).encode()
    except Exception:  # noqa: BLE001 - rdflib raises several kinds for what it refuses
        return None
    # rdflib's IRI pattern takes spaces and `>` before the scheme's colon: hold IRIs to the W3C grammar
    if any(isinstance(term, URIRef) and NOT_IN_IRI.search(term) for triple in sink.triples for term in triple):
        return None
    named = {str(v): k for k, v in labels.items()}
    return [(s, p, o, named) for s, p, o in sink.triples]


def _short(iri: str) -> str:
    rest = iri.removeprefix(WD)
    return rest if iri.startswith(WD) and re.fullmatch("[QP][0-9]+", rest) and rest.isascii() else iri


def store_rows(triples: list[tuple[Any, Any, Any, dict[str, str]]], languages: tuple[str, ...], keep: Filter) -> dict[str, list[tuple]]:
    """rdflib's triples as the store's rows, by the rules docs/wikidata-at-scale.md states: claims
    of direct properties, labels in the languages asked, property types and direct predicates;
    redirects between two entities; with a filter, a subject's run of claims kept when it is a property, is asked for, or is an
    instance (P31) of a class asked for."""
    from rdflib import BNode, Literal, URIRef

    out: dict[str, list[tuple]] = {"labels": [], "claims": [], "properties": [], "redirects": []}
    run: list[tuple] = []

    def flush() -> None:
        if run:
            subject = run[0][0]
            if keep.everything or subject.startswith("P") or subject in keep.qids or any(c[1] == "P31" and c[2] in keep.classes for c in run):
                out["claims"].extend(run)
            run.clear()

    kinds = {LABEL: "label", ALIAS: "alias", DESCRIPTION: "description"}
    for s, p, o, named in triples:
        if not isinstance(s, URIRef):
            continue
        sid, pred = _short(str(s)), str(p)
        if pred.startswith(WDT) and re.fullmatch("P[0-9]+", pred[len(WDT) :]):
            if isinstance(o, URIRef):
                value = _short(str(o))
                claim = (sid, pred[len(WDT) :], value, "item" if value != str(o) else "uri", "", "", None, None)
            elif isinstance(o, BNode):
                claim = (sid, pred[len(WDT) :], "_:" + named[str(o)], "bnode", "", "", None, None)
            else:
                datatype = "" if o.datatype in (None, URIRef(XSD + "string")) else str(o.datatype)
                claim = (sid, pred[len(WDT) :], str(o), "literal", datatype, o.language or "", None, None)
            if run and run[0][0] != sid:
                flush()
            run.append(claim)
        elif pred in kinds and isinstance(o, Literal) and o.language in languages:
            out["labels"].append((sid, kinds[pred], o.language, str(o)))
        elif pred == ONTOLOGY + "propertyType" and str(o).startswith(ONTOLOGY) and re.fullmatch("[A-Za-z]+", str(o)[len(ONTOLOGY) :]):
            out["properties"].append((sid, str(o)[len(ONTOLOGY) :], False))
        elif pred == ONTOLOGY + "directClaim" and re.fullmatch("P[0-9]+", sid) and str(o) == WDT + sid:
            out["properties"].append((sid, "", True))
        elif pred == SAME_AS and sid != str(s) and isinstance(o, URIRef) and _short(str(o)) != str(o):
            out["redirects"].append((sid, _short(str(o))))
    flush()
    return _sorted(out)


# ---------------------------------------------------------------- the differential check


def fuzz(seed: int, blocks: int) -> dict[str, int]:
    """`blocks` generated blocks from `seed`, each held to the rules of the module docstring under
    every filter; what was generated, in figures."""
    rng = random.Random(seed)
    seen = {"lines": 0, "well-formed lines": 0, "malformed": 0, "rows": 0}
    for _ in range(blocks):
        data = block(rng)
        lines = data.split(b"\n")
        parsed = {i: rdflib_triples(line) for i, line in enumerate(lines) if line.strip()}
        good = [i for i, t in parsed.items() if t is not None]
        well_formed = b"".join(lines[i] + b"\n" for i in good)
        seen["lines"] += len(lines) - (not lines[-1])
        seen["well-formed lines"] += len(good)
        for languages, keep in FILTERS:
            pattern, columns, bad_pattern, bad_columns = read_both(data, languages, keep)
            assert columns == pattern, (seed, languages, keep, _first_difference(columns, pattern), data.decode("utf-8", "replace"))
            assert bad_columns == bad_pattern, (seed, languages, keep, bad_columns, bad_pattern, data.decode("utf-8", "replace"))
            seen["malformed"] += len(bad_pattern)
            seen["rows"] += sum(map(len, pattern.values()))
            expected = store_rows([t for i in good for t in parsed[i] or []], languages, keep)
            pattern, columns, _, _ = read_both(well_formed, languages, keep)
            assert pattern == columns == expected, (seed, languages, keep, _first_difference(pattern, expected), well_formed.decode())
    return seen


def _first_difference(got: dict[str, list[tuple]], want: dict[str, list[tuple]]) -> Any:
    for name in want:
        extra, missing = sorted(set(got[name]) - set(want[name]), key=repr), sorted(set(want[name]) - set(got[name]), key=repr)
        if extra or missing:
            return name, "only in the first:", extra[:3], "only in the second:", missing[:3]
    return "the same rows, other counts"
