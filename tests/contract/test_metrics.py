"""The contract every registered metric keeps, run against each one (a metric added to the
registry, or arriving through an entry point, is tested with no change here):

- it declares a card, what it needs (nli, judge, lm) and the outputs it reports;
- one row per answer, values None or finite, notes under its own name, counts non-negative;
- the same answers give the same values;
- `aggregate` returns exactly the declared outputs, for these rows and for none at all;
- the model behind its numbers is named (the rule-based entailment stand-in as such);
- through the runner, a run killed part-way and resumed reports what an uninterrupted run does.

Answers come in the styles models write: canonical, the paper's `qid:`/`name:` pairs, an
[NA] claim with knowledge removed, an empty answer, and broken markup."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dataset_builder.demo import demo_entries
from evaluation.base import METRICS, EvalItem, EvalOptions, Metric, get_metric
from evaluation.figures import value
from evaluation.runner import evaluate
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.schema import Answer, DatasetEntry, KnowledgeGraph
from tests.contract.conftest import TinyModels

NEEDS = {"nli", "judge", "lm"}


@pytest.fixture(scope="module")
def entries() -> list[DatasetEntry]:
    return demo_entries(open_source("demo"))[:3]


@pytest.fixture(scope="module")
def answers(entries: list[DatasetEntry]) -> list[Answer]:
    e0, e1, e2 = entries
    assert e0.minimum_set and e1.minimum_set
    t1, t2, gone = e0.minimum_set[0], e0.minimum_set[1], e0.minimum_set[-1]
    canonical = (
        f"{t1.subject_label} had {t1.value_label} as {t1.relation_label} [{t1.subject}, {t1.relation_label}: {t1.value_label}]. "
        f"The {t2.relation_label} was {t2.value_label} [{t2.subject}, {t2.relation_label}: {t2.value_label}]. "
        f"Nothing in the graph says where the {gone.relation_label} was [NA]."
    )
    kept = KnowledgeGraph(entities=[g.model_copy(update={"triples": [t for t in g.triples if t != gone]}) for g in e0.knowledge_pool.entities])
    u = e1.minimum_set[0]
    paper = f"{u.subject_label} was a {u.value_label} [qid: {u.subject}, name: {u.subject_label}, {u.relation_label}: {u.value_label}]."
    return [
        Answer(entry_id=e0.id, text=canonical, model="contract", kg=kept, absent=[gone]),
        Answer(entry_id=e1.id, text=paper, model="contract"),
        Answer(entry_id=e2.id, text="", model="contract"),
        Answer(entry_id=e0.id, text="Broken [[[[ ]] [Q1, , ] and [NA [NA].", model="contract", run="broken"),
    ]


@pytest.fixture(scope="module")
def options(tiny: TinyModels) -> EvalOptions:
    lm = f"hf:{tiny.causal}"
    return EvalOptions(nli="lexical", judge=lm, lm=lm, seed=0)


@pytest.fixture(scope="module", params=sorted(METRICS.names()))
def metric(request: pytest.FixtureRequest, options: EvalOptions, entries: list[DatasetEntry]) -> Metric:
    m = get_metric(request.param, options)
    m.prepare(entries)
    return m


def _items(answers: list[Answer], entries: list[DatasetEntry]) -> list[EvalItem]:
    by_id = {e.id: e for e in entries}
    return [EvalItem.build(a, by_id[a.entry_id]) for a in answers]


def _finite_or_none(values: dict[str, float | None]) -> bool:
    return all(v is None or (isinstance(v, float) and math.isfinite(v)) for v in values.values())


def test_declarations(metric: Metric):
    assert METRICS.factory(metric.name) is type(metric)  # its name is its registry name: its outputs' namespace
    assert metric.card.measures and metric.card.range and metric.card.reference
    assert metric.outputs and len(set(metric.outputs)) == len(metric.outputs) and all("." not in k for k in metric.outputs)
    assert set(metric.needs) <= NEEDS


def test_rows(metric: Metric, answers: list[Answer], entries: list[DatasetEntry]):
    items = _items(answers, entries)
    rows = metric.score(items)
    assert len(rows) == len(items)
    for r in rows:
        assert _finite_or_none(r.values)
        assert set(r.notes) <= {metric.name}
        assert all(isinstance(n, int) and n >= 0 for n in r.counts.values())
    again = metric.score(_items(answers, entries))
    assert [r.values for r in again] == [r.values for r in rows]


def test_aggregate_returns_the_declared_outputs(metric: Metric, answers: list[Answer], entries: list[DatasetEntry]):
    rows = metric.score(_items(answers, entries))
    for some in (rows, []):
        values, dropped = metric.aggregate(some)
        assert set(values) == set(metric.outputs) and _finite_or_none(values)
        assert set(dropped) <= set(metric.outputs) and all(0 <= n <= len(some) for n in dropped.values())


def test_each_figure_is_the_value_it_surrounds(metric: Metric, answers: list[Answer], entries: list[DatasetEntry]):
    """The figure a metric declares for an output (what the bootstrap resamples) gives the value its
    aggregate reports, to the last bit: text quality, which aggregates on its own, included."""
    rows = metric.score(_items(answers, entries))
    values, _ = metric.aggregate(rows)
    figures = metric.figures()
    assert set(figures) <= set(metric.outputs) and figures, "every metric declares the figures its intervals come from"
    for k, f in figures.items():
        assert value(f, rows) == values[k], k


def test_the_model_behind_the_numbers_is_named(metric: Metric, options: EvalOptions):
    named = " ".join(metric.models().values())
    for need in set(metric.needs) & {"judge", "lm"}:
        assert str(getattr(options, need)) in named
    if "nli" in metric.needs:
        assert "lexical" in named and "APPROXIMATION" in named.upper()


def test_a_resumed_run_reports_what_an_uninterrupted_one_does(metric: Metric, options: EvalOptions, answers, entries, tmp_path: Path):
    write_jsonl(tmp_path / "dataset.jsonl", entries, "dataset")
    write_jsonl(tmp_path / "answers.jsonl", answers, "answers")
    run = {"metrics": [metric.name], "options": options, "progress": False, "chunk_size": 1}
    evaluate(tmp_path / "dataset.jsonl", tmp_path / "answers.jsonl", tmp_path / "killed", stop_after=2, **run)
    resumed = evaluate(tmp_path / "dataset.jsonl", tmp_path / "answers.jsonl", tmp_path / "killed", **run)
    fresh = evaluate(tmp_path / "dataset.jsonl", tmp_path / "answers.jsonl", tmp_path / "fresh", **run)
    assert set(resumed.metrics) == {metric.name} and set(resumed.metrics[metric.name]) == set(metric.outputs)
    assert resumed.metrics == fresh.metrics and resumed.dropped == fresh.dropped
    assert resumed.intervals == fresh.intervals and resumed.run_spread == fresh.run_spread  # same rows, same seed: same resamples
    assert fresh.resampling is not None and fresh.resampling.units == len(entries) and fresh.resampling.runs == ["", "broken"]
    ids = [json.loads(line)["answer_id"] for line in (tmp_path / "killed" / "scores.jsonl").read_text().splitlines()[1:]]
    assert len(ids) == len(set(ids)) == fresh.counts["answers"] == 6  # 4 answers + 2 missing from the second run: none lost or doubled
