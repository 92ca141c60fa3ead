"""Name disambiguation (paper §2.2): the pair of entities linked by the relation's property.

Candidates come from an exact label/alias look-up restricted to each end's classes (people, Q5,
for the relation table's kinship and teaching relations; subclasses included), one look-up per
class so that each candidate is known by the class it was found in. Among all candidate pairs,
the ones linked by the property the relation maps to (either direction) are kept: exactly one
pair resolves the record; none or several are reported, never guessed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kalma.classes import PROPERTY_ID
from kalma.kg.base import KnowledgeSource
from kalma.schema import SeedRecord

from .records import Classes

# Relation (as the records name it) → the Wikidata property that links the two people.
RELATION_PROPERTIES: dict[str, str] = {
    "spouse": "P26",
    "husband": "P26",
    "wife": "P26",
    "father": "P22",
    "mother": "P25",
    "parent": "P40",  # a parent is linked to the child by P40 (child), in either direction
    "child": "P40",
    "son": "P40",
    "daughter": "P40",
    "sibling": "P3373",
    "brother": "P3373",
    "sister": "P3373",
    "student": "P802",
    "student of": "P1066",
    "teacher": "P1066",
    "doctoral advisor": "P184",
    "doctoral student": "P185",
    "relative": "P1038",
}


def load_relation_table(path: str | Path | None) -> dict[str, str]:
    """The default table, overridden/extended by a JSON object {relation: PID} when given."""
    table = dict(RELATION_PROPERTIES)
    if path:
        extra = json.loads(Path(path).read_text(encoding="utf-8-sig"))
        bad = {k: v for k, v in extra.items() if not str(v).startswith("P")}
        if bad:
            raise ValueError(f"{path}: not property ids: {bad}")
        table.update({k.lower(): v for k, v in extra.items()})
    return table


@dataclass
class Resolution:
    record: SeedRecord
    status: str  # "resolved" | "unlinked" | "ambiguous" | "not found"
    qid_a: str | None = None
    qid_b: str | None = None
    candidates_a: tuple[str, ...] = ()
    candidates_b: tuple[str, ...] = ()
    class_a: str = ""  # the class each was found in ("" when any class was looked in)
    class_b: str = ""


def property_of(relation: str, table: dict[str, str]) -> str:
    """The property a record's relation names: itself when it is a property id."""
    return relation if PROPERTY_ID.fullmatch(relation) else table[relation]


def disambiguate(
    records: list[SeedRecord], source: KnowledgeSource, table: dict[str, str], classes: list[tuple[Classes, Classes]] | None = None
) -> tuple[list[Resolution], Counter[str]]:
    """Resolve all records with one batched look-up per class and one batched link check.
    `classes`: each record's (class_a, class_b) classes; people for every record by default."""
    ends = classes or [(("Q5",), ("Q5",))] * len(records)
    wanted: dict[str, set[str]] = {}  # class ("" for any) -> the names looked up in it
    for r, (ka, kb) in zip(records, ends):
        for name, end in ((r.person_a, ka), (r.person_b, kb)):
            for c in end or ("",):
                wanted.setdefault(c, set()).add(name)
    found: dict[tuple[str, str], list[str]] = {}  # (class, name) -> candidates
    for c, names in sorted(wanted.items()):
        for name, qids in source.lookup(sorted(names), [c] if c else []).items():
            found[(c, name)] = qids

    def candidates(name: str, end: Classes) -> dict[str, str]:
        """{QID: the first of `end`'s classes it was found in}."""
        out: dict[str, str] = {}
        for c in end or ("",):
            for q in found[(c, name)]:
                out.setdefault(q, c)
        return out

    cands = [(candidates(r.person_a, ka), candidates(r.person_b, kb)) for r, (ka, kb) in zip(records, ends)]
    asks = {(a, property_of(r.relation, table), b) for r, (ca, cb) in zip(records, cands) for a in ca for b in cb if a != b}
    links = source.linked(sorted(asks)) if asks else set()
    out = []
    for r, (ca, cb) in zip(records, cands):
        if not ca or not cb:
            out.append(Resolution(r, "not found", candidates_a=tuple(ca), candidates_b=tuple(cb)))
            continue
        pid = property_of(r.relation, table)
        pairs = [(a, b) for a in ca for b in cb if a != b and (a, pid, b) in links]
        status = "resolved" if len(pairs) == 1 else ("unlinked" if not pairs else "ambiguous")
        a, b = pairs[0] if len(pairs) == 1 else (None, None)
        out.append(Resolution(r, status, a, b, tuple(ca), tuple(cb), ca.get(a or "", ""), cb.get(b or "", "")))
    return out, Counter(x.status for x in out)
