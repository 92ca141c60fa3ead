"""Synthetic answers for scale tests and benchmarks, built at run time from any dataset.

Each answer cites a seeded sample of its entry's triples in sentences that state them, one
citation in four carries a wrong value, and one sentence is marked [NA]. Nothing derived from
a third-party release is ever written into the repository by this module.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kalma.citations import Citation, format_sentence
from kalma.schema import Answer, DatasetEntry


def synthetic_answers(entries: Sequence[DatasetEntry], seed: int = 0, model: str = "synthetic") -> list[Answer]:
    rng = random.Random(seed)
    out = []
    for e in entries:
        triples = e.knowledge_pool.triples()
        chosen = rng.sample(triples, min(len(triples), 4))
        sentences = []
        for i, t in enumerate(chosen):
            value = t.value_label if i % 4 != 3 else t.value_label + " (disputed)"
            c = Citation(t.subject, t.relation_label, value)
            sentences.append(format_sentence(f"{t.subject_label}'s {t.relation_label} was {value}.", [c]))
        sentences.append(format_sentence("Some details of the question are not in the knowledge.", na=True))
        out.append(Answer(entry_id=e.id, text=" ".join(sentences), model=model, seed=seed))
    return out
