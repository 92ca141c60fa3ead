"""Intervals and paired tests (evaluation/uncertainty.py, figures.py, compare.py): each broken the
way a statistic goes wrong without anyone noticing a number change much."""

from __future__ import annotations

from . import Mutation

UNITS = "tests/unit/test_uncertainty.py"
E2E = "tests/e2e/test_intervals.py"

MUTATIONS = (
    Mutation(
        "answers resampled instead of entries",
        "evaluation/uncertainty.py",
        "unit: Callable[[AnswerScores], str] = lambda r: r.entry_id",
        "unit: Callable[[AnswerScores], str] = lambda r: r.answer_id",
        (UNITS, E2E),
    ),
    Mutation(
        "citations resampled as if independent (every unit's sums split evenly into draws of one)",
        "evaluation/uncertainty.py",
        "        yield np.bincount(picks.ravel(), minlength=b * units).reshape(b, units).astype(float)",
        "        yield np.full((b, units), 1.0) + rng.normal(0, 0.2, size=(b, units))",
        (UNITS,),
    ),
    Mutation(
        "the pairing dropped: B resampled on draws of its own",
        "evaluation/uncertainty.py",
        "            sa, sb = w @ ma, w @ mb",
        "            sa, sb = w @ ma, w[::-1] @ mb",
        (UNITS, E2E),
    ),
    Mutation(
        "the seed forgotten",
        "evaluation/uncertainty.py",
        "    rng = np.random.default_rng(seed)\n",
        "    rng = np.random.default_rng()\n",
        (UNITS,),
    ),
    Mutation(
        "resamples without a value dropped in silence",
        "evaluation/uncertainty.py",
        "    return float(low), float(high), int(values.size - ok.size)",
        "    return float(low), float(high), 0",
        (UNITS,),
    ),
    Mutation(
        "the interval's tails at the wrong level",
        "evaluation/uncertainty.py",
        "    tail = (1 - level) / 2",
        "    tail = 1 - level",
        (UNITS,),
    ),
    Mutation(
        "the randomization swaps each entry with probability 1/4",
        "evaluation/uncertainty.py",
        "            swap = rng.integers(0, 2, size=(min(BLOCK, resamples - start), units), dtype=np.uint8).astype(float) @ d",
        "            swap = (rng.random(size=(min(BLOCK, resamples - start), units)) < 0.25).astype(float) @ d",
        (UNITS,),
    ),
    Mutation(
        "the randomization test one-sided",
        "evaluation/uncertainty.py",
        "                stat = np.abs(_evaluate(f, {n: pa[:, i] for i, n in enumerate(names)}) - _evaluate(f, {n: pb[:, i] for i, n in enumerate(names)}))",
        "                stat = _evaluate(f, {n: pa[:, i] for i, n in enumerate(names)}) - _evaluate(f, {n: pb[:, i] for i, n in enumerate(names)})",
        (UNITS,),
    ),
    Mutation(
        "the observed swap not counted (p can reach 0)",
        "evaluation/uncertainty.py",
        "            p = (hits[k] + 1) / (resamples + 1) if resamples > 0 else None",
        "            p = hits[k] / resamples if resamples > 0 else None",
        (UNITS,),
    ),
    Mutation(
        "a micro figure's denominator taken from every answer, not those with a minimum set",
        "evaluation/citation_quality.py",
        'Ratio(Count("precise"), Count("citations", given="minimum"))',
        'Ratio(Count("precise"), Count("citations"))',
        ("tests/unit/test_evaluation.py", "tests/e2e/test_bench.py"),
    ),
    Mutation(
        "the spread over runs with the population deviation",
        "evaluation/uncertainty.py",
        "float(v.std(ddof=1)) if v.size > 1 else None",
        "float(v.std()) if v.size > 1 else None",
        (UNITS,),
    ),
    Mutation(
        "compare without the knowledge check",
        "evaluation/compare.py",
        "    elif differ := [e for e in entries if a.knowledge.get(e) != b.knowledge.get(e)]:",
        "    elif differ := []:",
        (E2E,),
    ),
    Mutation(
        "compare pairing entries answered a different number of times without averaging them",
        "evaluation/compare.py",
        "    sums = t.sums[rows_of] / per",
        "    sums = t.sums[rows_of]",
        (E2E,),
    ),
    Mutation(
        "the leaderboard never marking a tie",
        "bench/leaderboard.py",
        "            r.tied = d is None or d.p is None or d.p >= ALPHA",
        "            r.tied = False",
        (E2E,),
    ),
    Mutation(
        "the leaderboard counting rows below as above",
        "bench/leaderboard.py",
        "                above += d.diff < 0",
        "                above += d.diff > 0",
        (E2E,),
    ),
    Mutation(
        "the leaderboard's intervals left out",
        "bench/leaderboard.py",
        "        intervals={k: (b.low, b.high) for k, _ in COLUMNS if (b := _bounds(s, k)) is not None and b.low is not None and b.high is not None},",
        "        intervals={},",
        (E2E,),
    ),
    Mutation(
        "the bench tables without their intervals over entries",
        "bench/experiments.py",
        "                stat.low, stat.high = i.low, i.high",
        "                pass",
        ("tests/e2e/test_bench.py::test_bench_run_is_traceable_and_resumes",),
    ),
    Mutation(
        "the pool written out read as other knowledge than the pool omitted",
        "evaluation/runner.py",
        'value_digest(["pool" if kg == pool(a.entry_id) else kg, absent])',
        "value_digest([kg, absent])",
        (E2E,),
    ),
)
