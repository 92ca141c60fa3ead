"""Citation metrics for 1,085 synthetic answers built from the BioKaLMA release: the
evaluator's path (one parse per answer, hashed KG keys) against a naive one (KG triples
scanned as a list for every citation), in the same run.

    python -m bench.perf.eval_bench
"""

from __future__ import annotations

from bench.synthetic import synthetic_answers
from evaluation.base import EvalItem, EvalOptions
from evaluation.citation_quality import CitationQuality
from kalma.biokalma import release_entries
from kalma.citations import parse_answer
from kalma.properties import NAME_IDENTITY
from kalma.schema import normalize_text

from .common import report, require_biokalma, timed


def naive_correct(items: list[EvalItem]) -> int:
    n = 0
    for it in items:
        v = it.vocabulary
        triples = it.kg.triples()
        names = [(e.qid, NAME_IDENTITY, normalize_text(e.label)) for e in it.kg.entities]
        for c in parse_answer(it.answer.text, v).citations:
            key = v.citation_key(c.qid, c.relation, c.value)
            n += any(v.triple_key(t) == key for t in triples) or key in names
    return n


def main() -> None:
    data = require_biokalma()
    entries = release_entries(data / "complex_question_graph.json", data / "simple_question_graph.json")
    by_id = {e.id: e for e in entries}
    answers = synthetic_answers(entries, seed=7)
    metric = CitationQuality(EvalOptions())
    t_build, items = timed(lambda: [EvalItem.build(a, by_id[a.entry_id]) for a in answers])
    t_fast, scored = timed(lambda: metric.score(items))
    t_naive, n_correct = timed(lambda: naive_correct(items))
    assert n_correct == sum(s.counts["correct"] for s in scored)
    report("eval_bench", {
        "answers": len(answers),
        "citations": sum(s.counts["citations"] for s in scored),
        "parse_seconds": t_build,
        "citation_metrics_seconds": t_fast,
        "parse_plus_metrics_seconds": t_build + t_fast,
        "naive_seconds": t_naive,
        "speedup_naive_over_metrics": t_naive / t_fast,
    })


if __name__ == "__main__":
    main()
