"""Synthetic answers for scale tests and benchmarks, built at run time from any dataset.

Each answer cites a seeded sample of its entry's triples in sentences that state them, one
citation in four carries a wrong value, and one sentence is marked [NA]. Nothing derived from
a third-party release is ever written into the repository by this module.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kalma.citations import Citation, escape_value, format_sentence
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


def paper_style_answers(
    entries: Sequence[DatasetEntry], seed: int = 0, model: str = "synthetic-paper-style"
) -> list[tuple[Answer, list[tuple[Citation, bool]]]]:
    """Answers written the way the KaLMA paper's demonstration writes them, each with the truth
    of every citation it holds, in order: (citation as written, whether it is a fact of the KG).

    Brackets use `qid:` prefixes, open with a `name:` pair, hold several pairs and sometimes
    several QIDs; a property is named by any of its names (Wikidata's label, the release's key,
    an alias); one pair in five names a property the KG lacks, and one in five a wrong value.
    """
    from kalma.properties import PROPERTIES

    rng = random.Random(seed)
    out = []
    for e in entries:
        sentences, truth = [], []
        for g in e.knowledge_pool.entities:
            if not g.triples:
                continue
            blocks = [f"qid: {g.qid}, name: {escape_value(g.label)}"]
            truth.append((Citation(g.qid, "name", g.label), True))
            for t in rng.sample(g.triples, min(len(g.triples), 3)):
                rel = rng.choice(PROPERTIES.get(t.relation, (t.relation_label,)))
                value, ok = t.value_label, True
                roll = rng.random()
                if roll < 0.2:
                    rel, ok = "favourite colour", False
                elif roll < 0.4:
                    value, ok = value + " (disputed)", False
                blocks.append(f"{rel}: {escape_value(value)}")
                truth.append((Citation(g.qid, rel, value), ok))
            sentences.append(f"This person is described here [{', '.join(blocks)}].")
        sentences.append("Some of this cannot be checked [NA].")
        out.append((Answer(entry_id=e.id, text=" ".join(sentences), model=model, seed=seed), truth))
    return out
