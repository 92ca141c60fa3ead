"""Citation metrics for 1,085 synthetic answers built from the BioKaLMA release: the
evaluator's path (one parse per answer, hashed KG keys) against a naive one (KG triples
scanned as a list for every citation), in the same run. Then whole commands' worth of
writing: `evaluate --metrics citation` and the release import into a dataset file, with one
fsync per row (the old writer) against fsyncs in groups (the current one).

    python -m perf.eval_bench
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.synthetic import synthetic_answers
from evaluation.base import EvalItem, EvalOptions
from evaluation.citation_quality import CitationQuality
from kalma.biokalma import release_entries
from kalma.citations import parse_answer
from kalma.properties import NAME_IDENTITY
from kalma.schema import normalize_text

from .common import RESULTS, report, require_biokalma, timed


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
    rows = {
        "answers": len(answers),
        "citations": sum(s.counts["citations"] for s in scored),
        "parse_seconds": t_build,
        "citation_metrics_seconds": t_fast,
        "parse_plus_metrics_seconds": t_build + t_fast,
        "naive_seconds": t_naive,
        "speedup_naive_over_metrics": t_naive / t_fast,
    }
    rows |= writing(data, entries, answers)
    rows |= rerank_overlap(entries)
    report("eval_bench", rows)


def rerank_overlap(entries: list) -> dict[str, float]:
    """The rerank step's overlap (neighbour values found in the question), for every release
    question against every graph of its entry: word-bounded search without compiling a regex
    per value, against the per-value regex it replaced."""
    import re

    from baselines.retrieve import overlap

    def per_value_regex(question: str, graph) -> int:  # the replaced path, as reference
        low = question.lower()
        values = {v.lower().strip() for v in graph.values()} - {graph.label.lower()}
        return sum(1 for v in values if len(v) > 1 and re.search(rf"(?<!\w){re.escape(v)}(?!\w)", low))

    jobs = [(e.specific_question, g) for e in entries for g in e.knowledge_pool.entities] * 10
    t_new, a = timed(lambda: [overlap(q, g) for q, g in jobs])
    re.purge()
    t_old, b = timed(lambda: [per_value_regex(q, g) for q, g in jobs])
    assert a == b
    return {"rerank overlap, word-bounded find (s)": t_new, "rerank overlap, regex per value (s)": t_old, "rerank overlap speed-up": t_old / t_new}


def writing(data: Path, entries: list, answers: list) -> dict[str, float]:
    from evaluation.runner import evaluate
    from kalma import jsonl
    from kalma.jsonl import write_jsonl

    out: dict[str, float] = {}
    RESULTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:  # on the project's disk: /tmp may be memory
        d, a = Path(tmp) / "d.jsonl", Path(tmp) / "a.jsonl"
        write_jsonl(d, entries, "dataset")
        write_jsonl(a, answers, "answers")
        for label, every in (("fsync per row", 1), ("fsync in groups", jsonl.FSYNC_EVERY)):
            saved, jsonl.FSYNC_EVERY = jsonl.FSYNC_EVERY, every
            try:
                out[f"evaluate --metrics citation, {label} (s)"] = timed(
                    lambda: evaluate(d, a, Path(tmp) / f"eval-{every}", metrics=["citation"], progress=False)
                )[0]
                out[f"release import to dataset.jsonl, {label} (s)"] = timed(
                    lambda: write_jsonl(
                        Path(tmp) / f"bk-{every}.jsonl", release_entries(data / "complex_question_graph.json", data / "simple_question_graph.json"), "dataset"
                    )
                )[0]
            finally:
                jsonl.FSYNC_EVERY = saved
    out["evaluate speed-up from grouped fsync"] = (
        out["evaluate --metrics citation, fsync per row (s)"] / out["evaluate --metrics citation, fsync in groups (s)"]
    )
    out["release import speed-up from grouped fsync"] = (
        out["release import to dataset.jsonl, fsync per row (s)"] / out["release import to dataset.jsonl, fsync in groups (s)"]
    )
    return out


if __name__ == "__main__":
    main()
