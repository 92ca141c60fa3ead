"""Person selection (paper §2.2): relation records → pairs of complete names.

A relation record is a paragraph with (person A, relation, person B), read from CSV or JSONL
with configurable column names. Only complete names (a given name and a family name) are kept;
the report says how many records each filter removed and why.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kalma.schema import SeedRecord

DEFAULT_COLUMNS = {"paragraph": "paragraph", "person_a": "person_a", "relation": "relation", "person_b": "person_b"}
_NAME_PART = re.compile(r"^[A-ZÀ-ÖØ-Þ][\w'’.-]*$")
_CONNECTORS = {"de", "da", "di", "del", "della", "van", "von", "der", "den", "le", "la", "du", "y", "bin", "ibn", "al"}


def is_complete_name(name: str) -> bool:
    """A given name and a family name: two or more capitalised words that are not initials.

    >>> [is_complete_name(n) for n in ["Artemisia Gentileschi", "Artemisia", "J. Smith", "Ludwig van Beethoven", "the painter"]]
    [True, False, False, True, False]
    """
    parts = name.split()
    named = [p for p in parts if p.lower() not in _CONNECTORS]
    if len(named) < 2 or not all(_NAME_PART.match(p) for p in named):
        return False
    return not any(len(p.rstrip(".")) <= 1 for p in named)


@dataclass
class Selection:
    records: list[SeedRecord]
    removed: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def report(self) -> dict[str, object]:
        return {"kept": len(self.records), "removed": dict(self.removed), "examples": self.examples}


def read_records(path: str | Path, columns: dict[str, str] | None = None, relations: set[str] | None = None) -> Selection:
    """Read and filter relation records. `relations`: the relation names the builder can map to
    a property; records with others are removed (and counted)."""
    path = Path(path)
    cols = {**DEFAULT_COLUMNS, **(columns or {})}
    rows: list[tuple[int, dict[str, str]]]
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    if path.suffix.lower() == ".csv":
        rows = [(i + 2, r) for i, r in enumerate(csv.DictReader(io.StringIO(text, newline="")))]  # line 1 is the header
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
    sel = Selection(records=[])
    seen: set[tuple[str, str, str]] = set()

    def drop(reason: str, line: int, detail: str) -> None:
        sel.removed[reason] += 1
        sel.examples.setdefault(reason, f"{path}:{line}: {detail}")

    for line, row in rows:
        missing = [k for k, c in cols.items() if not str(row.get(c) or "").strip()]
        if missing:
            drop("missing field", line, f"no {', '.join(cols[m] for m in missing)}")
            continue
        a, rel, b = (" ".join(str(row[cols[k]]).split()) for k in ("person_a", "relation", "person_b"))
        if not is_complete_name(a) or not is_complete_name(b):
            drop("incomplete name", line, f"{a!r} / {b!r}")
            continue
        if relations is not None and rel.lower() not in relations:
            drop("unmapped relation", line, rel)
            continue
        if (a, rel.lower(), b) in seen:
            drop("duplicate", line, f"{a} {rel} {b}")
            continue
        seen.add((a, rel.lower(), b))
        sel.records.append(
            SeedRecord(paragraph=str(row[cols["paragraph"]]).strip(), person_a=a, relation=rel.lower(), person_b=b, source=str(path.name), source_line=line)
        )
    return sel
