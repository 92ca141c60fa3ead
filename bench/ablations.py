"""The paper's ablations, exact, seeded and nested.

- Knowledge removal (§5.2, Table 5, Figure 4): `kalma.removal.remove_knowledge`, an operation on
  a dataset's entries that the evaluator's judge pairs draw too, so it lives below both stages.
- Retrieval accuracy (§5.3, Figure 5): keep exactly round(p·N) of the N gold person graphs of
  the dataset and replace every other one with the graph of a different person drawn from
  other entries (varied: no stand-in is reused while others remain). As in the paper ("in each
  subsequent round, we randomly replace additional 20% knowledge graphs"), for one seed the
  graphs kept at 0.6 are a subset of those kept at 0.8, and a graph replaced at 0.8 stays
  replaced, by the same stand-in, at every lower accuracy: one seeded order of the graphs
  decides which go first, and each graph's stand-in is drawn once.

Every condition's absent set is what its KG lacks of the minimum set (`DatasetEntry.absent_from`),
so the [NA] metrics mean the same thing in every condition.
"""

from __future__ import annotations

from collections.abc import Sequence

from kalma.removal import Condition
from kalma.schema import DatasetEntry, EntityGraph, KnowledgeGraph
from kalma.seeds import rng

Slot = tuple[str, int]  # (entry id, index of the graph in its pool)


def replacement_plan(entries: Sequence[DatasetEntry], seed: int) -> tuple[list[Slot], dict[Slot, EntityGraph]]:
    """(every gold graph in the seeded order of replacement, each graph's one stand-in). A
    stand-in is a person of another entry, never one of the entry's own, never twice in one
    entry, and none is reused while others remain."""
    slots = [(e.id, i) for e in entries for i in range(len(e.knowledge_pool.entities))]
    r = rng(seed, "retrieval")
    order = slots[:]
    r.shuffle(order)
    everyone = {g.qid: g for e in entries for g in e.knowledge_pool.entities}
    stand_in: dict[Slot, EntityGraph] = {}
    bag: list[str] = []
    for e in entries:
        own = {g.qid for g in e.knowledge_pool.entities}
        taken: set[str] = set()
        for i in range(len(e.knowledge_pool.entities)):
            choices = [q for q in sorted(everyone) if q not in own and q not in taken]
            if not choices:
                continue  # a dataset of one person has no stand-in: the graph is then never replaced
            if not any(q in choices for q in bag):
                bag = choices[:]
                r.shuffle(bag)
            q = next(q for q in bag if q in choices)
            bag.remove(q)
            taken.add(q)
            stand_in[(e.id, i)] = everyone[q]
    return [s for s in order if s in stand_in], stand_in


def retrieval_accuracy(entries: Sequence[DatasetEntry], p: float, seed: int) -> dict[str, Condition]:
    order, stand_in = replacement_plan(entries, seed)
    n = sum(len(e.knowledge_pool.entities) for e in entries)
    replaced = set(order[: n - round(p * n)])
    out = {}
    for e in entries:
        graphs, notes = [], []
        for i, g in enumerate(e.knowledge_pool.entities):
            if (e.id, i) in replaced:
                graphs.append(stand_in[(e.id, i)])
                notes.append(f"{g.qid}->{stand_in[(e.id, i)].qid}")
            else:
                graphs.append(g)
        kg = KnowledgeGraph(entities=graphs)
        out[e.id] = Condition(kg, e.absent_from(kg), "replaced " + ", ".join(notes) if notes else "")
    gold_kept = sum(1 for e in entries for i in range(len(e.knowledge_pool.entities)) if (e.id, i) not in replaced)
    assert gold_kept == round(p * n) or len(order) < n - round(p * n), (gold_kept, round(p * n))
    return out
