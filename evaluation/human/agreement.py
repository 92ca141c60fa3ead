"""Agreement statistics, from well-kept libraries: scikit-learn (Cohen's kappa, confusion
matrices), statsmodels (Fleiss' kappa), `krippendorff` (alpha) and SciPy (bootstrap intervals).

Every function takes labels as plain lists and returns None, never NaN, where a statistic is
undefined (one label everywhere, too few units): a report says n/a and why.

>>> round(cohen([1, 1, 0, 0], [1, 0, 0, 0]) or 0, 3)
0.5
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

BOOTSTRAP_RESAMPLES = 9999
Matrix = Sequence[Sequence[float | None]]  # raters x units, None where a rater left a unit out


def _defined(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def cohen(a: Sequence[Any], b: Sequence[Any], weights: str | None = None, scale: Sequence[Any] | None = None) -> float | None:
    """Cohen's kappa of two raters over the same units (weights: None, "linear", "quadratic").
    `scale`: every value the rating can take; weights count steps on it, so a 2 and a 4 are two
    steps apart even when nobody used 3.

    >>> round(cohen([2, 4, 4, 5], [4, 4, 5, 5], "linear"), 3), round(cohen([2, 4, 4, 5], [4, 4, 5, 5], "linear", scale=range(1, 6)), 3)
    (0.333, 0.25)
    """
    from sklearn.metrics import cohen_kappa_score

    if len(a) < 2:
        return None
    labels = list(scale) if scale is not None else None
    with warnings.catch_warnings():  # undefined (a single label throughout) is None here, not a warning
        warnings.simplefilter("ignore")
        return _defined(cohen_kappa_score(list(a), list(b), weights=weights, labels=labels))


def fleiss(rows: Sequence[Sequence[Any]]) -> float | None:
    """Fleiss' kappa; `rows` are units, each with one label per rater (the same number of raters)."""
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    if len(rows) < 2 or len({len(r) for r in rows}) != 1 or len(rows[0]) < 2:
        return None
    table, _ = aggregate_raters(np.asarray(rows))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _defined(fleiss_kappa(table, method="fleiss"))


def alpha(matrix: Matrix, level: str = "nominal") -> float | None:
    """Krippendorff's alpha; `matrix` is raters x units with None for a missing label. (Its
    ordinal distance weighs the values between by how often they were used: an unused value of
    the scale changes nothing, unlike weighted kappa's.)"""
    import krippendorff
    import numpy as np

    data = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
    pairable = (np.sum(~np.isnan(data), axis=0) >= 2).sum() if data.size else 0
    if pairable < 1 or len(np.unique(data[~np.isnan(data)])) < 2:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _defined(krippendorff.alpha(reliability_data=data, level_of_measurement=level))  # type: ignore[arg-type]


def percent_agreement(rows: Sequence[Sequence[Any]], within: float = 0) -> float | None:
    """The share of units (with two labels or more) whose labels all lie within `within` of one
    another: exact agreement by default, "differ by at most 1" for ratings (the paper's C.1)."""
    usable = [r for r in rows if len(r) >= 2]
    if not usable:
        return None
    return sum(max(r) - min(r) <= within for r in usable) / len(usable)


def confusion(human: Sequence[int], auto: Sequence[int]) -> dict[str, int]:
    """Counts of the human majority label (rows) against the automatic one (columns)."""
    from sklearn.metrics import confusion_matrix

    if not human:
        return {"both_yes": 0, "both_no": 0, "human_yes_auto_no": 0, "human_no_auto_yes": 0}
    (nn, ny), (yn, yy) = confusion_matrix(list(human), list(auto), labels=[0, 1]).tolist()
    return {"both_yes": yy, "both_no": nn, "human_yes_auto_no": yn, "human_no_auto_yes": ny}


def accuracy(human: Sequence[int], auto: Sequence[int]) -> float | None:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(list(human), list(auto))) if human else None


def bootstrap(samples: Sequence[Sequence[float]], statistic: Callable[..., float], seed: int, level: float = 0.95) -> tuple[float, float] | None:
    """A percentile bootstrap interval of `statistic` over units (paired when several sequences
    are given: one resample of units serves them all), seeded."""
    import numpy as np
    from scipy.stats import bootstrap as scipy_bootstrap

    if not samples or len(samples[0]) < 2:
        return None
    arrays = tuple(np.asarray(s, dtype=float) for s in samples)
    if all(np.ptp(a) == 0 for a in arrays):  # nothing varies: the interval is the value itself
        value = float(statistic(*arrays))
        return value, value
    res = scipy_bootstrap(
        arrays,
        statistic,
        paired=len(arrays) > 1,
        vectorized=False,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=level,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    low, high = res.confidence_interval
    return float(low), float(high)
