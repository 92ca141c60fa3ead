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
        "    both = _resampled(np.hstack([ma, mb]), resamples, seed)",
        "    both = np.hstack([_resampled(ma, resamples, seed), _resampled(mb, resamples, seed + 1)])",
        (UNITS, E2E),
    ),
    Mutation(
        "the seed forgotten",
        "evaluation/uncertainty.py",
        "    rng = np.random.default_rng(seed % 2**64)",
        "    rng = np.random.default_rng()",
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
        "rng.integers(0, 2, size=(b, len(ma)), dtype=np.uint8).astype(float) @ d",
        "(rng.random(size=(b, len(ma))) < 0.25).astype(float) @ d",
        (UNITS,),
    ),
    Mutation(
        "the randomization test one-sided",
        "evaluation/uncertainty.py",
        "        stat = np.abs(_evaluate(f, {n: pa[:, i] for i, n in enumerate(names)}) - _evaluate(f, {n: pb[:, i] for i, n in enumerate(names)}))",
        "        stat = _evaluate(f, {n: pa[:, i] for i, n in enumerate(names)}) - _evaluate(f, {n: pb[:, i] for i, n in enumerate(names)})",
        (UNITS,),
    ),
    Mutation(
        "the observed swap not counted (p can reach 0)",
        "evaluation/uncertainty.py",
        "        p = (hits + 1) / (resamples + 1) if resamples > 0 else None",
        "        p = hits / resamples if resamples > 0 else None",
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
        "    elif differ := [e for e in entries if MISSING not in (x := a.knowledge.get(e), y := b.knowledge.get(e)) and x != y]:",
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
        "        tied = bool(i) and (above is None or above.p is None or above.p >= ALPHA)",
        "        tied = False",
        (E2E, "bench/leaderboard.py"),
    ),
    Mutation(
        "the leaderboard counting rows below as above",
        "bench/leaderboard.py",
        "                better += d.diff < 0",
        "                better += d.diff > 0",
        (E2E, "bench/leaderboard.py"),
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
        '"pool" if kg == pool(a.entry_id) else kg, absent])',
        "kg, absent])",
        (E2E,),
    ),
    Mutation(
        "the resamples without a value left out of the summary",
        "evaluation/runner.py",
        "Bounds(low=i.low, high=i.high, undefined=i.undefined)",
        "Bounds(low=i.low, high=i.high, undefined=0)",
        (E2E,),
    ),
    Mutation(
        "summary.md silent on the resamples without a value",
        "evaluation/runner.py",
        'missing = f" ({b.undefined:,} of {how.resamples:,} resamples without a value)" if b.undefined and how else ""',
        'missing = ""',
        (E2E,),
    ),
    Mutation(
        "a swap leaving a figure without a value not counted",
        "evaluation/uncertainty.py",
        "np.isnan(stat) | (stat >= observed - 1e-12 * max(1.0, observed))",
        "(stat >= observed - 1e-12 * max(1.0, observed))",
        (UNITS,),
    ),
    Mutation(
        "compare blind to the options a metric ran under",
        "evaluation/compare.py",
        "        elif mb[name][0] != spec or a.options(m) != b.options(m):",
        "        elif mb[name][0] != spec:",
        (E2E,),
    ),
    Mutation(
        "the knowledge digest blind to what was absent",
        "evaluation/runner.py",
        "        absent = sorted(t.model_dump_json() for t in a.absent or [])",
        "        absent = []",
        (E2E,),
    ),
    Mutation(
        "the knowledge digest blind to the question's setting",
        "evaluation/runner.py",
        "value_digest([a.setting, ",
        "value_digest([",
        (E2E,),
    ),
    Mutation(
        "compare's interval given high first",
        "evaluation/compare.py",
        '            "ci": [d.low, d.high],',
        '            "ci": [d.high, d.low],',
        (E2E,),
    ),
    Mutation(
        "the interval drawn with seed 0 whatever the run's seed",
        "evaluation/runner.py",
        "    found = intervals(by_entry, resamples=resamples, seed=seed)",
        "    found = intervals(by_entry, resamples=resamples, seed=0)",
        (E2E,),
    ),
    Mutation(
        "the interval drawn with the default resamples whatever was asked",
        "evaluation/runner.py",
        "    found = intervals(by_entry, resamples=resamples, seed=seed)",
        "    found = intervals(by_entry, resamples=RESAMPLES, seed=seed)",
        (E2E,),
    ),
    Mutation(
        "a tie judged against the first row, not the row above",
        "bench/leaderboard.py",
        "        above = _test(tests, name, names[i - 1]) if i else None",
        "        above = _test(tests, name, names[0]) if i else None",
        ("bench/leaderboard.py",),
    ),
    Mutation(
        "a row without F1 ranked among the others",
        "bench/leaderboard.py",
        "    ranked = [r for r in table.rows if not r.reference and r.values.get(RANK_BY) is not None]",
        "    ranked = [r for r in table.rows if not r.reference]",
        (E2E,),
    ),
    Mutation(
        "the spread over runs across conditions",
        "evaluation/runner.py",
        '    return {run: ", ".join(f"{k}={c.get(k)}" for k in differ) for run, c in asked.items()}',
        "    return dict.fromkeys(asked, ALL_RUNS)",
        (E2E,),
    ),
    Mutation(
        "an unanswered entry refused as other knowledge",
        "evaluation/compare.py",
        "if MISSING not in (x := a.knowledge.get(e), y := b.knowledge.get(e)) and x != y]",
        "if (x := a.knowledge.get(e)) != (y := b.knowledge.get(e))]",
        (E2E,),
    ),
    Mutation(
        "the bench tables' interval around the pooled figure, not the mean over seeds",
        "bench/experiments.py",
        "            return np.where(have > 0, np.nansum(per, axis=0) / np.maximum(have, 1), np.nan)",
        "            return np.nansum(per, axis=0)",
        ("tests/e2e/test_bench.py::test_bench_run_is_traceable_and_resumes",),
    ),
    Mutation(
        "an undefined F1 read as 0",
        "evaluation/figures.py",
        "np.where(np.isnan(both), np.nan, 0.0)",
        "0.0",
        (UNITS,),
    ),
    Mutation(
        "a difference rounding to zero printed with a sign",
        "evaluation/base.py",
        "    if float(text) == 0:\n        return show(0.0, scale)\n",
        "",
        ("evaluation/base.py",),
    ),
)
HARNESS_RUN = "tests/e2e/test_first_contact_7.py::test_a_complete_general_run_leaves_out_the_entry_it_never_asked"
MUTATIONS += (
    Mutation(
        "a complete lm-evaluation-harness run taken for a limited one",
        "kalma/answers_file.py",
        'if counted.get("effective") is not None and counted["effective"] < counted.get("original", 0):',
        'if counted.get("effective") is not None and counted["effective"] <= counted.get("original", 0):',
        (HARNESS_RUN,),
    ),
    Mutation(
        "an entry never asked in the general setting scored as an empty answer",
        "evaluation/runner.py",
        "    if not unasked:\n        return entries, []",
        "    if unasked or not unasked:\n        return entries, []",
        (HARNESS_RUN,),
    ),
)
MUTATIONS += (
    Mutation(
        "kalma compare's interval at 80%, not the 95% it says",
        "evaluation/compare.py",
        "estimates, resamples=resamples, seed=seed)",
        "estimates, resamples=resamples, seed=seed, level=0.8)",
        (f"{E2E}::test_compare_draws_at_the_level_it_says_with_the_seed_it_is_given",),
    ),
    Mutation(
        "kalma compare's --seed not reaching its draws",
        "evaluation/compare.py",
        "estimates, resamples=resamples, seed=seed)",
        "estimates, resamples=resamples, seed=0)",
        (f"{E2E}::test_compare_draws_at_the_level_it_says_with_the_seed_it_is_given",),
    ),
    Mutation(
        "the bench tables' F1 interval around the mean of the seeds' F1, not the F1 of their mean P and R",
        "bench/experiments.py",
        "            estimates[k] = _f1_of(estimates[p], estimates[r])",
        "            estimates[k] = mean(k)",
        (f"{UNITS}::test_the_bench_tables_f1_interval_surrounds_the_f1_they_show_when_seeds_differ",),
    ),
    Mutation(
        "the bench tables' F1 the mean of the seeds' F1",
        "bench/experiments.py",
        "            stat.mean = f1(sp.mean, sr.mean)",
        "            stat.mean = stat.mean",
        ("bench/experiments.py::bench.experiments.seed_stats",),
    ),
    Mutation(
        "the dataset digest in the file's line order",
        "evaluation/runner.py",
        "    ordered: list[DatasetEntry] = sorted(entries, key=lambda e: e.id)",
        "    ordered: list[DatasetEntry] = list(entries)",
        (f"{E2E}::test_the_dataset_is_the_same_in_another_line_order",),
    ),
    Mutation(
        "a submission url without a host accepted",
        "bench/submissions.py",
        '    return parts.scheme in {"http", "https"} and bool(parts.netloc)',
        '    return parts.scheme in {"http", "https"}',
        ("tests/e2e/test_first_contact_7.py::test_a_submission_url_must_be_a_web_address",),
    ),
    Mutation(
        "a seed recorded in an answer's settings taken for a condition",
        "evaluation/runner.py",
        '{"setting": a.setting, **{k: v for k, v in a.settings.items() if k != "seed"}}',
        '{"setting": a.setting, **a.settings}',
        (f"{E2E}::test_the_spread_is_over_seeds_within_each_condition_never_across_temperatures",),
    ),
)
MUTATIONS += (
    Mutation(
        "kalma answer asking an empty general question",
        "baselines/cli.py",
        "    asked = [e for e in entries if e.question(setting)]",
        "    asked = list(entries)",
        ("tests/e2e/test_first_contact_7.py::test_kalma_answer_asks_no_empty_general_question",),
    ),
)
# issue 65 §1 (tests/unit/test_audit_65.py)
AUDIT65 = "tests/unit/test_audit_65.py"
MUTATIONS += (
    Mutation(
        "kalma compare's paired interval at 90% while it records and prints 95%",
        "evaluation/uncertainty.py",
        "        low, high, undefined = _interval(diffs, level)",
        "        low, high, undefined = _interval(diffs, 0.9)",
        (f"{AUDIT65}::test_the_paired_interval_is_at_the_level_it_records",),
    ),
)
