"""Knowledge removal (the paper's §5.2, Table 5, Figure 4): k triples of each entry's minimum set
taken out of the KG it is given; they form the absent set the [NA] metrics use.

An operation on a dataset's entries, here at the bottom of the stages because three of them draw
the same removal: the bench's knowledge-removal experiment (`bench.experiments`), the Inspect
task's `-T removed=K` (`bench.inspect_task`) and the judge pairs' `na` kind
(`evaluation.judge_pairs`). It needs only an entry and a seed (no KG, no model), so it sits with
the records it reads (`kalma.schema`) rather than in the builder's stage, which makes datasets
and which the baselines may not import.

Exactly k are removed, fewer only when the set is smaller, and then the shortfall is recorded.
For one seed the steps are nested: the triples removed at k = 2 include those removed at k = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .schema import DatasetEntry, KnowledgeGraph, Triple
from .seeds import rng


@dataclass
class Condition:
    """What one entry is given under an ablation, and what was done to get it."""

    kg: KnowledgeGraph
    absent: list[Triple] | None
    note: str = ""


def removal_order(entry: DatasetEntry, seed: int) -> list[Triple]:
    """The entry's minimum set in the seeded order in which triples are removed."""
    order = list(entry.minimum_set or [])
    rng(seed, "remove", entry.id).shuffle(order)
    return order


def remove_knowledge(entries: Sequence[DatasetEntry], k: int, seed: int) -> dict[str, Condition]:
    out = {}
    for e in entries:
        order = removal_order(e, seed)
        removed = order[:k]
        note = "" if len(removed) == k else f"minimum set has {len(order)} triples: removed {len(removed)} of k={k}"
        kg = e.knowledge_pool.without({t.key() for t in removed})
        out[e.id] = Condition(kg, e.absent_from(kg), note)
        assert len(removed) == min(k, len(order))
    return out
