"""KaLMA in Inspect (evaluation/inspect_scorer.py, kalma/inspect_log.py): its figures pooled as the
paper pools them, its standard errors clustered by entry, and only whole KaLMA logs read as answers."""

from __future__ import annotations

from . import Mutation

E2E = "tests/e2e/test_inspect.py"

MUTATIONS = (
    Mutation(
        "Inspect's micro figures as means of per-sample ratios",
        "evaluation/inspect_scorer.py",
        "        return {k: v for k, v in figures(rows_of(scores), active).items() if v is not None}",
        "        each = [figures([r], active) for r in rows_of(scores)]\n"
        "        return {k: float(np.mean([e[k] for e in each if e[k] is not None])) for k in each[0] if any(e[k] is not None for e in each)}",
        (E2E,),
    ),
    Mutation(
        "the evaluator's correctness_micro declared as a mean of ratios",
        "evaluation/citation_quality.py",
        '"correctness_micro": Ratio(Count("correct"), Count("citations")),',
        '"correctness_micro": Mean("correctness"),',
        (E2E,),
    ),
    Mutation(
        "the clustering dropped: one sample, one cluster",
        "evaluation/inspect_scorer.py",
        "    clustered = stderr(cluster=cluster)",
        "    clustered = stderr()",
        (E2E,),
    ),
    Mutation(
        "a sample's influence taken as its own ratio (no linearisation)",
        "evaluation/figures.py",
        "        return (each[self.num] - float(sums[self.num]) / den * each[self.den]) / den",
        "        return np.where(each[self.den] > 0, each[self.num] / np.where(each[self.den] > 0, each[self.den], 1.0), 0.0) / len(each[self.den])",
        (E2E,),
    ),
    Mutation(
        "another task's log read as answers",
        "kalma/inspect_log.py",
        "    if task not in TASKS:\n        raise",
        "    if False:\n        raise",
        (E2E,),
    ),
    Mutation(
        "an unfinished log read as answers",
        "kalma/inspect_log.py",
        "    if log.status != FINISHED:",
        "    if log.status not in (FINISHED, 'cancelled'):",
        (E2E,),
    ),
    Mutation(
        "samples that ended in an error left out silently",
        "kalma/inspect_log.py",
        "    failed = [s for s in log.samples or [] if s.error is not None]",
        "    failed = []",
        (E2E,),
    ),
)
