"""One registry for backends, KG sources and metrics: spec options are typed, mistakes are
named, and a package installed beside kalma adds components through entry points alone."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from evaluation.base import METRICS, EvalOptions, get_metric
from evaluation.citation_quality import CitationQuality
from kalma.errors import ConfigError
from kalma.kg import SOURCES, open_source
from kalma.models import ENTAILMENT, LLMS, SCORERS, get_llm
from kalma.registry import parse_spec


def test_spec_options_are_typed_and_named():
    llm = LLMS.build("openai-compatible:http://127.0.0.1:9/v1:llama3:8b,concurrency=64,timeout=2.5")
    assert (llm.model, llm.concurrency, llm.timeout) == ("llama3:8b", 64, 2.5)
    with pytest.raises(ConfigError, match="option 'concurrency': Input should be a valid integer"):
        LLMS.build("openai-compatible:http://127.0.0.1:9/v1:m,concurrency=many")
    with pytest.raises(ConfigError, match="unknown option 'timout'.*Did you mean 'timeout'"):
        LLMS.build("openai-compatible:http://127.0.0.1:9/v1:m,timout=3")
    src = open_source("sparql:http://127.0.0.1:9/sparql,attempts=2,timeout=1.5")
    assert (src.policy.attempts, src.policy.timeout) == (2, 1.5)
    assert SCORERS.build("smollm2,token_budget=256").token_budget == 256


def test_unknown_names_suggest_the_closest():
    for registry, wrong, right in (
        (LLMS, "templat", "template"),
        (ENTAILMENT, "lexicl", "lexical"),
        (SOURCES, "wikidat", "wikidata"),
        (METRICS, "citaton", "citation"),
    ):
        with pytest.raises(ConfigError, match=f"Did you mean '{right}'"):
            registry.build(wrong)
    with pytest.raises(ConfigError, match="needs an argument: hf:"):
        LLMS.build("hf")


def test_a_judge_spec_keeps_its_own_options():
    assert parse_spec("llm:openai-compatible:http://h/v1:m,concurrency=4", raw=True) == ("llm", "openai-compatible:http://h/v1:m,concurrency=4", {})
    judge = ENTAILMENT.build("llm:openai-compatible:http://127.0.0.1:9/v1:m,concurrency=4")
    assert judge.llm.concurrency == 4


PLUGIN = '''
from kalma.models.base import LLM, Generation
from kalma.kg.local import RdflibSource
from kalma.kg import demo_snapshot_path
from evaluation.base import Card, Metric, Scored


class Echo(LLM):
    """An LLM that repeats the last message, `times` times."""

    def __init__(self, *, times: int = 1):
        self.times, self.spec = times, f"echo,times={times}"

    def _generate(self, batch, params):
        return [Generation(text=" ".join([m[-1]["content"]] * self.times), model=self.spec) for m in batch]


def demo_copy(path: str = ""):
    return RdflibSource(demo_snapshot_path())


class Length(Metric):
    name = "length"
    card = Card("answer length in characters", "0-", "none")
    outputs = ("length_mean",)

    def score(self, items):
        return [Scored({"length": float(len(it.answer.text))}) for it in items]

    def aggregate(self, rows):
        vals = [r.values["length"] for r in rows]
        return {"length_mean": sum(vals) / len(vals) if vals else None}, {}
'''


def test_a_plugin_package_adds_components_through_entry_points(tmp_path, monkeypatch):
    """A real distribution on sys.path (its dist-info with entry_points.txt), found by
    importlib.metadata as pip would leave it: no kalma file changes."""
    (tmp_path / "kalma_plugin.py").write_text(textwrap.dedent(PLUGIN))
    dist = tmp_path / "kalma_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kalma-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[kalma.llms]\necho = kalma_plugin:Echo\n\n[kalma.kg]\ndemo-copy = kalma_plugin:demo_copy\n\n[kalma.metrics]\nlength = kalma_plugin:Length\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert "echo" in LLMS.names() and "demo-copy" in SOURCES.names() and "length" in METRICS.names()
    assert get_llm("echo,times=2").chat([{"role": "user", "content": "hi"}]).text == "hi hi"
    assert open_source("demo-copy").subgraphs(["Q212657"])["Q212657"].label == "Artemisia Gentileschi"
    from evaluation.base import EvalItem
    from kalma.schema import Answer

    metric = get_metric("length", EvalOptions())
    assert metric.score([EvalItem.build(Answer(entry_id="e", text="abcd", model="m"), None)])[0].values == {"length": 4.0}
    sys.modules.pop("kalma_plugin", None)


def test_declared_outputs_make_a_renamed_key_fail_loudly(tmp_path):
    from evaluation.base import check_outputs
    from evaluation.citation_quality import CitationQuality
    from evaluation.runner import summarize

    check_outputs(["citation.f1_micro", "na.na_recall_micro", "geval.fluency_mean"], "a table")  # declared: fine
    with pytest.raises(ValueError, match="citation.f1_mikro is not an output any metric declares"):
        check_outputs(["citation.f1_mikro"], "a table")
    with pytest.raises(ValueError, match="f1_micro is not an output"):  # a bare key names no metric
        check_outputs(["f1_micro"], "a table")

    class Renamed(CitationQuality):
        def aggregate(self, rows):
            values, dropped = super().aggregate(rows)
            values["f1_mikro"] = values.pop("f1_micro")
            return values, dropped

    with pytest.raises(RuntimeError, match=r"'citation' returned \['f1_micro', 'f1_mikro'\] against its declared outputs"):
        summarize([], [Renamed(EvalOptions())], {}, {}, [], [], 0)


def test_a_metric_missing_its_model_is_marked_unavailable(tmp_path):
    from evaluation.runner import evaluate
    from kalma.jsonl import write_jsonl
    from kalma.schema import Answer, DatasetEntry

    write_jsonl(tmp_path / "d.jsonl", [DatasetEntry(id="e", general_question="", specific_question="q")], "dataset")
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id="e", text="x [NA].", model="m")], "answers")
    s = evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "o", metrics=["citation", "geval", "consens"], progress=False)
    assert s.value("geval.coherence_mean") is None and s.value("consens.consens_mean") is None
    assert "geval unavailable: it needs --judge" in s.notes and "consens unavailable: it needs --lm" in s.notes


class CitationCopy(CitationQuality):
    """A second metric with the very keys of `citation`: namespaces keep both."""

    name = "citation-copy"

    def aggregate(self, rows):
        values, dropped = super().aggregate(rows)
        return {k: (0.0 if v is not None else None) for k, v in values.items()}, dropped


def test_two_metrics_with_one_key_keep_their_own_values(tmp_path):
    from evaluation.base import METRICS
    from evaluation.runner import evaluate
    from kalma.jsonl import read_jsonl, write_jsonl
    from kalma.schema import Answer, AnswerScores, DatasetEntry

    write_jsonl(tmp_path / "d.jsonl", [DatasetEntry(id="e", general_question="", specific_question="q")], "dataset")
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id="e", text="Anna [NA].", model="m")], "answers")
    METRICS.add("citation-copy", f"{__name__}:CitationCopy", argument="none")
    try:
        s = evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "o", metrics=["citation", "citation-copy"], progress=False)
    finally:
        METRICS._entries.pop("citation-copy")
    assert s.value("citation.malformed_per_answer") == 0.0 and s.value("citation-copy.malformed_per_answer") == 0.0
    assert s.metrics["citation"].keys() == s.metrics["citation-copy"].keys()
    row = next(iter(read_jsonl(tmp_path / "o" / "scores.jsonl", AnswerScores)))
    assert row.values["citation"] == row.values["citation-copy"] and row.markup["na_marks"] == 1
    assert "| citation-copy.correctness_micro |" in (tmp_path / "o" / "summary.md").read_text()


def test_one_metric_twice_is_refused(tmp_path):
    from evaluation.runner import evaluate
    from kalma.errors import ConfigError

    with pytest.raises(ConfigError, match="metric 'conner' is given twice \\('conner:agg=mean' and 'conner:agg=min'\\)"):
        evaluate([], [], tmp_path / "o", metrics=["conner:agg=mean", "conner:agg=min"], progress=False)
