"""The intervals and paired tests (evaluation.uncertainty) against a known truth.

- Coverage: synthetic evaluations drawn from a known per-entry distribution (entries differ, and
  an entry's answers and citations go together): the 95% interval over entries covers the true
  figure in 93-97% of them, and a bootstrap over citations, on the same data, does not.
- The paired test at no difference (one system's answers split at random into A and B): false
  positives at 0.05 within 3-7%, p-values uniform; with a real difference it rejects.
- Exactness on 6 entries: the approximate randomization p-value against all 2^6 swaps, and the
  bootstrap interval against the distribution of all 6^6 resamples.
- Two identical inputs: difference 0, interval [0, 0], p = 1.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evaluation.alignment import Alignment
from evaluation.base import EvalOptions
from evaluation.figures import F1, Count, Ratio, harmonic
from evaluation.uncertainty import bootstrap, draws, paired, spread, table
from kalma.schema import AnswerScores

ALIGNMENT = Alignment(EvalOptions())
TRUTH = 0.6  # the share of aligned citations in the population the simulated entries come from


def _rates(rng: np.random.Generator, entries: int) -> np.ndarray:
    """Each entry's own rate of aligned citations: entries differ (Beta, mean TRUTH)."""
    return rng.beta(3 * TRUTH, 3 * (1 - TRUTH), size=entries)


def _system(rng: np.random.Generator, rates: np.ndarray, runs: int = 2, shift: float = 0.0) -> list[AnswerScores]:
    """One simulated evaluation: each of an entry's `runs` answers has a Poisson number of
    citations, each aligned at the entry's rate (+ `shift`). Citations within an entry are
    therefore correlated, as in a real evaluation."""
    rows = []
    for e, rate in enumerate(np.clip(rates + shift, 0, 1)):
        for run in range(runs):
            n = 1 + rng.poisson(4)
            aligned = rng.binomial(n, rate)
            rows.append(
                AnswerScores(
                    answer_id=f"e{e}#s{run}",
                    entry_id=f"e{e}",
                    values={"alignment": {"alignment": aligned / n}},
                    counts={"alignment": {"aligned": int(aligned), "align_pairs": int(n)}},
                )
            )
    return rows


def _entries(rng: np.random.Generator, entries: int, runs: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Per entry, the aligned citations and the citations of its `runs` answers (as `_system`
    draws them, without building rows): the sums `table` makes of a real evaluation."""
    rates = _rates(rng, entries)
    n = 1 + rng.poisson(4, size=(entries, runs))
    return rng.binomial(n, rates[:, None]).sum(axis=1).astype(float), n.sum(axis=1).astype(float)


def test_the_interval_over_entries_covers_the_truth_and_one_over_citations_does_not():
    rng = np.random.default_rng(20261127)
    micro = {"micro": lambda s: s["aligned"] / s["pairs"]}
    covered, by_citation = [], []
    for i in range(1000):
        aligned, pairs = _entries(rng, entries=120)
        found = bootstrap({"aligned": aligned, "pairs": pairs}, micro, resamples=1000, seed=i)["micro"]
        assert found.undefined == 0 and found.low is not None and found.high is not None
        covered.append(found.low <= TRUTH <= found.high)
        if i % 10 == 0:  # the wrong unit, on a tenth of the same data: every citation drawn on its own, as if independent
            flags = np.repeat(np.r_[1.0, 0.0], [int(aligned.sum()), int((pairs - aligned).sum())])
            wrong = bootstrap({"aligned": flags, "pairs": np.ones_like(flags)}, micro, resamples=500, seed=i)["micro"]
            by_citation.append(wrong.low <= TRUTH <= wrong.high)  # type: ignore[operator]
    assert 0.93 <= np.mean(covered) <= 0.97, np.mean(covered)
    assert np.mean(by_citation) < 0.85, np.mean(by_citation)  # far too narrow


def _paired(a: list[AnswerScores], b: list[AnswerScores], resamples: int, seed: int):
    ta, tb = table(a, [ALIGNMENT]), table(b, [ALIGNMENT])
    assert ta.units == tb.units
    return paired(ta.columns(), tb.columns(), ta.estimates, resamples=resamples, seed=seed)["alignment.alignment_micro"]


def test_the_paired_test_keeps_its_level_at_no_difference_and_rejects_a_real_one():
    from scipy import stats  # imported here: at collection it cost each worker 1.5 s

    rng = np.random.default_rng(7)
    micro = {"micro": lambda s: s["aligned"] / s["pairs"]}
    ps = []
    for i in range(600):
        # One system's two answers to each of 60 entries (`_entries` per run), one to A and one to B
        # at random: two systems that do not differ.
        rates = _rates(rng, 60)
        n = 1 + rng.poisson(4, size=(60, 2))
        aligned = rng.binomial(n, rates[:, None])
        to_a = rng.random(60) < 0.5
        pick = np.where(to_a[:, None], [0, 1], [1, 0])
        a = {"aligned": aligned[np.arange(60), pick[:, 0]].astype(float), "pairs": n[np.arange(60), pick[:, 0]].astype(float)}
        b = {"aligned": aligned[np.arange(60), pick[:, 1]].astype(float), "pairs": n[np.arange(60), pick[:, 1]].astype(float)}
        ps.append(paired(a, b, micro, resamples=500, seed=i)["micro"].p)
    assert 0.03 <= np.mean(np.array(ps) <= 0.05) <= 0.07, np.mean(np.array(ps) <= 0.05)
    assert stats.kstest(ps, "uniform").pvalue > 0.01  # uniform, not only right at 0.05
    # Power: A 8 points better on each of 150 entries (each system's answers drawn on their own).
    rejected = []
    for i in range(100):
        rates, n = _rates(rng, 150), 1 + rng.poisson(4, size=(150, 2))
        a = {"aligned": rng.binomial(n[:, 0], np.clip(rates + 0.08, 0, 1)).astype(float), "pairs": n[:, 0].astype(float)}
        b = {"aligned": rng.binomial(n[:, 1], rates).astype(float), "pairs": n[:, 1].astype(float)}
        rejected.append(paired(a, b, micro, resamples=500, seed=i)["micro"].p < 0.05)
    assert np.mean(rejected) >= 0.8, np.mean(rejected)
    rates = _rates(rng, 60)  # and through the evaluator's rows: a system 20 points better on each of 60 entries
    d = _paired(_system(rng, rates, runs=1, shift=0.2), _system(rng, rates, runs=1), resamples=2000, seed=0)
    assert d.p is not None and d.p < 0.01 and d.low is not None and d.low > 0, d  # type: ignore[operator]


def _six_entries() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    a = {"hit": np.array([3.0, 1.0, 4.0, 0.0, 2.0, 5.0]), "n": np.array([4.0, 2.0, 5.0, 1.0, 4.0, 5.0])}
    b = {"hit": np.array([3.0, 0.0, 3.0, 1.0, 2.0, 4.0]), "n": np.array([4.0, 3.0, 5.0, 2.0, 4.0, 5.0])}
    return a, b


def _micro(s):
    return s["hit"] / s["n"]


def test_approximate_randomization_equals_the_exact_test_on_six_entries():
    a, b = _six_entries()
    observed = abs(_micro({k: v.sum() for k, v in a.items()}) - _micro({k: v.sum() for k, v in b.items()}))
    reached = 0
    for swap in itertools.product((0, 1), repeat=6):
        s = np.array(swap, dtype=bool)
        pa = {k: np.where(s, b[k], a[k]).sum() for k in a}
        pb = {k: np.where(s, a[k], b[k]).sum() for k in a}
        reached += abs(_micro(pa) - _micro(pb)) >= observed - 1e-12
    exact = reached / 64
    resamples = 20_000
    got = paired(a, b, {"micro": _micro}, resamples=resamples, seed=3)["micro"]
    assert got.p is not None and abs(got.p - exact) < 4 * np.sqrt(exact * (1 - exact) / resamples) + 1 / resamples
    assert 0.05 < exact < 0.95  # a case where the test has something to decide


def test_the_bootstrap_interval_equals_the_one_from_every_resample_of_six_entries():
    a, _ = _six_entries()
    every = np.array(list(itertools.product(range(6), repeat=6)))  # all 6^6 equally likely resamples
    weights = np.stack([np.bincount(row, minlength=6) for row in every]).astype(float)
    exact = np.quantile(_micro({k: weights @ v for k, v in a.items()}), [0.025, 0.975])
    got = bootstrap(a, {"micro": _micro}, resamples=20_000, seed=5)["micro"]  # 20,000 of 46,656
    assert got.low == pytest.approx(exact[0], abs=0.02) and got.high == pytest.approx(exact[1], abs=0.02)
    assert got.point == pytest.approx(15 / 21)


def test_the_observed_assignment_counts_so_p_is_never_zero():
    """A is far better on every one of 20 entries: no random swap reaches the observed difference
    but the observed assignment itself, so p is 1/(resamples + 1), never 0."""
    a = {"hit": np.full(20, 9.0), "n": np.full(20, 10.0)}
    b = {"hit": np.full(20, 1.0), "n": np.full(20, 10.0)}
    assert paired(a, b, {"micro": _micro}, resamples=200, seed=0)["micro"].p == 1 / 201


def test_a_swap_that_leaves_a_figure_without_a_value_counts_against_the_difference():
    """A cites only in unit 0 (all right), B only in unit 1 (all wrong). Swapping one unit leaves one
    side with no citation: such swaps count as reaching the observed difference (never a smaller p
    for want of a value), so every swap does here and p is 1."""
    a = {"hit": np.array([2.0, 0.0]), "n": np.array([2.0, 0.0])}
    b = {"hit": np.array([0.0, 0.0]), "n": np.array([0.0, 2.0])}
    got = paired(a, b, {"micro": _micro}, resamples=400, seed=0)["micro"]
    assert got.diff == 1.0 and got.p == 1.0


def test_an_f1_is_undefined_where_either_side_is_and_zero_where_both_are():
    assert np.isnan(harmonic(np.nan, 0.5)) and harmonic(0.0, 0.0) == 0.0 and harmonic(0.5, 1.0) == pytest.approx(2 / 3)
    p = Ratio(Count("hit"), Count("cited"))
    f1 = F1(p, p)
    assert np.isnan(f1({Count("hit"): 0.0, Count("cited"): 0.0})) and f1({Count("hit"): 0.0, Count("cited"): 3.0}) == 0.0


def test_two_identical_inputs_differ_by_nothing():
    a, _ = _six_entries()
    d = paired(a, {k: v.copy() for k, v in a.items()}, {"micro": _micro}, resamples=1000, seed=0)["micro"]
    assert (d.diff, d.low, d.high, d.p) == (0.0, 0.0, 0.0, 1.0)


def test_seeded_the_same_and_reseeded_otherwise():
    a, _ = _six_entries()
    once, again, other = (bootstrap(a, {"micro": _micro}, resamples=500, seed=s)["micro"] for s in (1, 1, 2))
    assert once == again and (once.low, once.high) != (other.low, other.high)
    blocks = [w.sum(axis=1) for w in draws(6, 2500, 9)]
    assert sum(len(b) for b in blocks) == 2500 and all((b == 6).all() for b in blocks)  # each resample draws as many as there are units


def test_a_resample_without_a_denominator_is_counted_never_dropped():
    one = {"hit": np.array([1.0, 0.0, 0.0, 0.0]), "n": np.array([2.0, 0.0, 0.0, 0.0])}  # only the first unit has citations
    got = bootstrap(one, {"micro": _micro}, resamples=4000, seed=0)["micro"]
    assert got.point == 0.5 and got.resamples == 4000
    assert got.undefined == pytest.approx(4000 * (3 / 4) ** 4, rel=0.1)  # the resamples that missed the first unit
    assert got.low == got.high == 0.5


def test_the_units_are_entries_with_all_their_answers_and_runs_spread_apart():
    rows = _system(np.random.default_rng(1), _rates(np.random.default_rng(0), 5), runs=3)
    by_entry, by_run = table(list(reversed(rows)), [ALIGNMENT]), table(rows, [ALIGNMENT], unit=lambda r: r.answer_id.split("#")[1])
    assert by_entry.units == [f"e{i}" for i in range(5)]  # sorted: the same rows in any order give the same table
    pairs = by_entry.columns()
    assert next(v for (m, c), v in pairs.items() if repr(c).startswith("Count(key='align_pairs'"))[0] == sum(
        r.counts["alignment"]["align_pairs"] for r in rows if r.entry_id == "e0"
    )
    mean, sd, runs = spread(by_run)["alignment.alignment_micro"]

    def run_micro(run: str) -> float:
        mine = [r.counts["alignment"] for r in rows if r.answer_id.endswith(run)]
        return sum(c["aligned"] for c in mine) / sum(c["align_pairs"] for c in mine)

    per_run = [run_micro(s) for s in ("s0", "s1", "s2")]
    assert runs == 3 and mean == pytest.approx(np.mean(per_run)) and sd == pytest.approx(np.std(per_run, ddof=1))


def test_the_bench_tables_f1_interval_surrounds_the_f1_they_show_when_seeds_differ():
    """Two seeds whose precision and recall differ: the table's F1 is 2PR/(P+R) of the mean P and
    mean R (not the mean of the seeds' F1), and its interval over entries is drawn around that."""
    from bench.experiments import over_seeds
    from evaluation.base import f1
    from evaluation.uncertainty import Table, intervals

    def seed(tp: list[int], fp: list[int], fn: list[int]) -> Table:
        estimates = {
            "citation.precision_micro": lambda s: s["tp"] / (s["tp"] + s["fp"]),
            "citation.recall_micro": lambda s: s["tp"] / (s["tp"] + s["fn"]),
            "citation.f1_micro": lambda s: 2 * s["tp"] / (2 * s["tp"] + s["fp"] + s["fn"]),
        }
        return Table(["e1", "e2", "e3", "e4"], np.array([tp, fp, fn], dtype=float).T, ["tp", "fp", "fn"], estimates)

    seeds = [seed([3, 2, 4, 1], [1, 0, 1, 2], [4, 3, 5, 2]), seed([1, 1, 2, 0], [3, 2, 4, 3], [0, 1, 1, 0])]
    p = [10 / 14, 4 / 16]
    r = [10 / 24, 4 / 6]
    shown = f1(sum(p) / 2, sum(r) / 2)
    assert shown != pytest.approx(sum(f1(x, y) for x, y in zip(p, r)) / 2, abs=1e-3)  # the seeds differ enough to tell the two apart
    found = intervals(over_seeds(seeds), resamples=500, seed=0)["citation.f1_micro"]
    assert found.point == pytest.approx(shown) and found.low is not None and found.high is not None and found.low <= shown <= found.high
    assert intervals(over_seeds(seeds), resamples=500, seed=0)["citation.precision_micro"].point == pytest.approx(sum(p) / 2)
