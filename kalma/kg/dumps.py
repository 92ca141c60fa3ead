"""Reading Wikidata's dumps as Wikidata publishes them: `latest-truthy.nt` and `latest-all.json`,
plain or compressed (`.gz`, `.bz2`, `.zst`), into the rows of a local store (`kalma.kg.store`).

- **Decoding** (`open_dump`): gzip through `isal`'s igzip when installed (1.7 GB/s of output on
  one core here, 89 MB whatever the file's size), in a thread of its own when more than one
  thread is allowed (the import's main thread then only cuts blocks), else Python's gzip; bzip2
  through `indexed_bzip2` (parallel), else Python's bz2; zstd through `zstandard`. A parallel
  gzip decoder (`rapidgzip`) was measured and left out: its memory grows with the stream (2.8
  GB for 11.6 GB of output), and on few cores it takes the cores the parsers need. The stream
  is read into large blocks, each a buffer of its own that the decoder fills in place
  (`blocks`); a block always ends at a line end (and, in N-Triples, where a subject's lines
  end), so blocks are independent: what a Spark job needs, and where an import can stop and
  resume.
- **N-Triples** (`NTriples`): one compiled pattern, built from the grammar in
  `kalma.kg.ntriples`, finds block by block only the lines the store keeps (the direct claims
  `wdt:P…`; `rdfs:label`, `skos:altLabel` and `schema:description` in the languages asked;
  `wikibase:propertyType`, `wikibase:directClaim`; `owl:sameAs` between two entities, a
  redirect); every other line (sitelinks, `skos:prefLabel`
  and `schema:name` repeats, other languages, lexemes, normalized ids) is skipped by the pattern
  engine without a Python step. Literals are unescaped as N-Triples defines (`\\u00e9`, `\\"` and
  the other escapes). Where polars is installed, `kalma.kg.columnar` reads the same grammar
  column by column, and hands this parser every line outside Wikidata's common shape.
- **JSON** (`JsonEntities`): one entity a line, parsed with orjson; the truthy statements of
  each property (its preferred ones, else its normal ones; never deprecated; `somevalue` as
  Wikidata's `.well-known/genid` IRI, `novalue` left out) become the same rows the truthy
  N-Triples give, values written as the RDF dump writes them (a date `1953-01-01T00:00:00Z` of
  precision 9, with its precision and calendar model kept beside it). Lexemes, forms and senses
  are left out, as the truthy dump's entity rows leave them. The JSON dump holds no redirects
  (a merged item is simply absent from it): a store imported from it knows none.
- **Subsets** (`Filter`): `classes` (e.g. Q5) and `qids` keep the claims of matching subjects
  only (a subject's lines are contiguous in both dumps); labels are kept for every entity, so
  the neighbours of the people kept keep their names (the store's final step prunes the rest).
- **Malformed input** is counted and its first lines kept, never a stop: a claim line that does
  not parse, a line read with bytes that are not UTF-8 (each such byte read as U+FFFD), or a JSON
  line that is not an entity.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import KalmaError
from . import ntriples as nt
from .ntriples import WD, XSD

GENID = "http://www.wikidata.org/.well-known/genid/"
Block = bytes | bytearray  # a block of a dump: `blocks` yields buffers it cut by truncation
BLOCK = 8 << 20  # bytes a block holds before it is cut at a line end
EXAMPLES = 5  # malformed lines named in a report

# The rows of each table, in column order (`kalma.kg.store.SCHEMA` names and types them).
Label = tuple[str, str, str, str]  # id, kind (label | alias | description), lang, text
Claim = tuple[str, str, str, str, str, str, int | None, str | None]  # subject, pid, value, value_type, datatype, lang, precision, calendar
Prop = tuple[str, str, bool]  # pid, type (ExternalId, WikibaseItem, …; "" unknown), direct claim stated
Redirect = tuple[str, str]  # old id, new id: the old item was merged into the new one


@dataclass
class Rows:
    labels: list[Label] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    props: list[Prop] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels) + len(self.claims) + len(self.props) + len(self.redirects)


@dataclass
class Malformed:
    """Malformed lines: how many, and the first `EXAMPLES` of them, in order: (line, why, text).
    A parser numbers a block's lines from where it is told; `named` moves them on, by the lines of
    the blocks before, as it names them."""

    count: int = 0
    first: list[tuple[int, str, str]] = field(default_factory=list)

    def add(self, line: int, text: Block | str, why: str) -> None:
        self.count += 1
        if len(self.first) < EXAMPLES:
            said = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
            self.first.append((line, why, said[:160]))

    def named(self, name: str, before: int = 0) -> list[str]:
        """The examples as a report names them: `NAME:LINE: why: 'text'`, each line moved on by `before`."""
        return [f"{name}:{line + before}: {why}: {text!r}" for line, why, text in self.first]


@dataclass(frozen=True)
class Filter:
    """Which subjects keep their claims: all, or those of `classes` (by P31) or among `qids`.
    Properties always keep theirs (their inverses, P1696)."""

    classes: frozenset[str] = frozenset()
    qids: frozenset[str] = frozenset()

    @property
    def everything(self) -> bool:
        return not self.classes and not self.qids

    def keeps(self, subject: str, claims: list[Claim]) -> bool:
        if self.everything or subject.startswith("P") or subject in self.qids:
            return True
        return bool(self.classes) and any(c[1] == "P31" and c[2] in self.classes for c in claims)


# ---------------------------------------------------------------- decoding


def dump_format(path: str | Path) -> tuple[str, str]:
    """(`nt` or `json`, the compression: `gz`, `bz2`, `zst` or `""`) from the file's name, else
    its first bytes."""
    name = Path(path).name.lower()
    compression = next((c for c in ("gz", "bz2", "zst") if name.endswith("." + c)), "")
    stem = name[: -len(compression) - 1] if compression else name
    if stem.endswith((".nt", ".ntriples")):
        return "nt", compression
    if stem.endswith((".json", ".jsonl", ".ndjson")):
        return "json", compression
    with open_dump(path, compression) as fh:
        head = fh.read(4096).lstrip()
    return ("json" if head[:1] in (b"[", b"{") else "nt"), compression


def decoder_name(compression: str, threads: int | None = None) -> str:
    """Which decoder `open_dump` uses for `compression` on this machine, with `threads`."""
    if compression == "gz":
        if _has("isal"):
            return "isal igzip, in its own thread" if (threads or os.cpu_count() or 1) > 1 else "isal igzip"
        return "gzip"
    if compression == "bz2":
        return "indexed_bzip2 (parallel)" if _has("indexed_bzip2") else "bz2"
    return "zstandard" if compression == "zst" else "none"


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


class DumpError(KalmaError, ValueError):
    """A dump its decoder cannot read (torn, or not the compression its name says)."""


class _Named:
    """A decoder's stream whose errors name the file: a torn dump ends in one line, not a traceback."""

    def __init__(self, stream: IO[bytes], path: str, compression: str):
        self.stream, self.path, self.compression = stream, path, compression

    def read(self, size: int = -1) -> bytes:
        try:
            return self.stream.read(size)
        except Exception as exc:  # each decoder raises its own kind (IsalError, zstd's, OSError…)
            raise DumpError(f"{self.path}: not a readable {self.compression} stream ({exc})") from None

    def readinto(self, buffer: memoryview) -> int:
        try:
            return _readinto(self.stream, buffer)
        except Exception as exc:
            raise DumpError(f"{self.path}: not a readable {self.compression} stream ({exc})") from None

    def seekable(self) -> bool:
        return bool(getattr(self.stream, "seekable", lambda: False)())

    def seek(self, offset: int) -> int:
        return self.stream.seek(offset)

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> _Named:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_dump(path: str | Path, compression: str | None = None, threads: int | None = None) -> IO[bytes]:
    """The dump's decompressed bytes, through the fastest decoder installed (see the module docstring)."""
    path = str(path)
    compression = dump_format(path)[1] if compression is None else compression
    if not compression:
        return open(path, "rb")
    try:
        if compression == "bz2":  # indexed_bzip2 reads a stream that is no bzip2 as empty: check its start
            with open(path, "rb") as fh:
                bz2.BZ2Decompressor().decompress(fh.read(1 << 20))
        return _Named(_decoder(path, compression, threads or os.cpu_count() or 1), path, compression)  # type: ignore[return-value]
    except Exception as exc:
        raise DumpError(f"{path}: not a readable {compression} stream ({exc})") from None


def _decoder(path: str, compression: str, threads: int) -> IO[bytes]:
    if compression == "gz":
        if _has("isal"):
            from isal import igzip, igzip_threaded

            if threads > 1:  # decoding in its own thread, without the GIL: off the import's main thread
                return igzip_threaded.open(path, "rb", threads=1)  # type: ignore[no-any-return,unused-ignore]
            return igzip.open(path, "rb")  # type: ignore[return-value,unused-ignore]
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if compression == "bz2":
        if _has("indexed_bzip2"):
            import indexed_bzip2

            return indexed_bzip2.open(path, parallelization=threads)  # type: ignore[no-any-return,unused-ignore]
        return bz2.open(path, "rb")
    if compression == "zst":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True, closefd=True)  # type: ignore[return-value,unused-ignore]
    raise ValueError(f"unknown compression {compression!r}")


SNIFF = 1 << 20  # decompressed bytes `check_dump` reads
_NT_ENTITY = re.compile(f"^<{re.escape(WD)}[^>\\s]*> <[^>\\s]+> .*{nt.END}".encode(), re.M)  # a statement about an entity
_JSON_ENTITY = (re.compile(rb'"type"\s*:\s*"(?:item|property|lexeme)"'), re.compile(rb'"id"\s*:\s*"[QPL][0-9]+"'))  # in any order


def check_dump(path: str | Path, fmt: str, compression: str) -> None:
    """Refuse, in one line naming the file and why, a file that is no Wikidata dump (a JSON Lines
    dataset, a text file), before anything is written: the first MiB of an N-Triples dump holds
    lines about Wikidata's entities, and the first line of a JSON dump's array is an entity."""
    with open_dump(path, compression) as fh:
        head = fh.read(SNIFF)
    if fmt == "nt":
        if _NT_ENTITY.search(head):
            return
        why = "the file is empty" if not head.strip() else f"no N-Triples line about a Wikidata entity (<{WD}…>) in its first MiB"
    else:
        first = next((x.strip() for x in head.split(b"\n") if x.strip() not in (b"", b"[")), b"")
        if first.startswith(b"{") and all(p.search(first) for p in _JSON_ENTITY):
            return
        why = "the file is empty" if not first else f"its first line is no entity of Wikidata's JSON dump ({_what_json(first)})"
    raise DumpError(f"{path}: not a Wikidata dump: {why}; nothing was imported")


def _what_json(line: bytes) -> str:
    """What a JSON line holds, in words, for a refusal."""
    try:
        found = json.loads(line.rstrip(b","))
    except ValueError:
        return "not JSON"
    if isinstance(found, dict):
        return f"an object with the keys {', '.join(sorted(found)[:8])}"
    return f"a JSON {type(found).__name__}"


def blocks(stream: IO[bytes], start: int = 0, cut: Any = None, size: int = BLOCK) -> Iterator[tuple[int, Block]]:
    """(offset in the decompressed stream, block) from `start` on; each block ends where
    `cut(block)` says (by default at its last line end), the rest carried to the next.

    Each block is a new buffer that the decoder fills in place and that is cut by truncation:
    its bytes are copied once, where `carry + read()` then a slice copied them twice (the
    import's main thread spent 0.66 CPU-s per GB here, now 0.27 with a threaded decoder)."""
    if start:
        if getattr(stream, "seekable", lambda: False)():
            stream.seek(start)
        else:
            left = start
            while left:
                left -= len(stream.read(min(left, size))) or left
    offset, carry = start, bytearray()
    while True:
        block = bytearray(len(carry) + size)
        block[: len(carry)] = carry
        got = _readinto(stream, memoryview(block)[len(carry) :])
        if not got:
            if carry:
                yield offset, carry if carry.endswith(b"\n") else carry + b"\n"
            return
        del block[len(carry) + got :]
        end = (cut or _line_end)(block)
        if end <= 0:
            carry = block
            continue
        carry = block[end:]
        del block[end:]
        yield offset, block
        offset += end


def _readinto(stream: Any, buffer: memoryview) -> int:
    """`stream.readinto(buffer)`, filled as far as the stream goes (a decoder may return less
    than asked before its end); `read` for a stream without `readinto`."""
    into = getattr(stream, "readinto", None)
    done = 0
    while done < len(buffer):
        if into is None:
            data = stream.read(len(buffer) - done)
            got = len(data)
            buffer[done : done + got] = data
        else:
            got = into(buffer[done:])
        if not got:
            break
        done += got
    return done


def _line_end(block: Block) -> int:
    return block.rfind(b"\n") + 1


# ---------------------------------------------------------------- N-Triples

_LABEL_KINDS = {p.encode(): kind for p, kind in nt.LABELS.items()}


class NTriples:
    """Rows from blocks of a truthy N-Triples dump, by one compiled pattern built from the
    grammar in `kalma.kg.ntriples` (see the module docstring)."""

    def __init__(self, languages: tuple[str, ...] = ("en",), keep: Filter = Filter()):
        langs = "|".join(re.escape(lang) for lang in languages)
        labels = "|".join(re.escape(p) for p in nt.LABELS)
        self.languages, self.keep = languages, keep
        self.pattern = re.compile(
            (
                f"^<({nt.SUBJECT})> <(?:"
                f"{re.escape(nt.DIRECT)}({nt.PROPERTY})> (.+?)"
                f'|({labels})> "({nt.LITERAL})"@({langs})'
                f"|{re.escape(nt.PROPERTY_TYPE)}> <{re.escape(nt.ONTOLOGY)}({nt.TYPE_NAME})>"
                f"|{re.escape(nt.DIRECT_CLAIM)}> <{re.escape(nt.DIRECT)}({nt.PROPERTY})>"
                f"|{re.escape(nt.SAME_AS)}> <{re.escape(nt.WD)}({nt.ENTITY})>"
                f"){nt.END}"
            ).encode(),
            re.M,
        )
        self.pending: tuple[str, list[Claim]] = ("", [])

    @staticmethod
    def cut(block: Block) -> int:
        """Where a block may end: at the start of its last subject's lines (which may go on in
        the next block), or at its last line end when one subject fills it."""
        end = block.rfind(b"\n") + 1
        if end <= 0:
            return 0
        start = block.rfind(b"\n", 0, end - 1) + 1
        subject = block[start : block.find(b" ", start) + 1]
        if not subject.startswith(b"<"):
            return end
        at = start
        while at > 0:
            prev = block.rfind(b"\n", 0, at - 1) + 1
            if not block.startswith(subject, prev):
                return at
            at = prev
        return end  # one subject's lines fill the whole block: cut at a line end all the same

    def parse(self, block: Block, rows: Rows, bad: Malformed, first_line: int = 1) -> None:
        """The rows of a block's lines, numbered from `first_line`; what is malformed into `bad`."""
        block, broken = nt.repaired(block)
        claims = odd = 0  # claim lines found; of them, with an object that is no term
        keep, pending = self.keep, self.pending
        for subject, pid, obj, lpred, text, lang, ptype, direct, target in self.pattern.findall(block):
            sid = nt.short(subject.decode())
            if pid:
                claims += 1
                found = nt.read_object(obj)
                if found is None:
                    odd += 1  # named by its line below
                    continue
                claim = (sid, pid.decode(), *found, None, None)
                if keep.everything:
                    rows.claims.append(claim)
                elif pending[0] == sid:
                    pending[1].append(claim)
                else:
                    self._flush(rows)
                    pending = self.pending = (sid, [claim])
            elif lpred:
                rows.labels.append((sid, _LABEL_KINDS[lpred], lang.decode(), nt.unescape(text.decode())))
            elif ptype:
                rows.props.append((sid, ptype.decode(), False))
            elif direct and direct.decode() == sid:  # the property's own direct-claim predicate
                rows.props.append((sid, "", True))
            elif target and sid != subject.decode():  # a redirect between two entities (not `<Q1>`, no Wikidata IRI)
                rows.redirects.append((sid, target.decode()))
        # a claim line the pattern passed over, or read without its object, or bytes read as U+FFFD:
        # rare, so looked for line by line only then
        if odd or broken or nt.claim_lines_at_most(block) > claims:
            self._name_bad(block, broken, bad, first_line)

    def _flush(self, rows: Rows) -> None:
        subject, claims = self.pending
        if claims and self.keep.keeps(subject, claims):
            rows.claims += claims
        self.pending = ("", [])

    def finish(self, rows: Rows) -> None:
        """At a block's end: a block ends where its last subject's lines end (`cut`)."""
        self._flush(rows)

    def _name_bad(self, block: Block, broken: set[int], bad: Malformed, first_line: int) -> None:
        """Each malformed line of the block once, in order."""
        for i, line in enumerate(bytes(block).split(b"\n")):
            m = self.pattern.match(line)
            if m is None:
                if nt.is_claim_line(line):
                    bad.add(first_line + i, line, "a claim that is not an N-Triples line")
            elif m.group(2) and nt.read_object(m.group(3)) is None:
                bad.add(first_line + i, line, "an object that is no IRI, literal or blank node")
            elif i in broken:
                bad.add(first_line + i, line, "bytes that are not UTF-8 (read as U+FFFD)")


# ---------------------------------------------------------------- JSON

# JSON datatype -> the RDF dump's wikibase:propertyType name
PROPERTY_TYPES = {
    "wikibase-item": "WikibaseItem",
    "wikibase-property": "WikibaseProperty",
    "wikibase-lexeme": "WikibaseLexeme",
    "wikibase-form": "WikibaseForm",
    "wikibase-sense": "WikibaseSense",
    "external-id": "ExternalId",
    "string": "String",
    "monolingualtext": "Monolingualtext",
    "time": "Time",
    "quantity": "Quantity",
    "globe-coordinate": "GlobeCoordinate",
    "url": "Url",
    "commonsMedia": "CommonsMedia",
    "geo-shape": "GeoShape",
    "tabular-data": "TabularData",
    "math": "Math",
    "musical-notation": "MusicalNotation",
    "entity-schema": "EntitySchema",
}
GREGORIAN = WD + "Q1985727"


def truthy(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The statements of one property the truthy dump keeps: the preferred ones if any, else the
    normal ones; never a deprecated one."""
    preferred = [s for s in statements if s.get("rank") == "preferred"]
    return preferred or [s for s in statements if s.get("rank", "normal") == "normal"]


def rdf_time(time: str, precision: int | None) -> str:
    """A JSON time as the RDF dump writes its simple value: sign dropped for CE years, a month or
    day of 00 (coarser precision) as 01.

    >>> rdf_time("+1953-00-00T00:00:00Z", 9), rdf_time("-13798000000-00-00T00:00:00Z", 3)
    ('1953-01-01T00:00:00Z', '-13798000000-01-01T00:00:00Z')
    """
    m = re.match(r"^([+-]?)(\d+)-(\d{2})-(\d{2})(T.*)$", time)
    if not m:
        return time
    sign, year, month, day, rest = m.groups()
    return f"{'-' if sign == '-' else ''}{year}-{month if month != '00' else '01'}-{day if day != '00' else '01'}{rest}"


def _entity_id(value: dict[str, Any]) -> str | None:
    if isinstance(value.get("id"), str):
        return str(value["id"])
    kind, number = value.get("entity-type"), value.get("numeric-id")
    prefix = {"item": "Q", "property": "P", "lexeme": "L"}.get(str(kind))
    return f"{prefix}{number}" if prefix and isinstance(number, int) else None


def snak_value(subject: str, pid: str, statement: dict[str, Any]) -> Claim | None:
    """One statement's main value as the truthy dump writes it; None for `novalue` and for
    values the dump leaves out of its entity rows (lexemes, forms, senses)."""
    snak = statement.get("mainsnak") or {}
    kind = snak.get("snaktype")
    if kind == "somevalue":  # "unknown value": a genid IRI, stable per statement
        digest = hashlib.md5(str(statement.get("id", f"{subject}${pid}")).encode()).hexdigest()
        return (subject, pid, GENID + digest, "uri", "", "", None, None)
    if kind != "value":
        return None
    data = snak.get("datavalue") or {}
    value, vtype, dtype = data.get("value"), data.get("type"), snak.get("datatype", "")
    if vtype == "wikibase-entityid" and isinstance(value, dict):
        eid = _entity_id(value)
        if eid is None or eid[0] not in "QP":
            return None
        return (subject, pid, eid, "item", "", "", None, None)
    if vtype == "time" and isinstance(value, dict):
        precision = value.get("precision")
        return (subject, pid, rdf_time(str(value.get("time", "")), precision), "literal", XSD + "dateTime", "", precision, value.get("calendarmodel"))
    if vtype == "quantity" and isinstance(value, dict):
        amount = str(value.get("amount", "")).lstrip("+")
        return (subject, pid, amount, "literal", XSD + "decimal", "", None, None)
    if vtype == "monolingualtext" and isinstance(value, dict):
        return (subject, pid, str(value.get("text", "")), "literal", "", str(value.get("language", "")), None, None)
    if vtype == "globecoordinate" and isinstance(value, dict):
        point = f"Point({_number(value.get('longitude'))} {_number(value.get('latitude'))})"
        return (subject, pid, point, "literal", "http://www.opengis.net/ont/geosparql#wktLiteral", "", None, None)
    if vtype == "string" and isinstance(value, str):
        if dtype == "url":
            return (subject, pid, value, "uri", "", "", None, None)
        if dtype == "commonsMedia":
            return (subject, pid, "http://commons.wikimedia.org/wiki/Special:FilePath/" + value.replace(" ", "_"), "uri", "", "", None, None)
        return (subject, pid, value, "literal", "", "", None, None)
    return None


def _number(x: Any) -> str:
    return repr(float(x)) if isinstance(x, (int, float)) else str(x)


def entity_rows(entity: dict[str, Any], languages: tuple[str, ...], keep: Filter, rows: Rows) -> bool:
    """An entity of the JSON dump as store rows (labels always; claims when `keep` keeps its
    subject); False when it is no item or property."""
    eid, kind = entity.get("id"), entity.get("type")
    if not isinstance(eid, str) or kind not in ("item", "property"):
        return False
    for key, name in (("labels", "label"), ("descriptions", "description")):
        for lang in languages:
            found = (entity.get(key) or {}).get(lang)
            if isinstance(found, dict) and isinstance(found.get("value"), str):
                rows.labels.append((eid, name, lang, found["value"]))
    for lang in languages:
        for alias in (entity.get("aliases") or {}).get(lang) or []:
            if isinstance(alias, dict) and isinstance(alias.get("value"), str):
                rows.labels.append((eid, "alias", lang, alias["value"]))
    if kind == "property":
        rows.props.append((eid, PROPERTY_TYPES.get(str(entity.get("datatype", "")), ""), True))
    claims: list[Claim] = []
    for pid, statements in (entity.get("claims") or {}).items():
        if isinstance(statements, list):
            claims += [c for s in truthy(statements) if isinstance(s, dict) and (c := snak_value(eid, pid, s)) is not None]
    if keep.keeps(eid, claims):
        rows.claims += claims
    return True


class JsonEntities:
    """Rows from blocks of a JSON dump (one entity a line, in one array)."""

    def __init__(self, languages: tuple[str, ...] = ("en",), keep: Filter = Filter()):
        self.languages, self.keep = languages, keep
        try:
            import orjson

            self.loads: Any = orjson.loads
        except ImportError:  # the standard library's, about 3x slower
            self.loads = json.loads

    cut = staticmethod(_line_end)

    def parse(self, block: Block, rows: Rows, bad: Malformed, first_line: int = 1) -> None:
        for n, line in enumerate(bytes(block).split(b"\n"), start=first_line):  # (a copy: a small cost beside orjson's)
            line = line.strip()
            if line.endswith(b","):
                line = line[:-1]
            if not line or line in (b"[", b"]"):
                continue
            try:
                entity = self.loads(line)
            except ValueError:
                bad.add(n, line, "not a JSON entity")
                continue
            if not isinstance(entity, dict) or "id" not in entity:
                bad.add(n, line, "no entity id")
                continue
            entity_rows(entity, self.languages, self.keep, rows)

    def finish(self, rows: Rows) -> None:
        pass


def entity_nt(entity: dict[str, Any], languages: tuple[str, ...] = ("en",)) -> list[str]:
    """An entity of the JSON dump as the truthy N-Triples dump writes it (its labels three times,
    its aliases, descriptions, truthy claims; a property's type and direct-claim predicate): how
    the fixtures' N-Triples are made from their real JSON, and how the scale generator writes
    both formats of one dump."""
    rows = Rows()
    if not entity_rows(entity, languages, Filter(), rows):
        return []
    written = {kind: [p] for p, kind in nt.LABELS.items()}
    written["label"] += nt.LABEL_REPEATS
    out = []
    for eid, kind, lang, text in rows.labels:
        subject, literal = nt.iri(eid), nt.quote(text)  # once for the label's three lines
        out += [f"{subject} <{p}> {literal}@{lang} ." for p in written[kind]]
    for pid, ptype, _ in rows.props:
        out.append(f"{nt.iri(pid)} <{nt.DIRECT_CLAIM}> <{nt.DIRECT}{pid}> .")
        if ptype:
            out.append(f"{nt.iri(pid)} <{nt.PROPERTY_TYPE}> <{nt.ONTOLOGY}{ptype}> .")
    for subject, pid, value, vtype, datatype, lang, _, _ in rows.claims:
        out.append(f"{nt.iri(subject)} <{nt.DIRECT}{pid}> {nt.term(value, vtype, datatype, lang)} .")
    return out
