"""What the intervals cost: `kalma evaluate --metrics citation` on the 1,085-entry BioKaLMA
release (synthetic answers), with 10,000 bootstrap resamples for every figure against none
(`--resamples 0`), each a whole command in its own process, alternated over rounds; then the
interval step alone, in this process, for the citation metric and for the default three
(citation, alignment, [NA]), and `kalma compare` of two such evaluations.

    python -m perf.interval_cost [--rounds 11]

The goal (issue 53): the intervals add at most 10% to the command's time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.synthetic import synthetic_answers
from evaluation.base import EvalOptions, get_metric
from evaluation.runner import SCORES_FILE, uncertainty
from kalma.biokalma import release_entries
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.schema import AnswerScores, Summary

from .common import report, require_biokalma, scratch, timed

KALMA = [sys.executable, "-m", "kalma.cli"]


def command(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one command in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(KALMA + args, check=True, capture_output=True, env={**os.environ, "KALMA_CACHE": "off"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    data = require_biokalma()
    work = Path(scratch())
    entries = release_entries(data / "complex_question_graph.json", data / "simple_question_graph.json")
    write_jsonl(work / "dataset.jsonl", entries, "dataset")
    for seed in (7, 8):
        write_jsonl(work / f"answers{seed}.jsonl", synthetic_answers(entries, seed=seed, model=f"synthetic-{seed}"), "answers")

    times: dict[int, list[tuple[float, float]]] = {0: [], 10_000: []}
    for i in range(args.rounds):
        for resamples in (0, 10_000) if i % 2 == 0 else (10_000, 0):
            out = work / f"eval-{resamples}-{i}"
            given = ["--dataset", str(work / "dataset.jsonl"), "--answers", str(work / "answers7.jsonl"), "--metrics", "citation"]
            times[resamples].append(command(["evaluate", *given, "--resamples", str(resamples), "-o", str(out)]))
    # The least of each is the command's own cost (other work only ever adds to it); the median says how much runs vary.
    wall = {k: min(w for w, _ in v) for k, v in times.items()}
    cpu = {k: min(c for _, c in v) for k, v in times.items()}
    median = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    summary = Summary.model_validate_json((work / "eval-10000-0" / "summary.json").read_text())
    assert summary.resampling is not None and summary.resampling.resamples == 10_000 and summary.intervals["citation"]

    rows = list(read_jsonl(work / "eval-10000-0" / SCORES_FILE, AnswerScores, kind="scores"))
    step: dict[str, float] = {}
    for label, specs in (("citation", ["citation"]), ("citation_alignment_na", ["citation", "alignment", "na"])):
        metrics = [get_metric(s, EvalOptions()) for s in specs]
        values = {m.name: m.aggregate([])[0] | {k: 0.5 for k in m.outputs} for m in metrics}  # every figure has a value: every one is resampled
        step[label] = min(timed(lambda: uncertainty(rows, metrics, values, 10_000, 0))[0] for _ in range(3))

    given = ["--dataset", str(work / "dataset.jsonl"), "--metrics", "citation", "--resamples", "0"]
    command(["evaluate", *given, "--answers", str(work / "answers8.jsonl"), "-o", str(work / "eval-b")])
    compare_wall, compare_cpu = command(["compare", str(work / "eval-0-0"), str(work / "eval-b"), "--json"])

    report(
        "interval_cost",
        {
            "entries": len(entries),
            "answers": len(rows),
            "rounds": args.rounds,
            "load_average_before": os.getloadavg()[0],
            "evaluate_citation_no_intervals_wall_s_least": wall[0],
            "evaluate_citation_10000_resamples_wall_s_least": wall[10_000],
            "wall_ratio_least": wall[10_000] / wall[0],
            "evaluate_citation_no_intervals_cpu_s_least": cpu[0],
            "evaluate_citation_10000_resamples_cpu_s_least": cpu[10_000],
            "cpu_ratio_least": cpu[10_000] / cpu[0],
            "wall_ratio_median": median[10_000] / median[0],
            "interval_step_citation_s": step["citation"],
            "interval_step_citation_alignment_na_s": step["citation_alignment_na"],
            "compare_two_evaluations_10000_wall_s": compare_wall,
            "compare_two_evaluations_10000_cpu_s": compare_cpu,
        },
    )


if __name__ == "__main__":
    main()
