"""Text-citation alignment (KaLMA §4.2): does each sentence entail the triples it cites?

Card
- Measures: the share of (sentence, citation) pairs whose sentence, with all markup removed,
  entails the cited triple, as judged by an entailment backend.
- Range: 0 to 1. Micro over all pairs; macro averages each answer's share.
- Reference: KaLMA (Li et al.) §4.2, which used TRUE (T5-11B); any backend can be chosen, and
  the rule-based `lexical` stand-in is reported as an approximation.
- Options (`alignment:verbalized=true,substring_shortcut=true`): the hypothesis is
  `relation: value`, or the verbalised sentence; the authors' substring shortcut (value
  verbatim in the sentence counts as aligned) is off by default. `human=REPORT` names a
  `kalma human score` report of this backend against people: every report then says how often
  the backend agreed with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kalma.models import ENTAILMENT, describe, get_entailment
from kalma.schema import normalize_text
from kalma.verbalize import hypothesis

from .base import Card, EvalItem, EvalOptions, Failures, Metric, Scored, approximate_entailment, entailment_failures, ratio, total
from .figures import Count, Figure, Mean, Ratio
from .human.score import human_check


def entailment_label(spec: str) -> str:
    ent = get_entailment(spec)
    return f"{spec} (rule-based approximation, not an NLI model)" if ent.approximate else describe(spec, ENTAILMENT)


class Alignment(Metric):
    name = "alignment"
    card = Card("sentence-citation entailment", "0-1", "KaLMA (Li et al.), §4.2")
    needs = ("nli",)
    outputs = ("alignment_micro", "alignment_macro")

    def __init__(self, options: EvalOptions, *, verbalized: bool = False, substring_shortcut: bool = False, human: str = ""):
        super().__init__(options)
        self.verbalized, self.substring_shortcut = verbalized, substring_shortcut
        self.human = human_check(human, options.nli) if human else None

    def models(self) -> dict[str, str]:
        return {"alignment": entailment_label(self.options.nli)}

    def failures(self, rows: Sequence[Scored]) -> Failures | None:
        return entailment_failures(self.options.nli)

    def support(self, rows: Sequence[Scored], dropped: dict[str, int]) -> dict[str, int]:
        return {**super().support(rows, dropped), "alignment_micro": total(rows, "align_pairs")}

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        ent = get_entailment(self.options.nli)
        pairs: list[tuple[str, str]] = []
        owner: list[int] = []
        shortcut: list[bool] = []
        for i, it in enumerate(items):
            for s in it.parsed.sentences:
                for c in s.citations:
                    pairs.append((s.clean, hypothesis(c, self.verbalized)))
                    owner.append(i)
                    shortcut.append(self.substring_shortcut and normalize_text(c.value).lower() in s.clean.lower())
        judged = ent.probs([p for p, s in zip(pairs, shortcut) if not s]) if pairs else []
        it_judged = iter(judged)
        probs = [None if s else next(it_judged) for s in shortcut]
        ok = [p is None or p >= self.options.threshold for p in probs]
        unjudged = [p is not None and math.isnan(p) for p in probs]  # an abstaining table's pairs: left out, counted
        out = []
        for i in range(len(items)):
            mine = [k for k, who in enumerate(owner) if who == i]
            verdicts = [self._verdict(probs[k], ok[k]) for k in mine]
            counted = [k for k in mine if not unjudged[k]]
            n_ok = sum(ok[k] for k in counted)
            counts = {"align_pairs": len(counted), "aligned": n_ok} | ({"unjudged_pairs": len(mine) - len(counted)} if len(counted) < len(mine) else {})
            out.append(Scored({"alignment": ratio(n_ok, len(counted))}, counts, per_citation=verdicts))
        return out

    def caveats(self) -> list[str]:
        abstains = get_entailment(self.options.nli).abstains
        left_out = ["Alignment over the pairs the table judges: pairs without a judgement are left out (counts: unjudged_pairs)."] if abstains else []
        return approximate_entailment(self.options.nli) + ([self.human] if self.human else []) + left_out

    def _verdict(self, p: float | None, ok: bool) -> dict[str, object]:
        if p is not None and math.isnan(p):
            return {"unjudged": True, "why": f"no judgement for this pair in {self.options.nli}: left out of alignment"}
        if p is None:
            return {"aligned": True, "why": "aligned by the substring shortcut: the value is written in the sentence"}
        why = {} if ok else {"why": f"the sentence does not entail it: P(entailment) {p:.3f} < {self.options.threshold:g}"}
        return {"entailment": round(p, 4), "aligned": ok, **why}

    def figures(self) -> dict[str, Figure]:
        return {"alignment_micro": Ratio(Count("aligned"), Count("align_pairs")), "alignment_macro": Mean("alignment")}
