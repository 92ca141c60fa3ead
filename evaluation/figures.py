"""What a summary figure is made of: sums of per-answer columns, and a formula over those sums.

A metric declares each output as a `Figure` (`Ratio`, `Mean`, `F1`). The same declaration gives
the figure on the full data (the metric's summary value) and in every bootstrap resample
(`evaluation.uncertainty`), so the interval can never be computed by other arithmetic than the
value it surrounds. Sums on the full data are exact (integers, or `math.fsum` for fractions): a
macro mean is `statistics.fmean`'s value to the last bit.

>>> from evaluation.base import Scored
>>> rows = [Scored({"p": 0.5}, {"hit": 1, "cited": 2}), Scored({"p": None}, {"hit": 0, "cited": 0}), Scored({"p": 1.0}, {"hit": 3, "cited": 3})]
>>> micro, macro = Ratio(Count("hit"), Count("cited")), Mean("p")
>>> value(micro, rows), value(macro, rows), value(F1(micro, macro), rows), macro.dropped(rows)
(0.8, 0.75, 0.7741935483870969, 1)
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .base import Scored


class Column(ABC):
    """One number per answer, summed over answers (within an entry, then over a resample)."""

    @abstractmethod
    def of(self, row: Scored) -> float: ...


@dataclass(frozen=True)
class Count(Column):
    """A count the metric recorded for the answer; with `given`, only for answers that also have
    the count `given` (e.g. citations of the answers that have a minimum set)."""

    key: str
    given: str | None = None

    def of(self, row: Scored) -> float:
        if self.given is not None and self.given not in row.counts:
            return 0.0
        return float(row.counts.get(self.key, 0))


@dataclass(frozen=True)
class Value(Column):
    """A per-answer value, 0 where the answer has none."""

    key: str

    def of(self, row: Scored) -> float:
        v = row.values.get(self.key)
        return 0.0 if v is None else float(v)


@dataclass(frozen=True)
class Has(Column):
    """1 for an answer that has the value, else 0: a mean's denominator."""

    key: str

    def of(self, row: Scored) -> float:
        return float(row.values.get(self.key) is not None)


@dataclass(frozen=True)
class Answers(Column):
    """1 per answer."""

    def of(self, row: Scored) -> float:
        return 1.0


ANSWERS = Answers()


class Figure(ABC):
    """A summary value as a formula over column sums; NaN where it has no denominator. The sums
    are numbers (the full data) or arrays with one element per resample."""

    @abstractmethod
    def columns(self) -> tuple[Column, ...]: ...

    @abstractmethod
    def __call__(self, sums: Mapping[Column, Any]) -> Any: ...

    @abstractmethod
    def influence(self, sums: Mapping[Column, float], each: Mapping[Column, np.ndarray]) -> np.ndarray:
        """Each answer's influence on the figure at the full data (`sums`; `each` holds every
        column's per-answer values): its linearisation, whose sums over clusters give the figure's
        clustered standard error (`evaluation.inspect_scorer`). NaN where the figure has no value."""


@dataclass(frozen=True)
class Ratio(Figure):
    num: Column
    den: Column

    def columns(self) -> tuple[Column, ...]:
        return (self.num, self.den)

    def __call__(self, sums: Mapping[Column, Any]) -> Any:
        den = np.asarray(sums[self.den], dtype=float)
        return np.where(den != 0, np.asarray(sums[self.num], dtype=float) / np.where(den != 0, den, 1.0), np.nan)

    def influence(self, sums: Mapping[Column, float], each: Mapping[Column, np.ndarray]) -> np.ndarray:
        # a ratio of sums N/D moves by (n_i - (N/D) d_i) / D when answer i is added
        den = float(sums[self.den])
        if not den:
            return np.full(len(each[self.den]), np.nan)
        return (each[self.num] - float(sums[self.num]) / den * each[self.den]) / den


class Mean(Ratio):
    """The mean of a per-answer value over the answers that have it (a macro figure); the
    others drop out of it, and are counted."""

    def __init__(self, key: str):
        super().__init__(Value(key), Has(key))

    def dropped(self, rows: Sequence[Scored]) -> int:
        return sum(self.den.of(r) == 0 for r in rows)


@dataclass(frozen=True)
class F1(Figure):
    """The harmonic mean of two figures: undefined where either is, 0 where both are 0."""

    p: Figure
    r: Figure

    def columns(self) -> tuple[Column, ...]:
        return tuple(dict.fromkeys(self.p.columns() + self.r.columns()))

    def __call__(self, sums: Mapping[Column, Any]) -> Any:
        return harmonic(self.p(sums), self.r(sums))

    def influence(self, sums: Mapping[Column, float], each: Mapping[Column, np.ndarray]) -> np.ndarray:
        # the chain rule: dF/dP = 2R^2/(P+R)^2, dF/dR = 2P^2/(P+R)^2; undefined where P+R is 0 or either is
        p, r = float(self.p(sums)), float(self.r(sums))
        if not p + r > 0:
            return np.full(len(next(iter(each.values()))), np.nan)
        return (2 * r * r * self.p.influence(sums, each) + 2 * p * p * self.r.influence(sums, each)) / (p + r) ** 2


def harmonic(p: Any, r: Any) -> Any:
    """2PR / (P + R), elementwise: NaN where either is, 0 where both are 0."""
    p, r = np.asarray(p, dtype=float), np.asarray(r, dtype=float)
    both = p + r
    return np.where(both > 0, 2 * p * r / np.where(both > 0, both, 1.0), np.where(np.isnan(both), np.nan, 0.0))


def columns(figures: Mapping[str, Figure]) -> list[Column]:
    """Every column the figures read, each once, in a fixed order."""
    return list(dict.fromkeys(c for f in figures.values() for c in f.columns()))


def totals(rows: Sequence[Scored], cols: Sequence[Column]) -> dict[Column, float]:
    """Each column summed over `rows`, exactly."""
    return {c: math.fsum(c.of(r) for r in rows) for c in cols}


def value(figure: Figure, rows: Sequence[Scored]) -> float | None:
    """The figure on `rows`; None where it has no denominator."""
    v = float(figure(totals(rows, figure.columns())))
    return None if math.isnan(v) else v


__all__ = ["Column", "Count", "Value", "Has", "ANSWERS", "Figure", "Ratio", "Mean", "F1", "harmonic", "columns", "totals", "value"]
