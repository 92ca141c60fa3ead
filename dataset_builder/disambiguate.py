"""Name disambiguation (paper §2.2): the pair of humans linked by the relation's property.

Candidates come from an exact label/alias look-up restricted to humans (Q5). Among all
candidate pairs, the ones linked by the property the relation maps to (either direction) are
kept: exactly one pair resolves the record; none or several are reported, never guessed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kalma.kg.base import KnowledgeSource
from kalma.schema import SeedRecord

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


def disambiguate(records: list[SeedRecord], source: KnowledgeSource, table: dict[str, str]) -> tuple[list[Resolution], Counter[str]]:
    """Resolve all records with one batched look-up and one batched link check."""
    names = sorted({n for r in records for n in (r.person_a, r.person_b)})
    found = source.lookup(names, ["Q5"]) if names else {}
    asks = {(a, table[r.relation], b) for r in records for a in found[r.person_a] for b in found[r.person_b] if a != b}
    links = source.linked(sorted(asks)) if asks else set()
    out = []
    for r in records:
        ca, cb = tuple(found[r.person_a]), tuple(found[r.person_b])
        if not ca or not cb:
            out.append(Resolution(r, "not found", candidates_a=ca, candidates_b=cb))
            continue
        pid = table[r.relation]
        pairs = [(a, b) for a in ca for b in cb if a != b and (a, pid, b) in links]
        status = "resolved" if len(pairs) == 1 else ("unlinked" if not pairs else "ambiguous")
        a, b = pairs[0] if len(pairs) == 1 else (None, None)
        out.append(Resolution(r, status, a, b, ca, cb))
    return out, Counter(x.status for x in out)
