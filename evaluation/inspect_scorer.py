"""KaLMA's scorer and metrics inside Inspect (`inspect-ai`): a thin adapter over the evaluator.

Each sample's answer is scored by `kalma evaluate`'s own code (`runner.score_answers`: the
citation parser, the KG checks, every chosen metric, the per-citation verdicts); the row it writes
to `scores.jsonl` is the sample's `Score.metadata["row"]`, and `Score.value` holds the row's
per-answer values (`citation.correctness`, …) for Inspect's viewer.

The figures are the evaluator's too: `kalma_figures` rebuilds the rows and aggregates them with
`runner.summarize`, the function that writes `summary.json`, so a micro figure is a ratio of
counts summed over every sample (every epoch of every entry: §4.1's pooled figure, not a mean of
per-sample ratios) and a macro figure a mean. `kalma_stderr` gives each figure Inspect's own
clustered standard error (`stderr(cluster="entry_id")`): the figure is linearised into one
influence value per sample (`Figure.influence`), and Inspect's formula for a mean, applied to the
pseudo-values `figure + n * influence`, is then the delta-method standard error of the ratio (or
F1) with the samples of one entry (its epochs) as one cluster.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from functools import lru_cache
from typing import Any

import numpy as np
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, Value, metric, scorer, stderr
from inspect_ai.solver import TaskState

from kalma.schema import Answer, AnswerScores, DatasetEntry, KnowledgeGraph, Setting, Triple

from .base import EvalOptions, Scored, get_metric
from .base import Metric as KalmaMetric
from .figures import columns, totals
from .runner import score_answers, summarize

CLUSTER = "entry_id"  # the sample metadata that names its dataset entry: the samples of one entry are one cluster
STDERR = "_stderr"  # a figure's standard error is reported as FIGURE_stderr


def metrics_of(names: Sequence[str], options: dict[str, Any]) -> list[KalmaMetric]:
    opts = EvalOptions(**options)
    return [get_metric(n, opts) for n in names]


@lru_cache(maxsize=4)
def entries_of(dataset: str) -> dict[str, DatasetEntry]:
    """The dataset's entries by id, read once for the task and its scorer (`harness.dataset_entries`)."""
    from .harness import dataset_entries

    return {e.id: e for e in dataset_entries(dataset)}


def sample_answer(state: TaskState) -> Answer:
    """The sample's answer as `kalma evaluate` reads it: its entry and setting, the KG it was given
    and what that KG lacks of the minimum set (both recorded in the sample's metadata)."""
    meta = state.metadata
    absent = meta.get("absent")
    setting: Setting = "general" if meta.get("setting") == "general" else "specific"
    return Answer(
        entry_id=meta[CLUSTER],
        text=state.output.completion,
        model=f"inspect:{state.model}",  # as `kalma evaluate` names the log's model
        setting=setting,
        kg=KnowledgeGraph.model_validate(meta["kg"]),
        absent=None if absent is None else [Triple.model_validate(t) for t in absent],
        run=f"epoch{state.epoch}",
    )


def flat(values: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    return {f"{m}.{k}": v for m, vals in values.items() for k, v in vals.items()}


@scorer(metrics=[])  # the metrics come with the task: they need to know which of the evaluator's metrics ran
def kalma_scorer(dataset: str, metrics: list[str], options: dict[str, Any]) -> Scorer:
    """Score each answer with the evaluator's metrics `metrics` (names as `kalma evaluate
    --metrics` takes them) under `options` (`EvalOptions`' fields: nli, judge, lm, compat, seed)."""
    entries = entries_of(dataset)
    active = metrics_of(metrics, options)
    for m in active:
        m.prepare(list(entries.values()))

    async def score(state: TaskState, target: Target) -> Score:
        (row,) = score_answers([sample_answer(state)], entries, active, {})
        m = row.markup
        correct = row.counts.get("citation", {}).get("correct")
        said = f" ({correct} in the KG given)" if correct is not None else ""
        return Score(
            value=flat(row.values),
            answer=state.output.completion,
            explanation=f"{m.get('citations', 0)} citations{said}, {m.get('na_marks', 0)} [NA] marks, {m.get('malformed', 0)} malformed",
            metadata={"row": row.model_dump(mode="json")},
        )

    return score


def rows_of(scores: Sequence[SampleScore]) -> list[AnswerScores]:
    return [AnswerScores.model_validate(s.score.metadata["row"]) for s in scores if s.score.metadata and "row" in s.score.metadata]


def figures(rows: Sequence[AnswerScores], active: Sequence[KalmaMetric]) -> dict[str, float | None]:
    """Every output of every metric over `rows`, as `kalma evaluate`'s summary gives it."""
    return flat(summarize(rows, active, config={}, models={}, answer_models=[], problems=[], n_missing=0).metrics)


@metric(scores="unreduced")  # every epoch of every entry is an answer, as in kalma evaluate
def kalma_figures(metrics: list[str], options: dict[str, Any]) -> Metric:
    """The evaluator's figures (`summary.json`'s) over every scored sample; a figure with no value
    (no denominator) is left out, as Inspect leaves out a None."""
    active = metrics_of(metrics, options)

    def compute(scores: list[SampleScore]) -> Value:
        return {k: v for k, v in figures(rows_of(scores), active).items() if v is not None}

    return compute


def influences(rows: Sequence[AnswerScores], active: Sequence[KalmaMetric]) -> dict[str, tuple[float, np.ndarray]]:
    """Each figure that has a value, and every answer's influence on it (`Figure.influence`)."""
    out = {}
    for m in active:
        own = [Scored(r.values.get(m.name, {}), r.counts.get(m.name, {})) for r in rows]
        declared = m.figures()
        cols = columns(declared)
        sums = totals(own, cols)
        each = {c: np.array([c.of(r) for r in own], dtype=float) for c in cols}
        for key, f in declared.items():
            value, infl = float(f(sums)), f.influence(sums, each)
            if not math.isnan(value) and not np.isnan(infl).any():
                out[f"{m.name}.{key}"] = (value, infl)
    return out


@metric(scores="unreduced")
def kalma_stderr(metrics: list[str], options: dict[str, Any], cluster: str = CLUSTER) -> Metric:
    """Each figure's standard error by Inspect's `stderr(cluster=...)`, applied to the figure's
    pseudo-values (see the module's docstring); clustered by dataset entry."""
    active = metrics_of(metrics, options)
    clustered = stderr(cluster=cluster)

    def compute(scores: list[SampleScore]) -> Value:
        kept = [s for s in scores if s.score.metadata and "row" in s.score.metadata]
        rows = rows_of(kept)
        shown = figures(rows, active)  # a figure the summary withholds (an unreadable judge) gets no error either
        out: dict[str, float | None] = {}
        for key, (value, infl) in influences(rows, active).items():
            if shown.get(key) is None:
                continue
            pseudo = value + len(rows) * infl
            each = [SampleScore(score=Score(value=float(v)), sample_id=s.sample_id, sample_metadata=s.sample_metadata) for v, s in zip(pseudo, kept)]
            out[key + STDERR] = float(clustered(each))  # type: ignore[arg-type]
        return out

    return compute


def scorer_for(dataset: str, metrics: list[str], options: EvalOptions) -> tuple[Scorer, list[Metric | dict[str, list[Metric]]]]:
    """The task's scorer and its Inspect metrics (the figures and their clustered standard
    errors), which the task names in place of the scorer's own."""
    opts = asdict(options)
    return kalma_scorer(dataset, metrics, opts), [kalma_figures(metrics, opts), kalma_stderr(metrics, opts)]


__all__ = ["CLUSTER", "STDERR", "kalma_scorer", "kalma_figures", "kalma_stderr", "influences", "figures", "scorer_for"]
