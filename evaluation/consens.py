"""ConSens (Vankov et al.): how much the answer depends on the knowledge it was given.

Card
- Measures: r = log(P_E / P_C), where P_X is the mean over the answer's content tokens of
  1/p(token) under an LM scorer, with the knowledge given (C) or empty (E); ConSens =
  2 / (1 + e^(-r)) - 1.
- Range: -1 to 1; near 1 the knowledge made the answer much likelier, near or below 0 it did not.
- Content tokens: the LM tokens of words that are not closed-class (spaCy part of speech:
  determiners, pronouns, conjunctions, adpositions, auxiliaries, particles, punctuation,
  symbols) and do not occur in the question. The words and their parts of speech are the
  dataset's language's pipeline's (`kalma.nlp.language_pipeline`: `fr_core_news_sm` for
  French); a language with none installable (German, Spanish) reads words with spaCy's blank
  pipeline of the language, closed-class being its stop words and punctuation.
- Adaptation: the context is the KG given, verbalised as sentences, in this project's prompt
  layout (`evaluation.base.lm_context`); citations are stripped from the answer. The per-graph
  variant drops each person's graph in turn (the paper's Experiment 3 with documents) and names
  the graph whose removal lowers ConSens most.
- Reference: Vankov et al., "ConSens: Assessing context grounding in open-book question answering".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from kalma.citations import strip_citations
from kalma.languages import DEFAULT_LANGUAGE
from kalma.models import SCORERS, describe, get_scorer
from kalma.nlp import BLANK, language_pipeline, load_spacy
from kalma.schema import KnowledgeGraph

from .base import Card, EvalItem, Metric, Scored, knowledge_prose, lm_context
from .figures import Figure, Mean

CLOSED_CLASS = {"DET", "PRON", "CCONJ", "SCONJ", "ADP", "AUX", "PART", "PUNCT", "SYM", "SPACE", "INTJ"}


def content_spans(answer: str, question: str, language: str = DEFAULT_LANGUAGE) -> list[tuple[int, int]]:
    """Character spans of the answer's content words that the question does not contain."""
    name = language_pipeline(language)
    nlp = load_spacy(name)
    asked = {t.lower_ for t in nlp(question)}
    if name.startswith(BLANK):  # no tagger: closed-class words are the language's stop words
        return [(t.idx, t.idx + len(t.text)) for t in nlp(answer) if not (t.is_stop or t.is_punct or t.is_space) and t.lower_ not in asked]
    return [(t.idx, t.idx + len(t.text)) for t in nlp(answer) if t.pos_ not in CLOSED_CLASS and t.lower_ not in asked]


def mean_inverse_prob(scored: Sequence[tuple[float, int, int]], spans: Sequence[tuple[int, int]]) -> float | None:
    """P_text: the mean of 1/p over the LM tokens that overlap a content word."""
    picked = [lp for lp, a, b in scored if any(a < e and s < b for s, e in spans)]
    return sum(math.exp(-lp) for lp in picked) / len(picked) if picked else None


def consens(p_empty: float, p_context: float) -> float:
    """2 / (1 + e^(-r)) - 1 with r = log(P_E / P_C).

    >>> round(consens(40.0, 10.0), 4)  # r = log 4
    0.6
    """
    r = math.log(p_empty / p_context)
    return 2 / (1 + math.exp(-r)) - 1


class ConSens(Metric):
    name = "consens"
    card = Card("dependence of the answer on the given knowledge", "-1 to 1", "Vankov et al., ConSens")
    needs = ("lm",)
    outputs = ("consens_mean",)
    scales = {"consens_mean": "-1..1"}

    def models(self) -> dict[str, str]:
        words = {"consens_content_words": language_pipeline(self.options.language)} if self.options.language != DEFAULT_LANGUAGE else {}
        return {"consens": describe(self.options.lm, SCORERS), **words}

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        scorer = get_scorer(self.model_spec("lm"))
        jobs: list[tuple[int, str, str]] = []  # (item, condition, context)
        answers = [strip_citations(it.answer.text, it.language) for it in items]
        for i, it in enumerate(items):
            jobs.append((i, "empty", lm_context(it.question, "")))
            jobs.append((i, "full", lm_context(it.question, knowledge_prose(it.kg))))
            if len(it.kg.entities) > 1:
                for e in it.kg.entities:
                    rest = KnowledgeGraph(entities=[x for x in it.kg.entities if x.qid != e.qid])
                    jobs.append((i, e.qid, lm_context(it.question, knowledge_prose(rest))))
        scored = scorer.token_spans([answers[i] for i, _, _ in jobs], [c for _, _, c in jobs])
        p: dict[tuple[int, str], float | None] = {}
        spans = [content_spans(a, it.question, it.language) if a else [] for a, it in zip(answers, items)]
        for (i, cond, _), row in zip(jobs, scored):
            p[(i, cond)] = mean_inverse_prob(row, spans[i])
        out = []
        for i, it in enumerate(items):
            pe, pc = p[(i, "empty")], p[(i, "full")]
            if pe is None or pc is None:
                out.append(Scored({"consens": None}, {"consens_tokens": 0}, {"consens": "no content words to score"}))
                continue
            values: dict[str, float | None] = {"consens": consens(pe, pc)}
            details: dict[str, Any] = {}
            drops = {e.qid: consens(pe, p[(i, e.qid)]) for e in it.kg.entities if p.get((i, e.qid)) is not None}  # type: ignore[arg-type]
            if drops:
                leaned = min(drops, key=lambda q: (drops[q], q))
                values["consens_without_leaned_on"] = drops[leaned]
                details["consens_leaned_on"] = leaned
                details["consens_without"] = drops
            out.append(Scored(values, {"consens_words": len(spans[i])}, details=details))
        return out

    def figures(self) -> dict[str, Figure]:
        return {"consens_mean": Mean("consens")}
