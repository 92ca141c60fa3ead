"""Steps 2 and 3, retrieve and rerank: mentions → KG candidates → one graph per mention.

Candidates are the entities whose label or alias equals the mention, filtered by the Wikidata
classes of its NER type (`TYPE_CLASSES`, read from the classes' own `ner_types` in
`kalma.classes`), subclasses included. When several share a
name, the one with the most neighbour values occurring in the question wins; ties go to the
candidate linked to more of the other retrieved entities (networkx), then to the lower QID.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx

from kalma.classes import ner_classes
from kalma.kg.base import KnowledgeSource
from kalma.schema import EntityGraph, KnowledgeGraph

from .ner import Mention

TYPE_CLASSES: dict[str, tuple[str, ...]] = ner_classes()


@dataclass
class Retrieval:
    kg: KnowledgeGraph
    mentions: list[Mention]
    candidates: dict[str, list[str]] = field(default_factory=dict)  # mention → QIDs considered
    chosen: dict[str, str] = field(default_factory=dict)  # mention → QID kept
    scores: dict[str, dict[str, int]] = field(default_factory=dict)  # mention → {QID: overlap}


def occurs(needle: str, text: str) -> bool:
    """Whether `needle` occurs in `text` as whole words (no word character on either side).

    >>> occurs("rome", "born in rome, italy"), occurs("rome", "romeo")
    (True, False)
    """
    start = text.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or not _is_word(text[start - 1])) and (end == len(text) or not _is_word(text[end])):
            return True
        start = text.find(needle, start + 1)
    return False


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def overlap(question: str, graph: EntityGraph) -> int:
    """How many distinct neighbour values occur in the question (word-bounded, any case)."""
    low = question.lower()
    values = {v.lower().strip() for v in graph.values()} - {graph.label.lower()}
    return sum(1 for v in values if len(v) > 1 and occurs(v, low))


def link_graph(graphs: dict[str, EntityGraph]) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(graphs)
    for q, eg in graphs.items():
        for t in eg.triples:
            if t.value in graphs and t.value != q:
                g.add_edge(q, t.value)
    return g


def retrieve(questions: Sequence[str], mentions: Sequence[Sequence[Mention]], source: KnowledgeSource) -> list[Retrieval]:
    """Retrieve for many questions with one look-up per type and one batched subgraph fetch."""
    by_type: dict[str, set[str]] = {}
    for ms in mentions:
        for m in ms:
            if m.label in TYPE_CLASSES:
                by_type.setdefault(m.label, set()).add(m.text)
    hits: dict[tuple[str, str], list[str]] = {}
    for label, names in by_type.items():
        for name, qids in source.lookup(sorted(names), TYPE_CLASSES[label]).items():
            hits[(label, name)] = qids
    all_qids = sorted({q for qs in hits.values() for q in qs}, key=lambda q: int(q[1:]))
    graphs = source.subgraphs(all_qids) if all_qids else {}

    out = []
    for question, ms in zip(questions, mentions):
        r = Retrieval(kg=KnowledgeGraph(), mentions=list(ms))
        cands = {m.text: [q for q in hits.get((m.label, m.text), []) if q in graphs] for m in ms}
        local = link_graph({q: graphs[q] for qs in cands.values() for q in qs})
        for m in ms:
            qs = cands[m.text]
            if not qs:
                continue
            scores = {q: overlap(question, graphs[q]) for q in qs}
            others = {q for other, oqs in cands.items() if other != m.text for q in oqs}
            links = {q: sum(1 for n in local.neighbors(q) if n in others) for q in qs}
            best = min(qs, key=lambda q: (-scores[q], -links[q], int(q[1:])))
            r.candidates[m.text], r.scores[m.text], r.chosen[m.text] = qs, scores, best
        kept = list(dict.fromkeys(r.chosen.values()))
        r.kg = KnowledgeGraph(entities=[graphs[q] for q in kept])
        out.append(r)
    return out


def retrieval_report(retrieved: Sequence[Sequence[str]], gold: Sequence[Sequence[str]]) -> dict[str, float | int]:
    """Entity-level precision and recall of retrieved graphs against the gold people (micro)."""
    tp = sum(len(set(r) & set(g)) for r, g in zip(retrieved, gold))
    n_r, n_g = sum(len(set(r)) for r in retrieved), sum(len(set(g)) for g in gold)
    return {
        "questions": len(gold),
        "retrieved": n_r,
        "gold": n_g,
        "correct": tp,
        "precision": tp / n_r if n_r else 0.0,
        "recall": tp / n_g if n_g else 0.0,
        "exact_questions": sum(set(r) == set(g) for r, g in zip(retrieved, gold)),
    }
