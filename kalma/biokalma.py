"""Reader for the KaLMA authors' public release (complex/simple_question_graph.json).

Each file is a JSON list of `[question, graphs]`; each graph is a flat
`{property label: value label}` dict with `qid`, `name`, `date_of_birth`, `date_of_death`.
The two files are index-aligned (specific and general questions). The release has no minimum
knowledge sets, so imported entries carry `minimum_set=None`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .schema import DatasetEntry, EntityGraph, KnowledgeGraph, Triple

_PREFIX = re.compile(r"^\s*question\s*:\s*", re.IGNORECASE)
_DATE_KEYS = {"date_of_birth": ("P569", "date of birth"), "date_of_death": ("P570", "date of death")}
_ISO = re.compile(r"^-?\d{1,4}-\d{2}-\d{2}$")


def strip_question_prefix(q: str) -> str:
    """`question: Who was …` → `Who was …` (978 general questions of the release kept it)."""
    return _PREFIX.sub("", q).strip()


def graph_from_release(graph: dict[str, str]) -> EntityGraph | None:
    """One release graph as an EntityGraph (no PIDs except dates; values are labels)."""
    from .kg.snapshot import KNOWN_PIDS

    qid = graph.get("qid", "")
    if not re.fullmatch(r"Q\d+", qid):
        return None
    name = graph.get("name") or qid
    triples = []
    for key, value in graph.items():
        if key in {"qid", "name"} or not isinstance(value, str) or not value.strip():
            continue
        if key in _DATE_KEYS:
            if not _ISO.match(value):
                continue  # empty or "unknown value" ids
            pid, label, kind = *_DATE_KEYS[key], "literal"
        else:
            pid, label, kind = KNOWN_PIDS.get(key, ""), key, "item"
        triples.append(Triple(subject=qid, subject_label=name, relation=pid, relation_label=label,
                              value=value, value_label=value, value_type=kind))  # type: ignore[arg-type]
    return EntityGraph(qid=qid, label=name, triples=triples)


def read_release(path: str | Path) -> list[tuple[str, list[EntityGraph]]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, list) or not item or not isinstance(item[0], str):
            raise ValueError(f"{path}: item {i}: expected [question, graphs]")
        graphs = [g for g in (graph_from_release(x) for x in (item[1] if len(item) > 1 else [])) if g]
        out.append((item[0], graphs))
    return out


def release_entries(specific: str | Path, general: str | Path | None = None) -> list[DatasetEntry]:
    """Dataset entries from the release: ids `biokalma-<index>`, minimum set unknown."""
    spec = read_release(specific)
    gen = read_release(general) if general else [(q, g) for q, g in spec]
    if len(gen) != len(spec):
        raise ValueError(f"{general}: {len(gen)} items but {specific} has {len(spec)}; the files must be index-aligned")
    return [
        DatasetEntry(
            id=f"biokalma-{i}",
            specific_question=strip_question_prefix(sq),
            general_question=strip_question_prefix(gq),
            people=[g.qid for g in graphs],
            knowledge_pool=KnowledgeGraph(entities=graphs),
            minimum_set=None,
            meta={"source": "biokalma-release", "index": i},
        )
        for i, ((sq, graphs), (gq, _)) in enumerate(zip(spec, gen))
    ]
