"""CONNER (Chen et al., 2023): knowledge evaluated intrinsically and extrinsically.

Card
- Intrinsic (`conner`), applied to the generated answer as the "knowledge":
  - factuality: each answer sentence not marked [NA] is checked against the l most word-overlapping KG
    triples (verbalised) as evidence; a sentence's score is its best-supporting evidence, and
    sentences are aggregated by min (default), mean or max (`conner:agg=mean`). With a
    three-class entailment backend it reports the consistent / unverified / inconsistent split;
    with a two-class one, consistency only.
  - relevance: a query-answer matcher (`conner:matcher=cross-encoder:ID`), or the
    `minilm` embedding fallback, which is labelled as such.
  - coherence: sentence level, the mean over sentences of 1/PPL under the LM scorer; paragraph
    level, P(coherent) from a discourse-coherence classifier when one is configured
    (`conner:coherence_model=hf-cls:<id>`), else the labelled fallback 1/PPL of the
    whole answer.
  - informativeness: 1 - exp(mean token log-prob of the answer given the question).
- Extrinsic (`conner-extrinsic`), applied to the KG given as the "knowledge", with the
  reference paragraph of the entry as the downstream answer a:
  - helpfulness: max(0, 1 - L(q, k, a) / mean_i L(q, k_i^-, a)), L the mean token
    cross-entropy under the LM scorer, k_i^- the KGs of u other entries drawn with a seed
    recorded per entry (`conner-extrinsic:u=5`, default 3);
  - validity: entailment of the answer (citations stripped) by the reference.
- Range: 0 to 1 each. Entries without a reference make the extrinsic metrics unavailable.
- Reference: Chen et al., "Beyond Factuality: A Comprehensive Evaluation of Large Language
  Models as Knowledge Generators", EMNLP 2023, §3.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Literal

from kalma.citations import strip_citations
from kalma.languages import DEFAULT_LANGUAGE
from kalma.models import SCORERS, describe, get_entailment, get_matcher, get_scorer
from kalma.schema import DatasetEntry, KnowledgeGraph
from kalma.seeds import rng
from kalma.verbalize import verbalize

from .alignment import entailment_label
from .base import Card, EvalItem, EvalOptions, Metric, Scored, approximate_entailment, decisive, knowledge_prose, lm_context
from .figures import Figure, Mean
from .instruct_qa import tokens

AGGREGATE: dict[str, Callable[[list[float]], float]] = {"min": min, "mean": statistics.fmean, "max": max}


def evidence_for(sentence: str, evidence: Sequence[str], l: int, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The l evidence sentences sharing most words with `sentence` (stable order on ties), words
    read in `language` (instruct-qa's `tokens`)."""
    words = set(tokens(sentence, language))
    ranked = sorted(range(len(evidence)), key=lambda i: (-len(words & set(tokens(evidence[i], language))), i))
    return [evidence[i] for i in ranked[:l]]


class ConnerIntrinsic(Metric):
    name = "conner"
    card = Card("factuality, relevance, coherence, informativeness of the answer", "0-1", "Chen et al. 2023 (CONNER) §3.1")
    needs = ("nli", "lm")
    outputs = (
        "conner_fact_consistent",
        "conner_fact_unverified",
        "conner_fact_inconsistent",
        "conner_relevance",
        "conner_coherence_sent",
        "conner_coherence_para",
        "conner_informativeness",
    )

    def __init__(
        self, options: EvalOptions, *, agg: Literal["min", "mean", "max"] = "min", l: int = 5, matcher: str = "minilm", coherence_model: str | None = None
    ):
        super().__init__(options)
        self.agg, self.l, self.matcher, self.coherence_model = agg, l, matcher, coherence_model

    def _matcher_spec(self) -> str:
        return self.matcher

    def models(self) -> dict[str, str]:
        decisive(self.options.nli, self.name)
        m = self._matcher_spec()
        note = " (embedding fallback, not a relevance ranker)" if m == "minilm" else ""
        lm = describe(self.options.lm, SCORERS)
        para = self.coherence_model or f"fallback 1/PPL of the whole answer under {lm}"
        return {
            "conner_factuality": entailment_label(self.options.nli),
            "conner_relevance": m + note,
            "conner_coherence": f"sentences: {lm}; paragraph: {para}",
            "conner_informativeness": lm,
        }

    def caveats(self) -> list[str]:
        fallback = ["CONNER relevance by the `minilm` embedding fallback, not a relevance ranker."] if self._matcher_spec() == "minilm" else []
        return approximate_entailment(self.options.nli) + fallback

    def unavailable(self, output: str, rows: Sequence[Scored]) -> str:
        if output in ("conner_fact_unverified", "conner_fact_inconsistent") and not getattr(get_entailment(self.options.nli), "three_way", False):
            return f"{self.options.nli} gives P(entailment) only; the unverified and inconsistent shares need a three-way NLI model (hf-nli: an MNLI head)"
        if output == "conner_fact_consistent":
            return "no sentence without [NA] met a piece of the KG given that shares a word with it: nothing to check"
        return ""

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        ent, scorer, matcher = get_entailment(self.options.nli), get_scorer(self.model_spec("lm")), get_matcher(self._matcher_spec())
        agg, l = AGGREGATE[self.agg], self.l
        answers = [strip_citations(it.answer.text, it.language) for it in items]
        # [NA]-marked sentences declare themselves unsupported by the KG: not checked for factuality.
        sentences = [[s.clean for s in it.parsed.sentences if s.clean and not s.na] for it in items]
        # factuality: all (evidence, sentence) pairs of the batch in one entailment call
        pairs, owner = [], []
        for i, it in enumerate(items):
            evidence = [verbalize(t, e.label, it.language) for e in it.kg.entities for t in e.triples]
            for j, s in enumerate(sentences[i]):
                for ev in evidence_for(s, evidence, l, it.language):
                    pairs.append((ev, s))
                    owner.append((i, j))
        three = getattr(ent, "three_way", False)
        probs = ent.probs3(pairs) if three and pairs else [(p, None, None) for p in ent.probs(pairs)] if pairs else []
        best: dict[tuple[int, int], tuple] = {}
        for key, pr in zip(owner, probs):
            if key not in best or pr[0] > best[key][0]:
                best[key] = pr
        # LM scores: sentences alone, whole answers alone, answers given the question
        sent_texts = [s for ss in sentences for s in ss]
        sent_ppl = scorer.perplexity(sent_texts) if sent_texts else []
        coherence_model = self.coherence_model
        if coherence_model:
            para = get_matcher(str(coherence_model)).scores([("", a or " ") for a in answers])
        else:
            para = [1 / p if p == p else float("nan") for p in scorer.perplexity([a or " " for a in answers])]
        informed = scorer.mean_logprob([a or " " for a in answers], [lm_context(it.question, "") for it in items])
        relevance = matcher.scores([(it.question, a) for it, a in zip(items, answers)])
        out, k = [], 0
        for i in range(len(items)):
            n = len(sentences[i])
            ppls = sent_ppl[k : k + n]
            k += n
            if not answers[i]:
                out.append(Scored({"conner_relevance": None}, {"conner_sentences": 0}, {"conner": "empty answer"}))
                continue
            sent_best = [best[(i, j)] for j in range(n) if (i, j) in best]
            values: dict[str, float | None] = {
                "conner_fact_consistent": agg([b[0] for b in sent_best]) if sent_best else None,
                "conner_relevance": relevance[i],
                "conner_coherence_sent": statistics.fmean(1 / p for p in ppls) if ppls else None,
                "conner_coherence_para": para[i] if para[i] == para[i] else None,
                "conner_informativeness": 1 - math.exp(informed[i]) if informed[i] == informed[i] else None,
            }
            if three and sent_best:
                values["conner_fact_unverified"] = agg([b[1] for b in sent_best])
                values["conner_fact_inconsistent"] = agg([b[2] for b in sent_best])
            out.append(Scored(values, {"conner_sentences": n}))
        return out

    def figures(self) -> dict[str, Figure]:
        return {key: Mean(key) for key in self.outputs}


class ConnerExtrinsic(Metric):
    name = "conner-extrinsic"
    card = Card("helpfulness and validity of the KG given, against the reference paragraph", "0-1", "Chen et al. 2023 (CONNER) §3.2")
    needs = ("nli", "lm")
    outputs = ("conner_helpfulness", "conner_validity")

    def __init__(self, options: EvalOptions, *, u: int = 3):
        super().__init__(options)
        self.u = u
        self.pools: dict[str, KnowledgeGraph] = {}

    def models(self) -> dict[str, str]:
        decisive(self.options.nli, self.name)
        return {"conner_helpfulness": describe(self.options.lm, SCORERS), "conner_validity": entailment_label(self.options.nli)}

    def caveats(self) -> list[str]:
        return approximate_entailment(self.options.nli)

    def prepare(self, entries: Sequence[DatasetEntry]) -> None:
        self.pools = {e.id: e.knowledge_pool for e in entries if e.knowledge_pool.entities}

    def negatives(self, entry_id: str) -> list[str]:
        """u other entries, drawn with a seed derived from the run seed and the entry id."""
        others = sorted(k for k in self.pools if k != entry_id)
        return rng(self.options.seed, "conner-negatives", entry_id).sample(others, min(self.u, len(others)))

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        scorer, ent = get_scorer(self.model_spec("lm")), get_entailment(self.options.nli)
        jobs: list[tuple[int, str]] = []
        texts, contexts = [], []
        for i, it in enumerate(items):
            if not it.reference:
                continue
            for kid in ["__given__"] + self.negatives(it.answer.entry_id):
                kg = it.kg if kid == "__given__" else self.pools[kid]
                jobs.append((i, kid))
                texts.append(it.reference)
                contexts.append(lm_context(it.question, knowledge_prose(kg)))
        losses = [-x for x in scorer.mean_logprob(texts, contexts)] if texts else []
        by_item: dict[int, dict[str, float]] = {}
        for (i, kid), loss in zip(jobs, losses):
            by_item.setdefault(i, {})[kid] = loss
        valid_pairs = [(it.reference, strip_citations(it.answer.text, it.language) or " ") for it in items if it.reference]
        validity = iter(ent.probs(valid_pairs)) if valid_pairs else iter([])
        out = []
        for i, it in enumerate(items):
            if not it.reference:
                out.append(
                    Scored(
                        {"conner_helpfulness": None, "conner_validity": None},
                        {},
                        {"conner-extrinsic": "no reference answer: helpfulness and validity unavailable"},
                    )
                )
                continue
            losses_i = by_item[i]
            neg = [v for k, v in losses_i.items() if k != "__given__"]
            help_ = max(0.0, 1 - losses_i["__given__"] / statistics.fmean(neg)) if neg else None
            out.append(
                Scored(
                    {"conner_helpfulness": help_, "conner_validity": next(validity)},
                    details={
                        "conner_negatives": [k for k in losses_i if k != "__given__"],
                        "conner_loss_given": losses_i["__given__"],
                        "conner_loss_negatives": neg,
                    },
                )
            )
        return out

    def figures(self) -> dict[str, Figure]:
        return {key: Mean(key) for key in self.outputs}
