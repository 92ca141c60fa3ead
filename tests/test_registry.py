"""One registry for backends, KG sources and metrics: spec options are typed, mistakes are
named, and a package installed beside kalma adds components through entry points alone."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from kalma.errors import ConfigError
from kalma.kg import SOURCES, open_source
from kalma.models import ENTAILMENT, LLMS, SCORERS, get_llm
from kalma.registry import parse_spec
from evaluation.base import METRICS, EvalOptions, get_metric


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
    for registry, wrong, right in ((LLMS, "templat", "template"), (ENTAILMENT, "lexicl", "lexical"),
                                   (SOURCES, "wikidat", "wikidata"), (METRICS, "citaton", "citation")):
        with pytest.raises(ConfigError, match=f"Did you mean '{right}'"):
            registry.build(wrong)
    with pytest.raises(ConfigError, match="needs an argument: hf:"):
        LLMS.build("hf")


def test_a_judge_spec_keeps_its_own_options():
    assert parse_spec("llm:openai-compatible:http://h/v1:m,concurrency=4", raw=True) == \
        ("llm", "openai-compatible:http://h/v1:m,concurrency=4", {})
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

    def score(self, items):
        return [Scored({"length": float(len(it.answer.text))}) for it in items]

    def aggregate(self, rows):
        vals = [r.values["length"] for r in rows]
        return {"length_mean": sum(vals) / len(vals)}, {}
'''


def test_a_plugin_package_adds_components_through_entry_points(tmp_path, monkeypatch):
    """A real distribution on sys.path (its dist-info with entry_points.txt), found by
    importlib.metadata as pip would leave it: no kalma file changes."""
    (tmp_path / "kalma_plugin.py").write_text(textwrap.dedent(PLUGIN))
    dist = tmp_path / "kalma_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kalma-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[kalma.llms]\necho = kalma_plugin:Echo\n\n[kalma.kg]\ndemo-copy = kalma_plugin:demo_copy\n\n"
                                           "[kalma.metrics]\nlength = kalma_plugin:Length\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert "echo" in LLMS.names() and "demo-copy" in SOURCES.names() and "length" in METRICS.names()
    assert get_llm("echo,times=2").chat([{"role": "user", "content": "hi"}]).text == "hi hi"
    assert open_source("demo-copy").subgraphs(["Q212657"])["Q212657"].label == "Artemisia Gentileschi"
    from kalma.schema import Answer
    from evaluation.base import EvalItem

    metric = get_metric("length", EvalOptions())
    assert metric.score([EvalItem.build(Answer(entry_id="e", text="abcd", model="m"), None)])[0].values == {"length": 4.0}
    sys.modules.pop("kalma_plugin", None)
