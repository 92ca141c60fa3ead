"""The paper's ablations, exact and seeded.

- Knowledge removal (§5.2, Table 5, Figure 4): remove k triples of each question's minimum
  set from the KG given to the model; they form the absent set the [NA] metrics use. Exactly k
  are removed, fewer only when the set is smaller, and then the shortfall is recorded.
- Retrieval accuracy (§5.3, Figure 5): keep exactly round(p·N) of the N gold person graphs of
  the dataset, chosen with a seed, and replace every other one with the graph of a different
  person drawn from other entries (varied: no replacement graph is reused while others remain).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kalma.schema import DatasetEntry, EntityGraph, KnowledgeGraph, Triple


@dataclass
class Condition:
    """What one entry is given under an ablation, and what was done to get it."""

    kg: KnowledgeGraph
    absent: list[Triple]
    note: str = ""


def remove_knowledge(entries: Sequence[DatasetEntry], k: int, seed: int) -> dict[str, Condition]:
    out = {}
    for e in entries:
        rng = random.Random(f"remove:{seed}:{k}:{e.id}")
        pool = list(e.minimum_set or [])
        removed = rng.sample(pool, min(k, len(pool)))
        note = "" if len(removed) == k else f"minimum set has {len(pool)} triples: removed {len(removed)} of k={k}"
        out[e.id] = Condition(e.knowledge_pool.without({t.key() for t in removed}), removed, note)
        assert len(removed) == min(k, len(pool))
    return out


def retrieval_accuracy(entries: Sequence[DatasetEntry], p: float, seed: int) -> dict[str, Condition]:
    slots = [(e.id, i) for e in entries for i in range(len(e.knowledge_pool.entities))]
    n = len(slots)
    keep_n = round(p * n)
    rng = random.Random(f"retrieval:{seed}:{p}")
    kept = set(rng.sample(slots, keep_n))
    by_id = {e.id: e for e in entries}
    # Replacement graphs: people of OTHER entries, drawn without reuse while any remain.
    everyone = {g.qid: g for e in entries for g in e.knowledge_pool.entities}
    out = {}
    bag: list[str] = []
    for e in entries:
        graphs: list[EntityGraph] = []
        replaced = []
        for i, g in enumerate(e.knowledge_pool.entities):
            if (e.id, i) in kept:
                graphs.append(g)
                continue
            own = {x.qid for x in e.knowledge_pool.entities}
            choices = [q for q in sorted(everyone) if q not in own and q not in {x.qid for x in graphs}]
            if not bag or not any(q in choices for q in bag):
                bag = choices[:]
                rng.shuffle(bag)
            q = next(q for q in bag if q in choices)
            bag.remove(q)
            graphs.append(everyone[q])
            replaced.append(f"{g.qid}->{q}")
        out[e.id] = Condition(KnowledgeGraph(entities=graphs), [], "replaced " + ", ".join(replaced) if replaced else "")
    gold_kept = sum(1 for e in entries for g in out[e.id].kg.entities if g.qid in {x.qid for x in by_id[e.id].knowledge_pool.entities})
    assert gold_kept == keep_n, (gold_kept, keep_n)
    return out
