"""Citation quality: correctness, precision, recall and F1, micro and macro (KaLMA §4.1).

Card
- Measures: whether cited triples exist in the KG given to the model (correctness), whether
  they are also in the question's minimum knowledge set (precision), and how much of that set
  is cited correctly (recall). A citation names a property: it matches a triple by property
  identity (PID, label, aliases; `kalma.properties`) and by exact value; `name: X` cites the
  entity's label.
- Range: 0 to 1 each.
- Reference: Li et al., "Towards Verifiable Generation: A Benchmark for Knowledge-aware
  Language Model Attribution" (KaLMA), Figure 2.
- `compat="original"`: the authors' code, where precision = distinct minimum-set triples hit
  / citations, and a recall hit need not be correct.

>>> from kalma.schema import Answer, DatasetEntry, EntityGraph, KnowledgeGraph, Triple
>>> ks = [Triple(subject="Q1", relation_label=f"r{i}", relation="", value=f"v{i}", value_label=f"v{i}") for i in range(1, 10)]
>>> entry = DatasetEntry(id="e", general_question="", specific_question="q",
...     knowledge_pool=KnowledgeGraph(entities=[EntityGraph(qid="Q1", label="X", triples=ks)]), minimum_set=ks[:5])
>>> c = lambda i: f"[Q1, r{i}: v{i}]"
>>> text = f"S1 {c(1)}{c(2)}. S2 {c(2)}{c(6)}[NA]. S3 {c(6)}{c(9)}."
>>> s = CitationQuality(EvalOptions()).score([EvalItem.build(Answer(entry_id="e", text=text, model="m"), entry)])[0]
>>> {k: round(v, 3) for k, v in s.values.items()}
{'correctness': 1.0, 'precision': 0.5, 'recall': 0.4, 'f1': 0.444}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kalma.citations import Citation
from kalma.properties import NAME_IDENTITY, Vocabulary
from kalma.schema import KnowledgeGraph

from .base import Card, EvalItem, EvalOptions, Metric, Scored, f1, ratio, total  # noqa: F401 (EvalOptions: doctest)
from .figures import ANSWERS, F1, Count, Figure, Mean, Ratio


class CitationQuality(Metric):
    name = "citation"
    card = Card(
        measures="correctness, precision, recall and F1 of triple citations",
        range="0-1",
        reference="KaLMA (Li et al.), §4.1 and Figure 2",
    )
    outputs = (
        "correctness_micro",
        "precision_micro",
        "recall_micro",
        "f1_micro",
        "correctness_macro",
        "precision_macro",
        "recall_macro",
        "f1_macro",
        "malformed_per_answer",
    )

    def score(self, items: Sequence[EvalItem]) -> list[Scored]:
        original = self.options.compat == "original"
        out = []
        for it in items:
            vocab = it.vocabulary
            kg = vocab.kg_keys(it.kg)
            cited = [vocab.citation_key(c.qid, c.relation, c.value) for c in it.parsed.citations]
            correct = [k in kg for k in cited]
            verdicts: list[dict[str, Any]] = [{"in_kg": ok} for ok in correct]
            counts = {**it.markup_counts(), "correct": sum(correct)}
            values: dict[str, float | None] = {"correctness": ratio(sum(correct), len(cited))}
            notes = {}
            if it.minimum_set is None:
                values |= {"precision": None, "recall": None, "f1": None}
                notes["citation"] = "no minimum knowledge set: precision and recall unavailable"
            else:
                mins = {vocab.triple_key(t) for t in it.minimum_set}
                # Each citation's `precise` flag is what the formula counted, so the flags sum to `hits`:
                # the authors' formula counts each distinct minimum-set triple once, correct or not.
                seen: set[tuple[str, str, str]] = set()
                for v, k, ok in zip(verdicts, cited, correct):
                    precise = k in mins and (k not in seen if original else ok)
                    v |= {"in_minimum": k in mins, "precise": precise}
                    if original and k in mins and k in seen:
                        v["why"] = "repeats a minimum-set triple cited before: the authors' formula (--compat original) counts it once"
                    elif ok and k not in mins:
                        v["why"] = "in the KG given but not in the minimum knowledge set: it counts against precision"
                    seen.add(k)
                hits = sum(v["precise"] for v in verdicts)
                recalled = len({k for k, ok in zip(cited, correct) if (ok or original) and k in mins})
                counts |= {"precise": hits, "minimum": len(mins), "recalled": recalled}
                p, r = ratio(hits, len(cited)), ratio(recalled, len(mins))
                values |= {"precision": p, "recall": r, "f1": f1(p if p is not None else 0.0, r) if r is not None else None}
            if not all(correct):
                why = Explainer(vocab, it.kg, it.entry.knowledge_pool if it.entry else None)
                for v, c in zip(verdicts, it.parsed.citations):
                    if not v["in_kg"]:
                        v["why"] = "; ".join(x for x in (why(c), v.get("why", "")) if x)
            out.append(Scored(values, counts, notes, per_citation=verdicts))
        return out

    scales = {"malformed_per_answer": "per answer"}

    def support(self, rows: Sequence[Scored], dropped: dict[str, int]) -> dict[str, int]:
        with_set = [r for r in rows if "minimum" in r.counts]
        micro_n = {
            "correctness_micro": total(rows, "citations"),
            "precision_micro": total(with_set, "citations"),
            "recall_micro": total(with_set, "minimum"),
            "f1_micro": total(with_set, "minimum"),
        }
        return {**super().support(rows, dropped), **micro_n}

    def figures(self) -> dict[str, Figure]:
        # Precision and recall are over the answers that have a minimum set (they alone count `minimum`).
        p, r = Ratio(Count("precise"), Count("citations", given="minimum")), Ratio(Count("recalled"), Count("minimum"))
        pm, rm = Mean("precision"), Mean("recall")
        return {
            "correctness_micro": Ratio(Count("correct"), Count("citations")),
            "precision_micro": p,
            "recall_micro": r,
            "f1_micro": F1(p, r),
            "correctness_macro": Mean("correctness"),
            "precision_macro": pm,
            "recall_macro": rm,
            "f1_macro": F1(pm, rm),
            "malformed_per_answer": Ratio(Count("malformed"), ANSWERS),
        }


class Explainer:
    """Why a citation is not in the KG given, in words: the nearest thing the KG does hold.

    >>> from kalma.schema import EntityGraph, Triple
    >>> t = Triple(subject="Q1", relation="P509", relation_label="cause of death", value="Q12204", value_label="tuberculosis")
    >>> kg = KnowledgeGraph(entities=[EntityGraph(qid="Q1", label="Ann", triples=[t])])
    >>> why = Explainer(Vocabulary.of(kg), kg, None)
    >>> why(Citation("Q1", "cause of death", "Tuberculosis"))
    "the KG given holds 'tuberculosis' for Q1, cause of death: it differs from 'Tuberculosis' in case only"
    >>> why(Citation("Q2", "cause of death", "x")), why(Citation("Q1", "spouse", "Bob"))
    ('Q2 is not an entity of the KG given', "the KG given has no 'spouse' of Q1")
    """

    def __init__(self, vocab: Vocabulary, kg: KnowledgeGraph, pool: KnowledgeGraph | None):
        self.vocab = vocab
        self.values: dict[tuple[str, str], list[str]] = {}
        for t in kg.triples():
            self.values.setdefault((t.subject, vocab.triple_identity(t)), []).append(t.value_label)
        for e in kg.entities:
            self.values.setdefault((e.qid, NAME_IDENTITY), []).append(e.label)
        self.qids = set(kg.qids())
        self.pool = vocab.kg_keys(pool) if pool is not None and pool is not kg else set()

    def __call__(self, c: Citation) -> str:
        key = self.vocab.citation_key(c.qid, c.relation, c.value)
        if key in self.pool:
            return "in the entry's knowledge pool, but not in the KG given (removed, or not retrieved)"
        if c.qid not in self.qids:
            return f"{c.qid} is not an entity of the KG given"
        held = self.values.get((c.qid, key[1]))
        if not held:
            unknown = "" if self.vocab.knows_label(c.relation) else " (a relation name the entry does not know)"
            return f"the KG given has no {c.relation!r} of {c.qid}{unknown}"
        if any(v.casefold() == key[2].casefold() for v in held):
            same = next(v for v in held if v.casefold() == key[2].casefold())
            return f"the KG given holds {same!r} for {c.qid}, {c.relation}: it differs from {c.value!r} in case only"
        shown = ", ".join(repr(v) for v in held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        return f"the KG given holds {shown} for {c.qid}, {c.relation}; not {c.value!r}"
