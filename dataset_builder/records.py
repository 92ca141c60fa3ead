"""Record selection (paper §2.2): relation records → pairs of names.

A relation record is a paragraph with (entity A, relation, entity B), read from CSV or JSONL
with configurable column names (the columns keep the paper's `person_a`/`person_b` names). The
relation is a label of the relation table or a Wikidata property id (`P159`); optional `class_a`
and `class_b` columns name the Wikidata classes each end is looked up in (`Q43229`, several as
`Q515|Q1549591`). For people only (a class whose `person` is set, `kalma.classes`), complete names
are kept (a given name and a family name): a title and one name ("Lady Liu", "Emperor Wu") is not
one; the name of anything else need only be a label or alias the KG knows. Every removed record
is kept with its line and reason (`RemovedRecord`), for the report written beside the dataset.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kalma.classes import CLASS_ID, PROPERTY_ID, entity_class
from kalma.schema import RemovedRecord, SeedRecord

DEFAULT_COLUMNS = {"paragraph": "paragraph", "person_a": "person_a", "relation": "relation", "person_b": "person_b"}
CLASS_COLUMNS = ("class_a", "class_b")  # optional: the classes each end is looked up in
PEOPLE = ("Q5",)  # the classes of a record whose relation is a label of the (kinship and teaching) relation table
Classes = tuple[str, ...]
_NAME_PART = re.compile(r"^[A-ZÀ-ÖØ-Þ][\w'’.-]*$")
_CONNECTORS = {"de", "da", "di", "del", "della", "van", "von", "der", "den", "le", "la", "du", "y", "bin", "ibn", "al"}
# Titles, ranks and honorifics that open a name: "Lady Liu" or "Emperor Wu" is a title and one
# name, neither a given name nor a family name. Several may open one name ("Grand Duke").
TITLES = frozenset(
    """lady lord sir dame king queen prince princess emperor empress duke duchess count countess earl baron baroness
    marquess marquis viscount archduke archduchess grand crown tsar czar tsarina kaiser sultan sultana shah pharaoh
    caliph maharaja raja rani pope saint st st. mr mr. mrs mrs. ms ms. miss dr dr. doctor prof prof. professor rev rev.
    reverend father brother sister mother general admiral captain colonel marshal president chancellor senator
    bishop archbishop cardinal rabbi imam sheikh madame monsieur mademoiselle don doña herr frau""".split()
)
_REGNAL = re.compile(r"^[IVXLC]+$")  # "Henry VIII": a regnal number, not a family name


def name_problem(name: str) -> str | None:
    """Why `name` is not a complete name (a given name and a family name), or None.

    >>> [name_problem(n) for n in ["Artemisia Gentileschi", "Ludwig van Beethoven", "Sir Isaac Newton", "Artemisia", "J. Smith"]]
    [None, None, None, 'incomplete name', 'incomplete name']
    >>> [name_problem(n) for n in ["Lady Liu", "Lord Byron", "Emperor Wu", "Grand Duke Michael", "Henry VIII"]]
    ['title with one name', 'title with one name', 'title with one name', 'title with one name', 'incomplete name']
    """
    parts = name.split()
    titled = 0
    while titled < len(parts) - 1 and parts[titled].lower() in TITLES:
        titled += 1
    named = [p for p in parts[titled:] if p.lower() not in _CONNECTORS and not _REGNAL.match(p)]
    if len(named) >= 2 and all(_NAME_PART.match(p) for p in named) and not any(len(p.rstrip(".")) <= 1 for p in named):
        return None
    return "title with one name" if titled and len(named) == 1 else "incomplete name"


def is_complete_name(name: str) -> bool:
    """A given name and a family name (a title before them is allowed; a title and one name is not).

    >>> [is_complete_name(n) for n in ["Artemisia Gentileschi", "Artemisia", "J. Smith", "Ludwig van Beethoven", "the painter", "Lady Ashcombe"]]
    [True, False, False, True, False, False]
    """
    return name_problem(name) is None


@dataclass
class Selection:
    records: list[SeedRecord]
    removed: list[RemovedRecord] = field(default_factory=list)
    # (line, field) -> classes that end is looked up in; () is any class
    classes: dict[tuple[int, str], Classes] = field(default_factory=dict)

    def of(self, record: SeedRecord) -> tuple[Classes, Classes]:
        line = record.source_line or 0
        return self.classes[(line, "class_a")], self.classes[(line, "class_b")]

    def counts(self) -> dict[str, int]:
        return dict(Counter(r.reason for r in self.removed))

    def report(self) -> dict[str, object]:
        return {"read": len(self.records) + len(self.removed), "kept": len(self.records), "removed": self.counts()}


def read_records(path: str | Path, columns: dict[str, str] | None = None, relations: set[str] | None = None, classes: Classes = ()) -> Selection:
    """Read and filter relation records. `relations`: the relation names the builder can map to
    a property (a property id always can); records with others are removed (and counted).
    `classes`: what both ends are looked up in where a record names none (else people for a
    relation of the table, any class for a property id)."""
    path = Path(path)
    cols = {**DEFAULT_COLUMNS, **(columns or {})}
    rows: list[tuple[int, dict[str, str]]]
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = [(i + 2, r) for i, r in enumerate(reader)]  # line 1 is the header
        absent = [c for c in cols.values() if c not in (reader.fieldnames or [])]
        if reader.fieldnames and absent:
            has = ", ".join(map(repr, reader.fieldnames))
            raise ValueError(f"{path}:1: no column {', '.join(map(repr, absent))} (it has {has}); map yours with --columns FIELD=COLUMN")
    else:
        rows = []
        for i, raw in enumerate(text.splitlines(), start=1):
            if raw.strip():
                try:
                    obj = json.loads(raw)
                except (json.JSONDecodeError, RecursionError) as exc:
                    raise ValueError(f"{path}:{i}: invalid JSON ({getattr(exc, 'msg', 'nested too deeply')})") from None
                if not isinstance(obj, dict):
                    raise ValueError(f"{path}:{i}: expected a JSON object with {', '.join(cols.values())}, found {type(obj).__name__}")
                if "kalma" not in obj:
                    rows.append((i, obj))
    if not rows:
        raise ValueError(f"{path}: no relation records in it: expected {', '.join(cols.values())} per record (CSV rows or JSON lines)")
    absent = [c for c in cols.values() if not any(c in r for _, r in rows)]
    if absent:
        raise ValueError(f"{path}: no record has the field {', '.join(map(repr, absent))}; map yours with --columns FIELD=COLUMN")
    sel = Selection(records=[])
    seen: dict[tuple[str, str, str], int] = {}

    for line, row in rows:
        a, rel, b = (" ".join(str(row.get(cols[k]) or "").split()) for k in ("person_a", "relation", "person_b"))
        pid = rel.upper() if PROPERTY_ID.fullmatch(rel.upper()) else None
        default = classes or (() if pid else PEOPLE)
        ends = (_classes(path, line, row, "class_a") or default, _classes(path, line, row, "class_b") or default)
        why = _why_removed(row, cols, (a, rel, b), relations, seen, ends)
        if why is not None:
            sel.removed.append(
                RemovedRecord(source=path.name, line=line, stage="selection", reason=why[0], detail=why[1], person_a=a, relation=rel, person_b=b)
            )
            continue
        seen[(a, rel.lower(), b)] = line
        sel.classes.update({(line, c): e for c, e in zip(CLASS_COLUMNS, ends)})
        paragraph = str(row[cols["paragraph"]]).strip()
        sel.records.append(SeedRecord(paragraph=paragraph, person_a=a, relation=pid or rel.lower(), person_b=b, source=str(path.name), source_line=line))
    return sel


def _classes(path: Path, line: int, row: dict[str, str], column: str) -> Classes:
    """The classes a record's `column` names (`Q515|Q1549591`); a malformed one is an error."""
    text = str(row.get(column) or "").strip()
    found = tuple(c.strip().upper() for c in text.replace(",", "|").split("|") if c.strip())
    for c in found:
        if not CLASS_ID.fullmatch(c):
            raise ValueError(f"{path}:{line}: {column}: {c!r} is not a Wikidata class id (Q and digits)")
    return found


def _why_removed(
    row: dict[str, str],
    cols: dict[str, str],
    pair: tuple[str, str, str],
    relations: set[str] | None,
    seen: dict[tuple[str, str, str], int],
    ends: tuple[Classes, Classes],
) -> tuple[str, str] | None:
    """(reason, detail) when the record is not kept; the filters apply in this order."""
    a, rel, b = pair
    missing = [k for k, c in cols.items() if not str(row.get(c) or "").strip()]
    if missing:
        return "missing field", f"no {', '.join(cols[m] for m in missing)}"
    for name, end in zip((a, b), ends):
        if any(entity_class(c).person for c in end) and (problem := name_problem(name)):  # the complete-name rule is a person's
            return problem, repr(name)
    if relations is not None and rel.lower() not in relations and not PROPERTY_ID.fullmatch(rel.upper()):
        return "unmapped relation", rel
    if (a, rel.lower(), b) in seen:
        return "duplicate", f"the same pair and relation as line {seen[(a, rel.lower(), b)]}"
    return None


def removed_note(removed: list[RemovedRecord], read: int, removed_file: str) -> str | None:
    """One line saying how many of `read` records were removed and why, each reason with its count
    and the first line it removed (with the detail), so that no record goes in silence; None when
    none was removed.

    >>> why = [(7, "missing field", "no paragraph"), (4, "not found", ""), (9, "missing field", "no person_b")]
    >>> r = [RemovedRecord(source="r.jsonl", line=n, stage="selection", reason=w, detail=d) for n, w, d in why]
    >>> removed_note(r, 60, "ds.removed.jsonl")
    'removed 3 of 60 records: missing field 2 (first r.jsonl:7: no paragraph), not found 1 (first r.jsonl:4); every one is in ds.removed.jsonl'
    """
    if not removed:
        return None
    first: dict[str, RemovedRecord] = {}
    for r in sorted(removed, key=lambda r: r.line):
        first.setdefault(r.reason, r)
    counts = Counter(r.reason for r in removed)
    said = ", ".join(
        f"{why} {n} (first {first[why].source}:{first[why].line}{': ' + first[why].detail if first[why].detail else ''})" for why, n in counts.most_common()
    )
    return f"removed {len(removed)} of {read} records: {said}; every one is in {removed_file}"
