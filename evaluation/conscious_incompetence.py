"""Conscious incompetence (KaLMA §4.3): do [NA] marks point at the knowledge that was removed?

Card
- Measures: [NA] precision = [NA]-marked sentences that entail at least one absent triple /
  all [NA]-marked sentences; [NA] recall = absent triples entailed by at least one [NA]-marked
  sentence / all absent triples; F1 from both. Sentences and triples are counted, never
  (sentence, triple) pairs, so precision cannot exceed 1 (the authors' code counted pairs).
- Range: 0 to 1. Micro pools sentences and triples; macro averages per answer.
- Needs: the absent set (knowledge removed from the KG given), carried by each answer or by
  the run; without it the metric is unavailable.
- Reference: KaLMA (Li et al.) §4.3 and Figure 3.
"""

from __future__ import annotations

from collections.abc import Sequence

from kalma.models import get_entailment
from kalma.schema import AnswerScores
from kalma.verbalize import hypothesis

from .alignment import entailment_label
from .base import Card, EvalItem, Metric, Scored, f1, macro, micro, ratio


class ConsciousIncompetence(Metric):
    name = "na"
    card = Card("[NA] precision and recall against the absent knowledge", "0-1", "KaLMA (Li et al.), §4.3, Figure 3")
    needs = ("absent", "nli")

    def models(self) -> dict[str, str]:
        return {"na": entailment_label(self.options.nli)}

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        ent = get_entailment(self.options.nli)
        pairs, index = [], []
        for i, it in enumerate(items):
            for si, s in enumerate(s for s in it.parsed.sentences if s.na):
                for ti, t in enumerate(it.absent or []):
                    pairs.append((s.clean, hypothesis(t, self.options.verbalized_hypothesis)))
                    index.append((i, si, ti))
        probs = ent.probs(pairs) if pairs else []
        hits = {key for key, p in zip(index, probs) if p >= self.options.threshold}
        out = []
        for i, it in enumerate(items):
            n_na = sum(s.na for s in it.parsed.sentences)
            if it.absent is None:
                out.append(Scored({"na_precision": None, "na_recall": None}, {"na_sentences": n_na},
                                  {"na": "no absent-knowledge set: [NA] precision/recall unavailable"}))
                continue
            good_sent = len({si for (j, si, _) in hits if j == i})
            found = len({ti for (j, _, ti) in hits if j == i})
            counts = {"na_sentences": n_na, "na_sentences_entailing": good_sent, "absent": len(it.absent), "absent_entailed": found}
            out.append(Scored({"na_precision": ratio(good_sent, n_na), "na_recall": ratio(found, len(it.absent))}, counts))
        return out

    def aggregate(self, rows: Sequence[AnswerScores]) -> tuple[dict[str, float | None], dict[str, int]]:
        scored = [r for r in rows if "absent" in r.counts]
        p, r = micro(scored, "na_sentences_entailing", "na_sentences"), micro(scored, "absent_entailed", "absent")
        dropped: dict[str, int] = {}
        pm, dropped["na_precision_macro"] = macro(rows, "na_precision")
        rm, dropped["na_recall_macro"] = macro(rows, "na_recall")
        return {"na_precision_micro": p, "na_recall_micro": r, "na_f1_micro": f1(p, r),
                "na_precision_macro": pm, "na_recall_macro": rm, "na_f1_macro": f1(pm, rm)}, dropped
