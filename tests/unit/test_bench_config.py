"""Bench configurations: components as spec strings or TOML tables, every one checked when the
file loads (before any model is loaded or any answer written)."""

from __future__ import annotations

import pytest

from bench.experiments import BenchConfig
from kalma.errors import ConfigError

TABLES = """
kg = {name = "sparql", argument = "http://127.0.0.1:7878/query", attempts = 2, timeout = 5.5}
nli = {name = "hf-seq2seq", argument = "google/t5_xxl_true_nli_mixture", dtype = "bf16"}
llms = ["template", {name = "openai-compatible", argument = "http://127.0.0.1:8000/v1:llama3", concurrency = 64}]
metrics = ["citation", {name = "na", relevance = false}, {name = "conner", agg = "mean", l = 3}]

[experiments.main]
metrics = [{name = "geval", samples = 5}]
"""


def test_tables_become_the_specs_every_output_records(tmp_path):
    (tmp_path / "b.toml").write_text(TABLES)
    cfg = BenchConfig.load(tmp_path / "b.toml")
    assert cfg.kg == "sparql:http://127.0.0.1:7878/query,attempts=2,timeout=5.5"
    assert cfg.nli == "hf-seq2seq:google/t5_xxl_true_nli_mixture,dtype=bf16"
    assert cfg.llms == ["template", "openai-compatible:http://127.0.0.1:8000/v1:llama3,concurrency=64"]
    assert cfg.metrics == ["citation", "na,relevance=false", "conner,agg=mean,l=3"]
    assert cfg.experiments.main is not None and cfg.experiments.main.metrics == ["geval,samples=5"]


def test_a_table_and_its_spec_build_the_same_component(tmp_path):
    from evaluation.base import EvalOptions, get_metric

    (tmp_path / "b.toml").write_text(TABLES)
    table, spec = BenchConfig.load(tmp_path / "b.toml").metrics[2], "conner:agg=mean,l=3"
    a, b = get_metric(table, EvalOptions(lm="smollm2")), get_metric(spec, EvalOptions(lm="smollm2"))
    assert (a.agg, a.l, a.matcher) == (b.agg, b.l, b.matcher) == ("mean", 3, "minilm")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('llms = [{name = "template", temperature = 0.5}]', "key 'llms.0': LLM backend 'template,temperature=0.5': unknown option 'temperature'"),
        ('metrics = [{name = "conner", l = "three"}]', "key 'metrics.0': metric 'conner,l=three': option 'l'"),
        ('metrics = [{name = "na", relevanse = false}]', "Did you mean 'relevance'?"),
        ('kg = {name = "sparql"}', "key 'kg': knowledge source 'sparql' needs an argument"),
        ('nli = {name = "table", argument = "j.jsonl", note = "a,b"}', "key 'nli': option 'note' cannot hold ','"),
        ('lm = {name = "hf", argument = "gpt2", layers = [1, 2]}', "option 'layers' must be a string, number or boolean"),
        ('judge = "gpt-4o"', "key 'judge': unknown LLM backend 'gpt-4o'"),
    ],
)
def test_a_bad_component_is_named_when_the_file_loads(tmp_path, toml, message):
    (tmp_path / "b.toml").write_text(toml + "\n[experiments.main]\n")
    with pytest.raises(ConfigError) as err:
        BenchConfig.load(tmp_path / "b.toml")
    assert message in str(err.value) and str(err.value).startswith(str(tmp_path / "b.toml"))
