"""Knowledge selection for evolutionary question generation (paper Appendix A.3, Eq. 1):

    score_r = α · log(2N / Count_r) + (1 − α) · softmax(1 / ppl_r)

Count_r is the number of entries of the dataset (size N) whose knowledge pool uses relation r
(the IDF-style document frequency, so a frequent relation is less specific); ppl_r is the
perplexity of the triple rendered as a simple sentence, appended to the current paragraph
(scored given the paragraph); the softmax runs over the round's candidates.

>>> [round(x, 4) for x in softmax([1.0, 0.0])]
[0.7311, 0.2689]
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Sequence

from kalma.classes import HUMAN, EntityClass
from kalma.languages.phrasing import phrasing
from kalma.nlp import load_spacy
from kalma.schema import KnowledgeGraph, Triple

# A person's trivial relations (the paper's list, plus identifiers of pages), by label and by PID:
# they never enter a minimum set, in any round. Other classes have their own (`kalma.classes`).
TRIVIAL_RELATIONS = HUMAN.trivial_labels
TRIVIAL_PIDS = HUMAN.trivial_pids


def is_trivial(t: Triple, cls: EntityClass = HUMAN) -> bool:
    """Whether `t`'s relation is one the builder never asks about an entity of `cls`."""
    return cls.is_trivial(t)


def softmax(xs: Sequence[float]) -> list[float]:
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    s = sum(e)
    return [x / s for x in e]


def relation_counts(pools: Iterable[KnowledgeGraph]) -> tuple[Counter[str], int]:
    """Count_r over the dataset's pools (an entry counts once per relation), and N."""
    counts: Counter[str] = Counter()
    n = 0
    for pool in pools:
        n += 1
        counts.update({t.relation_label for t in pool.triples()})
    return counts, n


def specificity(relation: str, counts: Counter[str], n: int) -> float:
    return math.log(2 * n / max(1, counts.get(relation, 0)))


def selection_scores(
    relations: Sequence[str], perplexities: Sequence[float], counts: Counter[str], n: int, alpha: float = 0.5
) -> list[tuple[float, float, float]]:
    """(specificity, coherence, score) for each candidate of one round."""
    coh = softmax([1 / p for p in perplexities])
    spec = [specificity(r, counts, n) for r in relations]
    return [(s, c, alpha * s + (1 - alpha) * c) for s, c in zip(spec, coh)]


def template_sentence(t: Triple, subject: str | None = None, language: str = "en", cls: str = "", negated: bool = False) -> str:
    """The triple as a simple sentence in `language` (or denied, `negated`): the language's phrasing
    of the property for the class `cls` where it has one (`kalma.languages.phrasing`: "X was founded
    by Y", "X is twinned with Y", "X is a city in Y"; in French "Le lieu de naissance d'X est Y."),
    else, in English, by the part of speech of the relation's head word:
    a past participle ("educated at") → "X was educated at Y."; another verb ("participated
    in") → "X participated in Y."; a noun phrase ("place of birth") → "X's place of birth is Y."
    """
    name = subject or t.subject_label or t.subject
    ph = phrasing(language)
    pid = ph.pid(t.relation, t.relation_label)
    if ph.pattern(pid, cls) or ph.relation_nouns:  # a table entry, or a written language other than English
        return ph.sentence(name, t.relation_label, t.value_label, pid, cls, negated)
    form = relation_form(t.relation_label)
    if form == "participle":
        return f"{name} was {'not ' if negated else ''}{t.relation_label} {t.value_label}."
    return ph.fill("{subject} {relation} {value}." if form == "verb" else ph.possessive, name, t.value_label, t.relation_label, negated=negated)


@functools.lru_cache(maxsize=4096)
def relation_form(label: str) -> str:
    """ "participle", "verb" or "noun": the part of speech of the relation label's head word
    (parsed once per label, not once per candidate)."""
    head = load_spacy()(label)[0]
    return "participle" if head.tag_ == "VBN" else "verb" if head.pos_ in {"VERB", "AUX"} else "noun"
