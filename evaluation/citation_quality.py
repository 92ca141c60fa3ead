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

from .base import Card, EvalItem, EvalOptions, Metric, Scored, f1, macro, micro, ratio, total  # noqa: F401 (EvalOptions: doctest)


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
            counts = {**it.markup_counts(), "correct": sum(correct)}
            values: dict[str, float | None] = {"correctness": ratio(sum(correct), len(cited))}
            notes = {}
            if it.minimum_set is None:
                values |= {"precision": None, "recall": None, "f1": None}
                notes["citation"] = "no minimum knowledge set: precision and recall unavailable"
            else:
                mins = {vocab.triple_key(t) for t in it.minimum_set}
                if original:
                    hits = len({k for k in cited if k in mins})
                    recalled = len({k for k in cited if k in mins})
                else:
                    hits = sum(ok and k in mins for k, ok in zip(cited, correct))
                    recalled = len({k for k, ok in zip(cited, correct) if ok and k in mins})
                counts |= {"precise": hits, "minimum": len(mins), "recalled": recalled}
                p, r = ratio(hits, len(cited)), ratio(recalled, len(mins))
                values |= {"precision": p, "recall": r, "f1": f1(p if p is not None else 0.0, r) if r is not None else None}
            out.append(Scored(values, counts, notes))
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

    def aggregate(self, rows: Sequence[Scored]) -> tuple[dict[str, float | None], dict[str, int]]:
        with_set = [r for r in rows if "minimum" in r.counts]
        p_micro, r_micro = micro(with_set, "precise", "citations"), micro(with_set, "recalled", "minimum")
        values: dict[str, float | None] = {
            "correctness_micro": micro(rows, "correct", "citations"),
            "precision_micro": p_micro,
            "recall_micro": r_micro,
            "f1_micro": f1(p_micro, r_micro),
        }
        dropped: dict[str, int] = {}
        c_macro, dropped["correctness_macro"] = macro(rows, "correctness")
        p_macro, dropped["precision_macro"] = macro(rows, "precision")
        r_macro, dropped["recall_macro"] = macro(rows, "recall")
        values |= {"correctness_macro": c_macro, "precision_macro": p_macro, "recall_macro": r_macro, "f1_macro": f1(p_macro, r_macro)}
        values["malformed_per_answer"] = ratio(sum(r.counts.get("malformed", 0) for r in rows), len(rows))
        return values, dropped
