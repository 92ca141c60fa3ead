"""The N-Triples of Wikidata's truthy dumps as the store reads them: one grammar, which both
parsers take from here (`dumps.NTriples`, a compiled pattern over a block's bytes, and `columnar`,
polars columns over a block's lines), so that the two cannot drift apart.
`tests/unit/test_ntriples_fuzz.py` holds them to identical rows and malformed lines on generated
lines, and to rdflib's N-Triples parser on the well-formed ones.

A line the store reads is `<S> <P> O .` with one space between the terms (as Wikidata writes
them), spaces or tabs around the final dot, and a carriage return before the newline allowed:

- a **claim**: P is a direct property (`wdt:P…`: `DIRECT` and a property id), O an IRI, a blank
  node or a literal (`read_object`);
- a **label, alias or description**: P one of `LABELS`, O a literal in a language asked;
- a property's **type** (`PROPERTY_TYPE`, O `wikibase:` and a type name) and its **direct
  predicate** (`DIRECT_CLAIM`, O the `wdt:` IRI of the subject's own id);
- a **redirect**: P is `SAME_AS` (`owl:sameAs`), S and O both a Wikidata entity's IRI: S was
  merged into O (how Wikidata's RDF dumps write a redirect).

Every other line is skipped, except a claim line (`is_claim_line`) that does not parse, and a
line read with bytes that are not UTF-8 (`repaired`): those are malformed, counted and named.
An entity is its id (`Q42`, `P31`: `is_entity`), any other IRI is kept whole (`short`).
"""

from __future__ import annotations

import re

WD = "http://www.wikidata.org/entity/"
DIRECT = "http://www.wikidata.org/prop/direct/"  # a claim's predicate: this and a property id
ONTOLOGY = "http://wikiba.se/ontology#"
PROPERTY_TYPE = ONTOLOGY + "propertyType"
DIRECT_CLAIM = ONTOLOGY + "directClaim"
SAME_AS = "http://www.w3.org/2002/07/owl#sameAs"  # a redirect: the old id's, to the surviving id
XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"  # a literal of this datatype is stored as a plain one
LABELS = {
    "http://www.w3.org/2000/01/rdf-schema#label": "label",
    "http://www.w3.org/2004/02/skos/core#altLabel": "alias",
    "http://schema.org/description": "description",
}
LABEL_REPEATS = ("http://www.w3.org/2004/02/skos/core#prefLabel", "http://schema.org/name")  # a label written twice more, skipped

# Terms as regular expressions that Python's `re` and polars (Rust's regex) read alike: ASCII
# classes only (Rust's `\s` and `\d` are Unicode).
ENTITY = "[QP][0-9]+"  # an entity id (a lexeme's `L…` is none)
PROPERTY = "P[0-9]+"
TYPE_NAME = "[A-Za-z]+"  # a property type's name after `wikibase:`
LANG = "[A-Za-z0-9-]+"  # a language tag as the dumps write them (`en`, `de-ch`, `be-tarask`)
SPACE = " \t\n\r\x0b\x0c"  # what the ASCII `\s` matches
SUBJECT = f"[^>{SPACE}]+"  # inside a subject's brackets: no `>`, no space of any kind
LITERAL = r'(?:[^"\\\n]|\\.)*'  # inside a literal's quotes: escapes, and no quote, backslash or newline of its own
END = "[ \t]*\\.[ \t]*\r?$"  # spaces or tabs around the final dot, a CR before the newline

# Markers, as substrings of a line. A claim's predicate after its subject; a property's
# directClaim line holds the same words as its object, after `DIRECT_OBJECT`'s first words.
CLAIM = f"> <{DIRECT}P"
DIRECT_OBJECT = f" <{DIRECT_CLAIM}{CLAIM}"
COMMON_END = " .\n"  # how Wikidata ends a line: the columns read the lines ending so

_ENTITY = re.compile(ENTITY)
_OBJECT = re.compile(rf'<([^>]*)>|"({LITERAL})"(?:@({LANG})|\^\^<([^>]*)>)?|(_:[^{SPACE}]+)'.encode())
_CLAIM, _DIRECT_OBJECT = CLAIM.encode(), DIRECT_OBJECT.encode()
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_SIMPLE = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}

Object = tuple[str, str, str, str]  # value, value_type (item | uri | literal | bnode), datatype, lang


def is_entity(value: str) -> bool:
    """An entity id: Q or P, then ASCII digits (`str.isdigit` alone takes `²` and `٣`)."""
    return _ENTITY.fullmatch(value) is not None


def short(iri: str) -> str:
    """`Q42` for a Wikidata entity IRI; any other IRI as it is."""
    if iri.startswith(WD) and is_entity(iri[len(WD) :]):
        return iri[len(WD) :]
    return iri


def unescape(text: str) -> str:
    """An N-Triples string's escapes (`\\u00e9`, `\\U0001F600`, `\\"`, `\\n`, …) as characters; an
    escape that names no character (past U+10FFFF, or half a UTF-16 pair alone) as U+FFFD, as
    bytes that are not UTF-8 are read (a pair of `\\u` halves is the character they make)."""
    if "\\" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        if m.group(1) or m.group(2):
            code = int(m.group(1) or m.group(2), 16)
            return chr(code) if code <= 0x10FFFF else "\ufffd"
        return _SIMPLE.get(m.group(3), "\\" + m.group(3))

    out = _ESCAPE.sub(one, text)
    try:
        out.encode()
    except UnicodeEncodeError:  # UTF-16 halves: a pair joined, one alone replaced
        out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return out


def read_object(term: bytes) -> Object | None:
    """A claim's object as the store keeps it; None for a term that is no IRI, literal or blank node."""
    m = _OBJECT.fullmatch(term)
    if m is None:
        return None
    iri, lexical, lang, datatype, bnode = m.groups()
    if iri is not None:
        value = short(iri.decode())
        return value, "item" if is_entity(value) else "uri", "", ""
    if bnode is not None:
        return bnode.decode(), "bnode", "", ""
    dt = datatype.decode() if datatype else ""
    return unescape(lexical.decode()), "literal", "" if dt == XSD_STRING else dt, lang.decode() if lang else ""


def is_claim_line(line: bytes) -> bool:
    """Whether a line states a claim, parsed or not (a line that does not parse is then
    malformed): its first `CLAIM` marker is not a directClaim line's object, nor inside a literal
    (after a space and a quote). Every line with a claim's predicate holds `CLAIM`, and each of
    its markers not in `DIRECT_OBJECT` counts once: `claim_lines_at_most`."""
    at = line.find(_CLAIM)
    if at < 0:
        return False
    start = at + len(_CLAIM) - len(_DIRECT_OBJECT)
    return not (start >= 0 and line.startswith(_DIRECT_OBJECT, start)) and line.rfind(b' "', 0, at) < 0


def claim_lines_at_most(block: bytes | bytearray) -> int:
    """At least the number of the block's claim lines (`is_claim_line`), in two substring counts."""
    return block.count(_CLAIM) - block.count(_DIRECT_OBJECT)


def repaired(block: bytes | bytearray) -> tuple[bytes | bytearray, set[int]]:
    """The block with each byte that is not UTF-8 read as U+FFFD (as Python's `replace` and the
    columns read it), and which of its lines, from 0, held such bytes; the block itself when
    it is UTF-8."""
    if block.isascii():
        return block, set()
    try:
        block.decode()
        return block, set()
    except UnicodeDecodeError:
        pass
    lines = bytes(block).split(b"\n")
    broken = set()
    for i, line in enumerate(lines):
        try:
            line.decode()
        except UnicodeDecodeError:
            broken.add(i)
            lines[i] = line.decode("utf-8", "replace").encode()
    return b"\n".join(lines), broken


# ---------------------------------------------------------------- writing: reading's inverse


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}"


def quote(text: str) -> str:
    """`text` as an N-Triples string literal, non-ASCII escaped as many dumps write it."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return '"' + (body if body.isascii() else _NON_ASCII.sub(_escape, body)) + '"'  # most labels are ASCII: no pass per character


def iri(value: str) -> str:
    """An entity id, or any other IRI, as an N-Triples term."""
    return f"<{WD}{value}>" if is_entity(value) else f"<{value}>"


def term(value: str, value_type: str, datatype: str, lang: str) -> str:
    """A claim's object as a dump writes it (what `read_object` reads back)."""
    if value_type in ("item", "uri"):
        return iri(value)
    if value_type == "bnode":
        return value
    return quote(value) + (f"@{lang}" if lang else f"^^<{datatype}>" if datatype else "")
