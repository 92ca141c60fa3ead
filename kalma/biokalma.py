"""The one reader of the KaLMA authors' public release (complex/simple_question_graph.json).

Each file is a JSON list of `[question, graphs]`; each graph is a flat
`{property label: value label}` dict with `qid`, `name`, `date_of_birth`, `date_of_death`.
The two files are index-aligned (specific and general questions). The release has no minimum
knowledge sets, so imported entries carry `minimum_set=None`.

Both importers (`kalma dataset import-biokalma` and `kalma kg import-biokalma`) read facts
through `release_facts`, so they agree on properties, dates and what is skipped.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .properties import Vocabulary
from .schema import ISO_DATE_RE, PID_RE, QID_RE, DatasetEntry, EntityGraph, KnowledgeGraph, Triple, same_question

_PREFIX = re.compile(r"^\s*question\s*:\s*", re.IGNORECASE)
DATE_KEYS = {"date_of_birth": "date of birth", "date_of_death": "date of death"}

RawGraph = dict[str, Any]


@dataclass(frozen=True)
class ReleaseFact:
    key: str  # the release's own key, e.g. `date_of_birth`, `notable works`
    pid: str  # the Wikidata PID where the built-in property table is sure of it, else ""
    label: str  # the relation label kept: the release key, dates spelled as Wikidata does
    value: str
    is_date: bool


def strip_question_prefix(q: str) -> str:
    """`question: Who was …` → `Who was …` (978 general questions of the release kept it)."""
    return _PREFIX.sub("", q).strip()


def release_facts(graph: RawGraph, skipped: Counter[str] | None = None) -> list[ReleaseFact]:
    """The usable facts of one release graph; empty values and non-ISO dates (empty or
    "unknown value" ids) are counted in `skipped` by reason."""
    skipped = skipped if skipped is not None else Counter()
    vocab = Vocabulary.default()
    out = []
    for key, value in graph.items():
        if key in {"qid", "name"} or not isinstance(value, str):
            continue
        if key in DATE_KEYS:
            if not ISO_DATE_RE.match(value):
                skipped["dates_skipped"] += 1
                continue
            label = DATE_KEYS[key]
        elif not value.strip():
            skipped["empty_values"] += 1
            continue
        else:
            label = key
        identity = vocab.identity(key)
        out.append(ReleaseFact(key, identity if PID_RE.match(identity) else "", label, value, key in DATE_KEYS))
    return out


def read_release_raw(path: str | Path) -> list[tuple[str, list[RawGraph]]]:
    """[(question, [graph dict, ...]), ...], with an error naming the file and item when the
    file is not the release format."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a JSON release file ({exc})") from exc
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of [question, graphs], found {type(data).__name__}")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, list) or not item or not isinstance(item[0], str):
            raise ValueError(f"{path}: item {i}: expected [question, graphs]")
        graphs = item[1] if len(item) > 1 else []
        if not isinstance(graphs, list) or not all(isinstance(g, dict) for g in graphs):
            raise ValueError(f"{path}: item {i}: graphs must be a list of objects")
        for j, g in enumerate(graphs):  # a graph is a person: without a QID it could only be dropped
            if not isinstance(g.get("qid"), str) or not QID_RE.match(g["qid"]):
                raise ValueError(f"{path}: item {i}, graph {j}: field 'qid': not a Wikidata id: {g.get('qid')!r}")
        out.append((item[0], graphs))
    return out


def graph_from_release(graph: RawGraph) -> EntityGraph:
    """One release graph (its QID checked by `read_release_raw`) as an EntityGraph; values are
    labels (the release has no value QIDs)."""
    qid = str(graph["qid"])
    name = graph.get("name")
    if not isinstance(name, str) or not name:
        name = qid
    triples = [
        Triple(
            subject=qid,
            subject_label=name,
            relation=f.pid,
            relation_label=f.label,
            value=f.value,
            value_label=f.value,
            value_type="literal" if f.is_date else "item",
        )
        for f in release_facts(graph)
    ]
    return EntityGraph(qid=qid, label=name, triples=triples)


def read_release(path: str | Path) -> list[tuple[str, list[EntityGraph]]]:
    return [(q, [graph_from_release(x) for x in graphs]) for q, graphs in read_release_raw(path)]


def release_entries(specific: str | Path, general: str | Path | None = None) -> list[DatasetEntry]:
    """Dataset entries from the release: ids `biokalma-<index>`, minimum set unknown.

    Without the `general` file, entries have no general question (never a copy of the specific
    one); where the release pairs a general question with the same text as its specific one (11
    items), the entry keeps the specific question only and says so in `meta`."""
    spec = read_release(specific)
    gen = [q for q, _ in read_release(general)] if general else [""] * len(spec)
    if len(gen) != len(spec):
        raise ValueError(f"{general}: {len(gen)} items but {specific} has {len(spec)}; the files must be index-aligned")
    out = []
    for i, ((sq, graphs), gq) in enumerate(zip(spec, gen)):
        specific_q, general_q = strip_question_prefix(sq), strip_question_prefix(gq)
        meta: dict[str, Any] = {"source": "biokalma-release", "index": i}
        if general_q and same_question(general_q, specific_q):
            general_q, meta["general_question"] = "", "the release's general question is the specific one: dropped"
        out.append(
            DatasetEntry(
                id=f"biokalma-{i}",
                specific_question=specific_q,
                general_question=general_q,
                people=[g.qid for g in graphs],
                knowledge_pool=KnowledgeGraph(entities=graphs),
                minimum_set=None,
                meta=meta,
            )
        )
    return out
