"""How sure a figure is: a percentile bootstrap over resampling units, and paired tests between
two systems scored on the same units.

A unit is what is drawn independently: for the evaluator a dataset entry, carried with all of its
answers, sentences and citations (citations within an answer are not independent, and resampling
them gives intervals that are too narrow). The caller sums each per-answer column within a unit;
a figure is a vectorised function of the columns' sums over the units of one resample. So a micro
figure is a ratio of summed counts in every resample, exactly as it is on the full data, and every
resample costs one row of a (resamples x units) weight matrix times a (units x columns) matrix:
no Python loop over resamples or answers.

>>> import numpy as np
>>> sums = {"correct": np.array([3.0, 1.0, 4.0, 0.0]), "cited": np.array([4.0, 2.0, 4.0, 1.0])}
>>> i = bootstrap(sums, {"correctness": lambda s: s["correct"] / s["cited"]}, resamples=2000)["correctness"]
>>> round(i.point, 4), i.low < i.point < i.high, i.resamples, i.undefined
(0.7273, True, 2000, 0)

A figure with no denominator in a resample is NaN there: it is counted (`undefined`), never
dropped in silence, and the interval is read from the resamples that have it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .figures import Column, Figure, columns

if TYPE_CHECKING:
    from kalma.schema import AnswerScores

    from .base import Metric

Sums = Mapping[Any, Any]  # column -> its sum over the units of a resample: an array of shape (B,), or a number
Estimate = Callable[[Sums], Any]  # a figure from the sums, NaN where it has no denominator

LEVEL = 0.95
RESAMPLES = 10_000
BLOCK = 128  # resamples drawn at once: a block's weights (BLOCK x units) stay in cache; 1,000 measured 1.8x slower
METHOD = "percentile bootstrap"
TEST = "paired approximate randomization, two-sided"


@dataclass(frozen=True)
class Interval:
    """A figure on the full data (`point`) and its `level` interval over `resamples` resamples,
    of which `undefined` had no value; low and high are None when no resample had one."""

    point: float | None
    low: float | None
    high: float | None
    resamples: int
    undefined: int
    level: float = LEVEL
    seed: int = 0


@dataclass(frozen=True)
class Difference:
    """A minus B on the same units: the paired bootstrap interval of the difference and the
    approximate-randomization p-value (None where either figure is undefined on the full data)."""

    a: float | None
    b: float | None
    diff: float | None
    low: float | None
    high: float | None
    p: float | None
    resamples: int
    undefined: int  # bootstrap resamples where either system's figure had no value
    level: float = LEVEL
    seed: int = 0
    differing: int | None = None  # units whose swap alone moves the difference: the test can only swap these

    def smallest_p(self) -> float | None:
        """The smallest two-sided p a swap test can give: its 2^k swaps of the k differing units
        pair off (every swap and its mirror give one |difference|), so at best 2 / 2^k."""
        return None if self.differing is None else min(1.0, 2.0 / 2**self.differing)


def _value(x: Any) -> float | None:
    v = float(x)
    return None if np.isnan(v) else v


def _evaluate(estimate: Estimate, sums: Sums) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(estimate(sums), dtype=float)


def _matrix(sums: Mapping[Any, Any]) -> tuple[list[Any], np.ndarray]:
    names = list(sums)
    if not names:
        return names, np.zeros((0, 0))
    m = np.column_stack([np.asarray(sums[n], dtype=float) for n in names])
    return names, m


def draws(units: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Bootstrap weights in blocks: row b counts how often each unit is drawn in resample b
    (`units` draws with replacement). Seeded, and the same for the same (units, resamples, seed)."""
    rng = np.random.default_rng(seed % 2**64)  # any integer seed a run was given, negative ones too
    small = np.uint16 if units <= np.iinfo(np.uint16).max else np.int64  # fewer random bits to draw
    done = 0
    while done < resamples:
        b = min(BLOCK, resamples - done)
        picks = rng.integers(0, units, size=(b, units), dtype=small) + units * np.arange(b)[:, None]
        yield np.bincount(picks.ravel(), minlength=b * units).reshape(b, units).astype(float)
        done += b


@functools.cache
def _blas() -> Any:
    """The process's BLAS libraries, found once: finding them walks every loaded library (hundreds
    with torch loaded), which took longer than the resamples of a 120-entry table."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS on one thread for the resamples' small products: its threads spin while they wait,
    and on a busy 2-core machine two of them made the intervals 4 times slower than one."""
    with _blas().limit(limits=1):
        yield


def _interval(values: np.ndarray, level: float) -> tuple[float | None, float | None, int]:
    ok = values[~np.isnan(values)]
    if not ok.size:
        return None, None, int(values.size)
    tail = (1 - level) / 2
    low, high = np.quantile(ok, [tail, 1 - tail])
    return float(low), float(high), int(values.size - ok.size)


def _resampled(m: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Each column's sum over the units of every resample: (resamples x columns)."""
    if not len(m) or resamples <= 0:
        return np.zeros((0, m.shape[1]))
    out = np.empty((resamples, m.shape[1]))
    with one_thread():
        done = 0
        for w in draws(len(m), resamples, seed):
            out[done : done + len(w)] = w @ m
            done += len(w)
    return out


def bootstrap(
    sums: Mapping[Any, Any], estimates: Mapping[str, Estimate], *, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL
) -> dict[str, Interval]:
    """Every figure of `estimates` with its percentile interval over `resamples` resamples of the
    units (`sums`: each column's value per unit, all of one length)."""
    names, m = _matrix(sums)
    point = {k: _value(_evaluate(f, {n: m[:, i].sum() for i, n in enumerate(names)})) for k, f in estimates.items()}
    resampled = _resampled(m, resamples, seed)
    columns = {n: resampled[:, i] for i, n in enumerate(names)}
    out = {}
    for k, f in estimates.items():
        values = _evaluate(f, columns) if len(resampled) else np.zeros(0)
        low, high, undefined = _interval(values, level) if point[k] is not None else (None, None, int(values.size))
        out[k] = Interval(point[k], low, high, int(values.size), undefined, level, seed)
    return out


def _swapped(ma: np.ndarray, mb: np.ndarray, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each column's sums for A and for B in every random swap of units between them: swapping
    unit u moves (b_u - a_u) from A's sums to B's, so A' = A + S @ D and B' = B - S @ D."""
    rng, d = np.random.default_rng([seed % 2**64, 1]), mb - ma
    moved = np.empty((resamples, ma.shape[1]))
    with one_thread():
        for start in range(0, resamples, BLOCK):
            b = min(BLOCK, resamples - start)
            moved[start : start + b] = rng.integers(0, 2, size=(b, len(ma)), dtype=np.uint8).astype(float) @ d
    return ma.sum(axis=0) + moved, mb.sum(axis=0) - moved


def paired(
    a: Mapping[Any, Any],
    b: Mapping[Any, Any],
    estimates: Mapping[str, Estimate],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> dict[str, Difference]:
    """A against B, unit by unit (`a` and `b`: the same columns, row i the same unit in both).

    The interval resamples units jointly for both systems (one weight matrix for the two), so
    what a unit does to both cancels. The p-value swaps each unit's sums between the systems with
    probability 1/2 and counts the swaps whose |difference| reaches the observed one, the
    identity included: (hits + 1) / (resamples + 1)."""
    names, ma = _matrix(a)
    _, mb = _matrix({n: b[n] for n in names})
    if ma.shape != mb.shape:
        raise ValueError(f"paired: {ma.shape[0]} units against {mb.shape[0]}; pair them first")
    total = {n: (ma[:, i].sum(), mb[:, i].sum()) for i, n in enumerate(names)}
    fa = {k: _value(_evaluate(f, {n: t[0] for n, t in total.items()})) for k, f in estimates.items()}
    fb = {k: _value(_evaluate(f, {n: t[1] for n, t in total.items()})) for k, f in estimates.items()}
    signed = {k: x - y for k in estimates if (x := fa[k]) is not None and (y := fb[k]) is not None}
    # One weight matrix for the two systems: an entry drawn is drawn for both.
    both = _resampled(np.hstack([ma, mb]), resamples, seed)
    ra, rb = both[:, : ma.shape[1]], both[:, ma.shape[1] :]
    pa, pb = _swapped(ma, mb, resamples, seed) if len(ma) and resamples > 0 else (np.zeros((0, ma.shape[1])),) * 2
    out = {}
    for k, f in estimates.items():
        if k not in signed:
            out[k] = Difference(fa[k], fb[k], None, None, None, None, len(both), len(both), level, seed)
            continue
        diffs = _evaluate(f, {n: ra[:, i] for i, n in enumerate(names)}) - _evaluate(f, {n: rb[:, i] for i, n in enumerate(names)})
        low, high, undefined = _interval(diffs, level)
        observed = abs(signed[k])
        stat = np.abs(_evaluate(f, {n: pa[:, i] for i, n in enumerate(names)}) - _evaluate(f, {n: pb[:, i] for i, n in enumerate(names)}))
        # A swap reaching the observed difference up to rounding counts (the identity always
        # does), and so does one where a figure has no value: never a smaller p for want of one.
        hits = int(np.sum(np.isnan(stat) | (stat >= observed - 1e-12 * max(1.0, observed))))
        p = (hits + 1) / (resamples + 1) if resamples > 0 else None
        # each unit swapped alone: A's sums take its B row and B's its A row
        alone = _evaluate(f, {n: total[n][0] - ma[:, i] + mb[:, i] for i, n in enumerate(names)})
        alone = alone - _evaluate(f, {n: total[n][1] - mb[:, i] + ma[:, i] for i, n in enumerate(names)})
        differing = int(np.sum(np.isnan(alone) | (np.abs(alone - signed[k]) > 1e-12 * max(1.0, observed))))
        out[k] = Difference(fa[k], fb[k], signed[k], low, high, p, len(both), undefined, level, seed, differing)
    return out


@dataclass
class Table:
    """Every figure of some metrics, as columns summed by unit: `sums[i]` is unit `units[i]`'s
    row, one column per (metric, column) in `keys`, and `estimates["metric.output"]` the figure."""

    units: list[str]
    sums: np.ndarray
    keys: list[Any]  # hashable: (metric, Column), or what a table of tables makes of them
    estimates: dict[str, Estimate]

    def columns(self) -> dict[Any, np.ndarray]:
        return {k: self.sums[:, i] for i, k in enumerate(self.keys)}


def _estimate(metric: str, figure: Figure) -> Estimate:
    return lambda sums: figure({c: sums[(metric, c)] for c in figure.columns()})


def run_of(row: AnswerScores) -> str:
    """The run an answer belongs to (seed, condition): what its id adds to the entry's."""
    return row.answer_id[len(row.entry_id) + 1 :] if row.answer_id.startswith(row.entry_id + "#") else ""


@dataclass
class PerAnswer:
    """Every figure's columns for each answer (one row each), before they are summed by unit."""

    matrix: np.ndarray
    keys: list[tuple[str, Column]]
    estimates: dict[str, Estimate]

    def by(self, labels: Sequence[str]) -> Table:
        """The columns summed per unit (`labels[i]` is answer i's), units in sorted order: the same
        answers in another order give the same table, and the same intervals."""
        units = sorted(set(labels))
        index = {u: i for i, u in enumerate(units)}
        sums = np.zeros((len(units), len(self.keys)))
        np.add.at(sums, [index[u] for u in labels], self.matrix)
        return Table(units, sums, self.keys, self.estimates)


def per_answer(rows: Sequence[AnswerScores], metrics: Sequence[Metric]) -> PerAnswer:
    """The metrics' figures over `rows`: each figure's columns, answer by answer."""
    from .base import Scored

    figures = {m.name: m.figures() for m in metrics}
    keys = [(name, c) for name, fs in figures.items() for c in columns(fs)]
    matrix = np.zeros((len(rows), len(keys)))
    for i, r in enumerate(rows):
        own = {name: Scored(r.values.get(name, {}), r.counts.get(name, {})) for name in figures}
        matrix[i] = [c.of(own[name]) for name, c in keys]
    estimates = {f"{name}.{k}": _estimate(name, f) for name, fs in figures.items() for k, f in fs.items()}
    return PerAnswer(matrix, keys, estimates)


def table(rows: Sequence[AnswerScores], metrics: Sequence[Metric], unit: Callable[[AnswerScores], str] = lambda r: r.entry_id) -> Table:
    """The metrics' figures over `rows`, their columns summed per unit: by default the dataset
    entry, with all of its answers."""
    return per_answer(rows, metrics).by([unit(r) for r in rows])


def intervals(t: Table, *, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL) -> dict[str, Interval]:
    """Every figure of `t` with its bootstrap interval over `t`'s units."""
    return bootstrap(t.columns(), t.estimates, resamples=resamples, seed=seed, level=level)


def spread(t: Table) -> dict[str, tuple[float | None, float | None, int]]:
    """Each figure's mean and sample standard deviation over `t`'s units (here: runs), over the
    units where it has a value, and how many those are."""
    out = {}
    for k, f in t.estimates.items():
        v = _evaluate(f, t.columns())
        v = v[~np.isnan(v)]
        out[k] = (float(v.mean()) if v.size else None, float(v.std(ddof=1)) if v.size > 1 else None, int(v.size))
    return out


__all__ = [
    "Interval",
    "Difference",
    "Table",
    "PerAnswer",
    "per_answer",
    "bootstrap",
    "paired",
    "draws",
    "table",
    "intervals",
    "spread",
    "run_of",
    "RESAMPLES",
    "LEVEL",
    "METHOD",
    "TEST",
]
