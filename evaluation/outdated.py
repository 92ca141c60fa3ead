"""Outdated claims (`kalma evaluate --previous-kg OLD`): does an answer say what the previous KG
held instead of what it was given?

Card
- Measures: the sentences of an answer that state an outdated value: a value OLD held for a
  subject and property of the entry that the entry's knowledge (its pool and the KG given to the
  model) no longer holds. A sentence states it when it cites that triple, or entails it by the
  run's entailment backend (`--nli`, at the run's threshold: the value matching every metric
  uses), cited or not. A sentence marked [NA] states nothing: it says the knowledge is missing.
  Each sentence counts once, however many outdated values it states.
- Outputs: `outdated_per_answer` (outdated sentences per answer), `outdated_sentence_rate` (of all
  sentences), `answers_with_outdated` (share of answers with one or more), `outdated_cited_rate`
  (of the outdated sentences, those that cite the outdated triple), each with its interval; and
  `outdated_claims`, their total.
- Range: rates 0 to 1; a count per answer from 0.
- Needs: OLD, the KG the model may remember (`--previous-kg OLD`, or the spec after `outdated:`;
  without it the metric is unavailable); the run's entailment backend.
- Reference: the knowledge-conflict question (does an answer follow the context or its memory?),
  asked of TemporalWiki-style changed facts (Jang et al., 2022).
"""

from __future__ import annotations

from collections.abc import Sequence

from dataset_builder.pool import has_label
from kalma.models import get_entailment
from kalma.schema import DatasetEntry, Triple
from kalma.verbalize import hypothesis

from .alignment import entailment_label
from .base import Card, EvalItem, EvalOptions, Metric, Scored, approximate_entailment
from .figures import ANSWERS, Count, Figure, Ratio


def fact(t: Triple) -> tuple[str, str, str]:
    """A triple's identity across KGs: subject, property and value ids."""
    return (t.subject, t.relation or t.relation_label, t.value)


class OutdatedClaims(Metric):
    name = "outdated"
    card = Card(
        "sentences stating a value the previous KG held and the given knowledge no longer holds", "0-1; a count per answer", "TemporalWiki (Jang et al., 2022)"
    )
    needs = ("nli",)
    outputs = ("outdated_per_answer", "outdated_sentence_rate", "answers_with_outdated", "outdated_cited_rate", "outdated_claims")
    scales = {"outdated_per_answer": "per answer", "outdated_claims": "count"}

    def __init__(self, previous_kg: str | None = None, *, options: EvalOptions):
        super().__init__(options)
        self.previous_kg = previous_kg
        self.old: dict[str, list[Triple]] = {}  # entity -> its triples in OLD

    def models(self) -> dict[str, str]:
        from kalma.kg.version import describe, kg_version

        # the KG's dump date and digest, not only its spec: a spec names a folder whose content changes
        kg = describe(kg_version(self.previous_kg)) if self.previous_kg else "(none given)"
        return {"outdated": f"previous KG {kg}; {entailment_label(self.options.nli)}"}

    def caveats(self) -> list[str]:
        return approximate_entailment(self.options.nli)

    def prepare(self, entries: Sequence[DatasetEntry]) -> None:
        from kalma.kg import open_source

        if not self.previous_kg:
            return
        people = sorted({q for e in entries for q in e.people})
        self.old = {q: g.triples for q, g in open_source(self.previous_kg).subgraphs(people).items()}

    def outdated(self, item: EvalItem) -> list[Triple]:
        """OLD's labelled triples of the entry's people that neither its pool nor the KG given holds."""
        if item.entry is None:
            return []
        known = {fact(t) for t in item.entry.knowledge_pool.triples()} | {fact(t) for t in item.kg.triples()}
        olds = (t for q in item.entry.people for t in self.old.get(q, []))
        return [t for t in olds if fact(t) not in known and has_label(t)]

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        if not self.previous_kg:
            why = "outdated claims unavailable: name the previous KG (--previous-kg OLD, or --metric outdated:OLD)"
            return [Scored({"outdated": None}, {}, {self.name: why}) for _ in items]
        stale = [self.outdated(it) for it in items]
        pairs, index = [], []
        for i, it in enumerate(items):
            for si, s in enumerate(it.parsed.sentences):
                if not s.na:
                    for ti, t in enumerate(stale[i]):
                        pairs.append((s.clean, hypothesis(t)))
                        index.append((i, si, ti))
        probs = get_entailment(self.options.nli).probs(pairs) if pairs else []
        stated = {key for key, p in zip(index, probs) if p >= self.options.threshold}
        out = []
        for i, it in enumerate(items):
            keys = {it.vocabulary.triple_key(t): ti for ti, t in enumerate(stale[i])}
            per: dict[int, dict[str, list[str]]] = {}
            cited = 0
            for si, s in enumerate(it.parsed.sentences):
                if s.na:
                    continue
                by_citation = {keys[k] for c in s.citations if (k := it.vocabulary.citation_key(c.qid, c.relation, c.value)) in keys}
                found = by_citation | {ti for ti in range(len(stale[i])) if (i, si, ti) in stated}
                if found:
                    per[si] = {"outdated": [f"{t.subject}, {t.relation_label}: {t.value_label}" for ti, t in enumerate(stale[i]) if ti in found]}
                    cited += bool(by_citation)
            n, sentences = len(per), sum(not s.na for s in it.parsed.sentences)
            counts = {"outdated": n, "outdated_cited": cited, "sentences": sentences, "with_outdated": int(n > 0)}
            out.append(Scored({"outdated": float(n)}, counts, per_sentence=per))
        return out

    def figures(self) -> dict[str, Figure]:
        said = Count("outdated")
        return {
            "outdated_per_answer": Ratio(said, ANSWERS),
            "outdated_sentence_rate": Ratio(said, Count("sentences")),
            "answers_with_outdated": Ratio(Count("with_outdated"), ANSWERS),
            "outdated_cited_rate": Ratio(Count("outdated_cited"), said),
        }

    def aggregate(self, rows: Sequence[Scored]) -> tuple[dict[str, float | None], dict[str, int]]:
        values, dropped = super().aggregate(rows)
        return {**values, "outdated_claims": float(sum(r.counts.get("outdated", 0) for r in rows))}, dropped
