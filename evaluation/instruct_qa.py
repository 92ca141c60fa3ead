"""Token-overlap metrics of instruct-qa (Adlakha et al., 2023), adapted to KaLMA.

Card
- Measures: faithfulness to the knowledge given, K-Precision (share of answer tokens found in
  the knowledge), K-Precision++ (the same over answer tokens that are not in the question),
  K-Recall and K-F1; and correctness against the reference answer: Recall (share of reference
  tokens in the answer), Recall-strict (the whole normalised reference occurs in the answer),
  EM and F1.
- Range: 0 to 1.
- Adaptation: the "knowledge" is the KG given, verbalised as `entity relation value` per triple
  (QIDs dropped); the answer is scored with its citation markup removed, so copied QIDs and
  relation names cannot inflate it; the reference is the builder's final paragraph, so the
  reference metrics are unavailable for entries without one.
- One tokenisation and normalisation for all of them (`tokens`): lower case, punctuation and
  the articles a/an/the removed, split on white space. In another language, its own articles
  (as MLQA's evaluation script removes them: "der die das…", "el la los…"; French "le la les
  l' un une des du au aux"), its elided clitics ("l'organisation" is "organisation"), and its
  quotation marks («», „, ¿¡) (`kalma.languages.text`); English tokens are what they always were.

>>> k_precision(tokens("Artemisia was born in Rome"), tokens("Artemisia Gentileschi place of birth Rome"))
0.4
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from functools import cache

from kalma.citations import strip_citations
from kalma.languages import DEFAULT_LANGUAGE
from kalma.languages.text import TextRules, rules
from kalma.schema import KnowledgeGraph

from .base import Card, EvalItem, Metric, Scored
from .figures import Figure, Mean

_PUNCTUATION = string.punctuation + "“”‘’–—"


@cache
def _reading(lang: TextRules) -> tuple[re.Pattern[str], dict[int, str]]:
    """The language's articles as one pattern (English: `\b(a|an|the)\b`) and its punctuation table."""
    articles = re.compile(r"\b(" + "|".join(sorted(lang.articles)) + r")\b") if lang.articles else re.compile(r"(?!)")
    return articles, str.maketrans({c: " " for c in _PUNCTUATION + lang.quotes})


def normalize(text: str, language: str = DEFAULT_LANGUAGE) -> str:
    lang = rules(language)
    articles, punct = _reading(lang)
    return " ".join(articles.sub(" ", lang.unelided(text.lower()).translate(punct)).split())


def tokens(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    return normalize(text, language).split()


def knowledge_text(kg: KnowledgeGraph) -> str:
    return "\n".join(f"{e.label} {t.relation_label} {t.value_label}" for e in kg.entities for t in e.triples)


def k_precision(answer: Sequence[str], knowledge: Sequence[str]) -> float | None:
    known = set(knowledge)
    return sum(t in known for t in answer) / len(answer) if answer else None


def overlap_f1(pred: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of multiset token overlap."""
    common = sum((Counter(pred) & Counter(gold)).values())
    if not pred or not gold or not common:
        return 0.0, 0.0, 0.0
    p, r = common / len(pred), common / len(gold)
    return p, r, 2 * p * r / (p + r)


class InstructQA(Metric):
    name = "kprec"
    card = Card(
        "K-Precision/K-Precision++/K-Recall/K-F1 to the KG; Recall/Recall-strict/EM/F1 to the reference",
        "0-1",
        "Adlakha et al. 2023 (instruct-qa); K-F1++ discounting from Chiesurin et al. 2023",
    )
    outputs = tuple(f"iqa_{k}" for k in ("k_precision", "k_precision_pp", "k_recall", "k_f1", "recall", "recall_strict", "em", "f1"))

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        out = []
        for it in items:
            lang = it.language
            ans = tokens(strip_citations(it.answer.text, lang), lang)
            know = tokens(knowledge_text(it.kg), lang)
            question = set(tokens(it.question, lang))
            _, kr, kf1 = overlap_f1(ans, know)
            values: dict[str, float | None] = {
                "k_precision": k_precision(ans, know),
                "k_precision_pp": k_precision([t for t in ans if t not in question], know),
                "k_recall": kr if ans else None,
                "k_f1": kf1 if ans else None,
            }
            notes = {}
            if it.reference:
                ref = tokens(it.reference, lang)
                _, _, f1 = overlap_f1(ans, ref)
                values |= {
                    "recall": sum(t in set(ans) for t in ref) / len(ref) if ref else None,
                    "recall_strict": float(bool(ref) and f" {normalize(it.reference, lang)} " in f" {' '.join(ans)} "),
                    "em": float(normalize(it.reference, lang) == " ".join(ans)),
                    "f1": f1,
                }
            else:
                notes["kprec"] = "no reference answer: Recall, Recall-strict, EM and F1 unavailable"
            out.append(Scored({f"iqa_{k}": v for k, v in values.items()}, {"answer_tokens": len(ans)}, notes))
        return out

    def figures(self) -> dict[str, Figure]:
        return {key: Mean(key) for key in self.outputs}
