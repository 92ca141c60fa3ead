"""Conscious incompetence (KaLMA §4.3): do [NA] marks point at the knowledge that was removed?

Card
- Measures: [NA] precision = [NA]-marked sentences that entail at least one absent triple /
  all [NA]-marked sentences; [NA] recall = absent triples entailed by at least one [NA]-marked
  sentence / all absent triples; F1 from both. Sentences and triples are counted, never
  (sentence, triple) pairs, so precision cannot exceed 1 (the authors' code counted pairs).
- Range: 0 to 1. Micro pools sentences and triples; macro averages per answer.
- The §4.5 edge case (on by default; `na:relevance=false` turns it off): an [NA]-marked sentence that
  does not address the question at all counts as correct in [NA] precision: it rightly flags
  a claim that needs checking. Relevance is judged by the entailment backend (sentence vs
  question, `Entailment.relevance`), only for [NA] sentences that entail no absent triple;
  how many it decided is reported (`na_sentences_irrelevant`).
- Needs: the absent set (knowledge removed from the KG given), carried by each answer or by
  the run; without it the metric is unavailable.
- Reference: KaLMA (Li et al.) §4.3 and Figure 3.
"""

from __future__ import annotations

from collections.abc import Sequence

from kalma.models import Entailment, get_entailment
from kalma.schema import NAVerdict
from kalma.verbalize import hypothesis

from .alignment import entailment_label
from .base import (
    Card,
    EvalItem,
    EvalOptions,
    Failures,
    Metric,
    Scored,
    approximate_entailment,
    decisive,
    entailment_failures,
    ratio,
    total,
)
from .figures import F1, Count, Figure, Mean, Ratio


class ConsciousIncompetence(Metric):
    name = "na"
    card = Card("[NA] precision and recall against the absent knowledge", "0-1", "KaLMA (Li et al.), §4.3, Figure 3")
    needs = ("nli",)
    outputs = ("na_precision_micro", "na_recall_micro", "na_f1_micro", "na_precision_macro", "na_recall_macro", "na_f1_macro")

    def __init__(self, options: EvalOptions, *, relevance: bool = True, verbalized: bool = False):
        super().__init__(options)
        self.relevance, self.verbalized = relevance, verbalized

    def models(self) -> dict[str, str]:
        decisive(self.options.nli, self.name)
        rule = "on" if self.relevance else "off"
        return {"na": f"{entailment_label(self.options.nli)}; irrelevant-[NA]-counts-correct rule (§4.5) {rule}"}

    def caveats(self) -> list[str]:
        return approximate_entailment(self.options.nli)

    def failures(self, rows: Sequence[Scored]) -> Failures | None:
        return entailment_failures(self.options.nli)

    def unavailable(self, output: str, rows: Sequence[Scored]) -> str:
        if not any("absent" in r.counts for r in rows):
            return ""  # no absent set at all: the answers' own notes say so
        # the spec's empty denominators: n/a, never 0
        if output.startswith("na_precision"):
            return "no sentence is marked [NA]: precision has no denominator"
        if output.startswith("na_recall"):
            return "nothing was absent from the KG the answers were given: recall has no denominator"
        return "n/a when [NA] precision or recall is"

    def support(self, rows: Sequence[Scored], dropped: dict[str, int]) -> dict[str, int]:
        scored = [r for r in rows if "absent" in r.counts]
        micro_n = {"na_precision_micro": total(scored, "na_sentences"), "na_recall_micro": total(scored, "absent"), "na_f1_micro": len(scored)}
        return {**super().support(rows, dropped), **micro_n}

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        ent = get_entailment(self.options.nli)
        marked = [[si for si, s in enumerate(it.parsed.sentences) if s.na] for it in items]  # sentence indices of the [NA] marks
        pairs, index = [], []
        for i, it in enumerate(items):
            for si in marked[i]:
                for ti, t in enumerate(it.absent or []):
                    pairs.append((it.parsed.sentences[si].clean, hypothesis(t, self.verbalized)))
                    index.append((i, si, ti))
        probs = ent.probs(pairs) if pairs else []
        hits = {key for key, p in zip(index, probs) if p >= self.options.threshold}
        entailing = {(i, si) for (i, si, _) in hits}
        relevance = self._relevance(ent, items, marked, entailing)
        irrelevant = {key for key, p in relevance.items() if p < self.options.threshold}
        out = []
        for i, it in enumerate(items):
            n_na = len(marked[i])
            if it.absent is None:
                unscored = {si: {"na": NAVerdict(outcome="unscored", why="no absent-knowledge set")} for si in marked[i]}
                out.append(
                    Scored(
                        {"na_precision": None, "na_recall": None},
                        {},
                        {"na": "no absent-knowledge set: [NA] precision/recall unavailable"},
                        per_sentence=unscored,
                    )
                )
                continue
            n_entailing = sum(1 for j, _ in entailing if j == i)
            n_irrelevant = sum(1 for j, _ in irrelevant if j == i)
            found = len({ti for (j, _, ti) in hits if j == i})
            counts = {
                "na_sentences": n_na,
                "na_sentences_entailing": n_entailing,
                "na_sentences_irrelevant": n_irrelevant,
                "na_sentences_correct": n_entailing + n_irrelevant,
                "absent": len(it.absent),
                "absent_entailed": found,
            }
            verdicts = {si: {"na": self._verdict(it, i, si, hits, relevance)} for si in marked[i]}
            out.append(
                Scored({"na_precision": ratio(n_entailing + n_irrelevant, n_na), "na_recall": ratio(found, len(it.absent))}, counts, per_sentence=verdicts)
            )
        return out

    def _verdict(self, it: EvalItem, i: int, si: int, hits: set[tuple[int, int, int]], relevance: dict[tuple[int, int], float]) -> NAVerdict:
        """One [NA] mark: the absent triples it entails, else whether §4.5's rule found it off the question."""
        absent = it.absent or []
        entailed = [f"{absent[ti].subject}, {absent[ti].relation_label}: {absent[ti].value_label}" for ti in range(len(absent)) if (i, si, ti) in hits]
        if entailed:
            return NAVerdict(entailed=entailed, outcome="entails absent knowledge")
        p = relevance.get((i, si))
        p_shown = None if p is None else round(p, 4)
        none = f"it entails none of the {len(absent)} absent triples" if absent else "nothing was absent from the KG given"
        if p is not None and p < self.options.threshold:
            why = f"{none}; it does not address the question (P(relevant) {p:.3f} < {self.options.threshold:g}), which §4.5 counts correct"
            return NAVerdict(relevance=p_shown, outcome="irrelevant: counts correct", why=why)
        rule = f"; it addresses the question (P(relevant) {p:.3f})" if p is not None else "; the §4.5 relevance rule is off" if not self.relevance else ""
        return NAVerdict(relevance=p_shown, outcome="wrong", why=none + rule)

    def _relevance(self, ent: Entailment, items: Sequence[EvalItem], marked: list[list[int]], entailing: set[tuple[int, int]]) -> dict[tuple[int, int], float]:
        """P(addresses the question) of the [NA] sentences that entail no absent triple (§4.5)."""
        if not self.relevance:
            return {}
        asked = [
            (i, si, it.parsed.sentences[si].clean, it.question)
            for i, it in enumerate(items)
            if it.absent is not None and it.question
            for si in marked[i]
            if (i, si) not in entailing
        ]
        probs = ent.relevance([(sentence, question) for _, _, sentence, question in asked]) if asked else []
        return {(i, si): p for (i, si, _, _), p in zip(asked, probs)}

    def figures(self) -> dict[str, Figure]:
        # Micro figures are over the answers that have an absent set (they alone count `absent`).
        p = Ratio(Count("na_sentences_correct", given="absent"), Count("na_sentences", given="absent"))
        r = Ratio(Count("absent_entailed", given="absent"), Count("absent"))
        pm, rm = Mean("na_precision"), Mean("na_recall")
        micro = {"na_precision_micro": p, "na_recall_micro": r, "na_f1_micro": F1(p, r)}
        return micro | {"na_precision_macro": pm, "na_recall_macro": rm, "na_f1_macro": F1(pm, rm)}
