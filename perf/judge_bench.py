"""What measuring a judge costs on the authors' release: `kalma judge pairs --llm template` (pairs
per second, the KG's look-ups included), and `kalma judge sensitivity` on a board of three
synthetic submissions (1,085 answers each) against `kalma evaluate`'s own cost for the same judge
and metrics. Not a timed test: figures for docs/judges.md.

    python -m perf.judge_bench
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.sensitivity import run
from bench.submissions import submit
from bench.synthetic import synthetic_answers
from evaluation.base import EvalOptions
from evaluation.judge_pairs import make_pairs
from evaluation.runner import evaluate
from kalma.biokalma import release_entries
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.schema import DatasetEntry

from .common import report, require_biokalma, scratch, timed

JUDGE = "lexical"
METRICS = ["alignment", "na"]


def _submit(tmp: Path, entries: list[DatasetEntry], seed: int) -> float:
    """File one synthetic submission on the board; the seconds it took (its `kalma evaluate`)."""
    answers = tmp / f"s{seed}.jsonl"
    meta = {"name": f"synthetic-{seed}", "model": f"synthetic-{seed}", "seed": seed, "settings": {}}
    write_jsonl(answers, synthetic_answers(entries, seed, model=f"synthetic-{seed}"), "answers", header={"submission": meta})
    took, _ = timed(lambda: submit(answers, tmp / "dataset.jsonl", tmp / "board", EvalOptions(nli=JUDGE), ["citation", *METRICS]))
    return took


def main() -> None:
    data = require_biokalma()
    tmp = Path(scratch())
    release = data / "complex_question_graph.json"
    subprocess.run([sys.executable, "-m", "kalma.cli", "kg", "import-biokalma", str(release), "-o", str(tmp / "kg.nt")], check=True, capture_output=True)
    entries = release_entries(release, data / "simple_question_graph.json")
    write_jsonl(tmp / "dataset.jsonl", entries, "dataset")
    source = open_source(f"oxigraph:{tmp / 'kg.nt'}")
    took, made = timed(lambda: make_pairs(entries, source, "template", dataset="biokalma"))
    rows: dict[str, object] = {"entries": len(entries), "pairs": len(made.rows), "pairs_seconds": took, "pairs_per_second": len(made.rows) / took}

    for seed in range(3):
        rows[f"submit_{seed}_seconds"] = _submit(tmp, entries, seed)
    took, _ = timed(lambda: evaluate(tmp / "dataset.jsonl", tmp / "s0.jsonl", tmp / "one", metrics=METRICS, options=EvalOptions(nli=JUDGE), progress=False))
    rows["evaluate_alignment_na_seconds"] = took
    took, _ = timed(lambda: run(tmp / "board", tmp / "sensitivity", [JUDGE, JUDGE], []))
    rows["sensitivity_seconds"] = took
    rows["sensitivity_per_judge_per_submission_seconds"] = took / 6
    rows["sensitivity_per_judge_per_submission_over_evaluate"] = took / 6 / float(rows["evaluate_alignment_na_seconds"])  # type: ignore[arg-type]
    rows["judge"] = f"{JUDGE} (rule-based approximation, not an NLI model)"
    report("judge_bench", rows)


if __name__ == "__main__":
    main()
