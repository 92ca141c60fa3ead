"""The LM scorer as a served model (`openai-compatible:URL:NAME` as `--lm`), against llama.cpp's
Python server (llama-cpp-python), whose /v1/completions gives a prompt's log-probabilities with
`echo` and `logprobs`, on the weights the local `smollm2` scorer loads from the same GGUF.

The server computes with the Q4_1 weights as they are (activations quantised to 8 bits in its
matrix products); the local backend dequantises them to fp32. On the 109 candidates of the
demo's pools after their paragraphs (1,325 tokens): the same tokens and spans for all; a mean
absolute difference of 0.065 nats a token (99th percentile 0.36, max 0.88); perplexities within
12 % (mean 2.8 %), Spearman 0.9994. The tolerances below leave room for other CPUs' kernels.

Skipped with a one-line reason where llama-cpp-python[server] is not installed (`make llama-server`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from dataset_builder.selection import template_sentence
from kalma.citations import strip_citations
from kalma.cli import main
from kalma.jsonl import read_jsonl
from kalma.kg import open_source
from kalma.models import get_scorer
from kalma.schema import DatasetEntry
from tests.llama_server import bos_copy, llama_server, needs_llama, smollm2_gguf

pytestmark = [needs_llama, pytest.mark.slow, pytest.mark.llama]

RECORDS = "dataset_builder/data/demo_records.jsonl"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    gguf = bos_copy(smollm2_gguf(), tmp_path_factory.mktemp("gguf") / "smollm2-bos.gguf")
    with llama_server(gguf) as (base, _):
        yield f"openai-compatible:{base}:smollm2,concurrency=1"


def test_served_log_probabilities_match_the_local_backend_on_the_same_weights(server):
    from scipy.stats import spearmanr  # imported here: at collection it cost each worker 1.5 s

    entry = demo_entries(open_source("demo"))[0]
    triples = list(entry.knowledge_pool.triples())[:8]
    texts, contexts = [template_sentence(t) for t in triples], [entry.reference] * len(triples)
    texts.append("The cat sat on the mat.")  # and one with no context: its first token is not scored
    contexts.append("")
    served, local = get_scorer(server).token_spans(texts, contexts), get_scorer("smollm2").token_spans(texts, contexts)
    local[-1] = local[-1][1:]  # the API gives the first prompt token no log-probability
    gaps = []
    for text, a, b in zip(texts, served, local):
        assert [(s, e) for _, s, e in a] == [(s, e) for _, s, e in b], text  # the same tokens, over the same characters
        gaps += [abs(x - y) for (x, _, _), (y, _, _) in zip(a, b)]
    assert sum(gaps) / len(gaps) < 0.15 and max(gaps) < 1.5, (sum(gaps) / len(gaps), max(gaps))
    ppl = [[math.exp(-sum(lp for lp, _, _ in row) / len(row)) for row in side] for side in (served, local)]
    assert all(abs(p - q) / q < 0.25 for p, q in zip(*ppl)), ppl
    assert spearmanr(*ppl).statistic > 0.95  # the selection score ranks candidates by these


def test_a_build_scored_by_the_server_records_it_and_keeps_its_scores(server, tmp_path):
    records = tmp_path / "records.jsonl"  # one record: the server scores about one candidate a second here
    records.write_text(Path(RECORDS).read_text().splitlines(keepends=True)[0])
    out = tmp_path / "ds.jsonl"
    args = ["build", "--records", str(records), "--kg", "demo", "--llm", "template", "--lm", server, "--rounds", "2", "-o", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["entries"]["written"] == 1
    (entry,) = read_jsonl(out, DatasetEntry)
    assert entry.meta["lm"] == server.split(",")[0]
    annotated, extended = entry.trace[0], entry.trace[1]
    assert extended.kind == "extend" and len(extended.candidates) > 5
    # the trace's perplexities are the server's, candidate for candidate
    some = extended.candidates[:5]
    again = get_scorer(server).perplexity([template_sentence(c.triple) for c in some], [strip_citations(annotated.paragraph)] * len(some))
    assert again == pytest.approx([c.perplexity for c in some], rel=1e-6)
