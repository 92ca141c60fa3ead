"""Backends that use the hardware well (issue 16), checked on tiny random models on the CPU:
token-budget, length-sorted batches give the one-at-a-time results for every HF backend; the
scored-positions logits path equals the full one; fp32 and bf16 never share cache entries; a
local OpenAI-compatible server sees many requests in flight and answers come back in order."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalma.cache import Cache
from kalma.models import GenParams
from kalma.models.hf import HFCausalLM, HFCausalScorer, HFNLIEntailment, HFSeq2SeqEntailment
from kalma.models.loading import split_dtype
from kalma.models.runtime import plan_batches
from perf.random_models import WORDS, build_bert_nli, build_causal, build_t5
from tests.servers import completion, scripted_server

# Lengths from 1 to 40 words, so a small budget makes several batches of mixed widths.
TEXTS = [" ".join(WORDS[(i * 7) % 40 : (i * 7) % 40 + 1 + (i * 13) % 40]) for i in range(12)]
CONTEXTS = ["", "artemisia was born in rome .", " ".join(WORDS[:45])] * 4
PAIRS = list(zip(CONTEXTS, TEXTS))
TOL = {"fp32": 1e-4, "bf16": 0.1}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 300), st.integers(1, 50)), max_size=40), st.integers(8, 200_000))
def test_batches_cover_everything_within_the_budget(sizes, budget):
    def cost(rows, width, kept):  # grows with rows, width and kept, as every memory model does
        return rows * width * 8 + rows * kept * 100

    batches = plan_batches(sizes, cost, budget)
    assert sorted(i for b in batches for i in b) == list(range(len(sizes)))
    for b in batches:
        widest = tuple(max(sizes[i][k] for i in b) for k in range(2))
        assert len(b) == 1 or cost(len(b), *widest) <= budget
        assert [sizes[i] for i in b] == sorted(sizes[i] for i in b)


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def causal(request, tmp_path_factory):
    return str(build_causal(tmp_path_factory.mktemp(request.param), request.param))


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_scorer_token_budget_and_scored_logits_equal_one_at_a_time(causal, dtype):
    fast = HFCausalScorer(f"{causal}@{dtype}", token_budget=96, shared_prefix=False)  # several sorted batches
    reference = HFCausalScorer(f"{causal}@{dtype}", logits="all", batching="items", batch_size=1)
    assert len(fast._plan(fast._prepare(PAIRS))) > 2
    got = fast.token_logprobs(TEXTS, CONTEXTS, cache=Cache(None))
    want = reference.token_logprobs(TEXTS, CONTEXTS, cache=Cache(None))
    for g, w, t in zip(got, want, TEXTS):
        assert len(g) == len(t.split()) and g == pytest.approx(w, abs=TOL[dtype])


def test_scored_logits_equal_full_logits_in_one_batch(causal):
    left = HFCausalScorer(f"{causal}@fp32", token_budget=1 << 16).token_logprobs(TEXTS, CONTEXTS, cache=Cache(None))
    right = HFCausalScorer(f"{causal}@fp32", logits="all", token_budget=1 << 16).token_logprobs(TEXTS, CONTEXTS, cache=Cache(None))
    for a, b in zip(left, right):
        assert a == pytest.approx(b, abs=1e-4)


def test_generation_token_budget_equals_one_at_a_time(causal):
    chats = [[{"role": "user", "content": t}] for t in TEXTS[:6]]
    params = GenParams(max_tokens=5, logprobs=2)
    fast = HFCausalLM(f"{causal}@fp32", token_budget=64).chat_many(chats, params, cache=Cache(None))
    single = HFCausalLM(f"{causal}@fp32", batching="items", batch_size=1).chat_many(chats, params, cache=Cache(None))
    assert [g.text for g in fast] == [g.text for g in single]
    for f, s in zip(fast, single):
        assert [t.logprob for t in f.logprobs] == pytest.approx([t.logprob for t in s.logprobs], abs=1e-4)


@pytest.mark.parametrize("backend,builder", [(HFSeq2SeqEntailment, build_t5), (HFNLIEntailment, build_bert_nli)])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_entailment_token_budget_equals_one_at_a_time(tmp_path, backend, builder, dtype):
    path = str(builder(tmp_path / "m"))
    pairs = [(c or "she", t) for c, t in PAIRS]
    fast = backend(f"{path}@{dtype}", token_budget=64).probs(pairs, cache=Cache(None))
    single = backend(f"{path}@{dtype}", batching="items", batch_size=1).probs(pairs, cache=Cache(None))
    assert fast == pytest.approx(single, abs=TOL[dtype] / 10 if dtype == "fp32" else 0.05)


def test_fp32_and_bf16_never_share_cache_entries(causal, tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    fp32, bf16 = HFCausalScorer(f"{causal}@fp32"), HFCausalScorer(f"{causal}@bf16")
    assert fp32.spec == f"hf:{causal}" and bf16.spec == f"hf:{causal}@bf16" and split_dtype(bf16.spec)[1] == "bf16"
    a = fp32.token_logprobs(TEXTS[:3], cache=cache)
    b = bf16.token_logprobs(TEXTS[:3], cache=cache)
    assert cache.stats()["entries"]["lm"] == 6  # one entry per text and dtype
    assert a != b  # bf16 rounding shows: the values are really from two runs
    assert HFCausalScorer(causal, dtype="fp32").spec == fp32.spec  # fp32 is the implicit identity


def test_compatible_server_sees_many_requests_in_flight_and_answers_keep_their_order(monkeypatch):
    from kalma.models.openai_backend import OpenAIChat

    monkeypatch.delenv("KALMA_COMPAT_API_KEY", raising=False)
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def slow_echo(h, body):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.5)
        text = json.loads(body)["messages"][0]["content"].upper()
        with lock:
            state["now"] -= 1
        payload = completion(text)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    chats = [[{"role": "user", "content": f"chat {i}"}] for i in range(40)]
    with scripted_server([slow_echo]) as (url, log):
        llm = OpenAIChat("m", base_url=f"{url}/v1", concurrency=12)
        t0 = time.time()
        gens = llm.chat_many(chats, GenParams(), cache=Cache(None))
        elapsed = time.time() - t0
    assert [g.text for g in gens] == [f"CHAT {i}" for i in range(40)]
    assert 10 <= state["peak"] <= 12 and len(log) == 40  # up to the concurrency, never beyond
    assert elapsed < 40 * 0.5 / 2  # far from one at a time (20 s); the peak above is the exact check
    assert OpenAIChat("m", base_url=f"{url}/v1").concurrency == 32


def test_the_baseline_against_an_openai_compatible_server(tmp_path, monkeypatch):
    """The README's vLLM recipe, with a local stand-in for `vllm serve`: `kalma answer` sends
    every question to the server and files its answers under the server's spec."""
    from click.testing import CliRunner

    from dataset_builder.demo import demo_entries
    from kalma.cli import main
    from kalma.jsonl import read_jsonl, write_jsonl
    from kalma.kg import open_source
    from kalma.schema import Answer

    monkeypatch.delenv("KALMA_COMPAT_API_KEY", raising=False)
    entries = demo_entries(open_source("demo"))
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")

    def answer(h, body):
        question = json.loads(body)["messages"][-1]["content"].rsplit("Question:", 1)[-1]
        payload = completion(f"An answer to {question.split('?')[0].strip()}? [NA]")
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    with scripted_server([answer]) as (url, log):
        spec = f"openai-compatible:{url}/v1:meta-llama/Llama-2-7b-chat-hf"
        res = CliRunner().invoke(
            main, ["answer", "--dataset", str(tmp_path / "d.jsonl"), "--retrieval", "gold", "--llm", spec, "--seeds", "1,2", "-o", str(tmp_path / "a.jsonl")]
        )
        assert res.exit_code == 0, res.output
    answers = read_jsonl(tmp_path / "a.jsonl", Answer, kind="answers").records
    assert len(answers) == len(log) == 2 * len(entries) and {a.model for a in answers} == {spec}
    assert all(json.loads(r["body"])["model"] == "meta-llama/Llama-2-7b-chat-hf" for r in log)
    assert all(a.text.endswith("[NA]") for a in answers)


def test_a_seeded_sample_depends_on_the_item_not_its_batch_mates(causal):
    """hf: and smollm2 used to seed once per batch: item A sampled alone and A batched after B differed."""
    a = [{"role": "user", "content": "artemisia was born in"}]
    b = [{"role": "user", "content": "the father of orazio gentileschi was a painter in rome"}]
    params = GenParams(temperature=1.0, max_tokens=12, seed=7, logprobs=2)
    alone = HFCausalLM(f"{causal}@fp32").chat_many([a], params, cache=Cache(None))[0]
    after_b = HFCausalLM(f"{causal}@fp32").chat_many([b, a], params, cache=Cache(None))[1]
    assert alone.text == after_b.text and alone.text
    assert [t.logprob for t in alone.logprobs] == pytest.approx([t.logprob for t in after_b.logprobs], abs=1e-4)
    other_seed = HFCausalLM(f"{causal}@fp32").chat_many([a], GenParams(temperature=1.0, max_tokens=12, seed=8), cache=Cache(None))[0]
    assert other_seed.text != alone.text  # the seed still decides the sample


# ---------------------------------------------------------------- the paths a call takes (the GPU's own: tests/unit/test_gpu.py)


def test_the_scorer_takes_shared_prefixes_only_where_they_pay(causal):
    """Decided from the call's own plan: a builder round (one context, many candidates) saves
    most of its tokens and runs on the runner; texts under their own contexts save none and run
    as padded rows; both give the same log-probs."""
    sc, looked = HFCausalScorer(f"{causal}@fp32"), HFCausalScorer(f"{causal}@fp32")
    builder = [(" ".join(WORDS[:45]), t) for t in TEXTS]
    unshared = [(" ".join(WORDS[i : i + 30]), t) for i, t in enumerate(TEXTS)]
    assert looked._prepare(builder)[0].runner and not looked._prepare(unshared)[0].runner
    assert HFCausalScorer(f"{causal}@fp32", shared_prefix="always")._prefixes_pay(looked._prepare(unshared))
    for items in (builder, unshared):
        got = sc.token_logprobs([t for _, t in items], [c for c, _ in items], cache=Cache(None))
        want = HFCausalScorer(f"{causal}@fp32", shared_prefix="always").token_logprobs([t for _, t in items], [c for c, _ in items], cache=Cache(None))
        for g, w in zip(got, want):
            assert g == pytest.approx(w, abs=1e-4)
    assert sc.runtime()["paths"] == {"shared-prefix runner": 1, "padded rows, scored logits": 1}


def test_static_cache_decoding_equals_the_runner(causal):
    """The GPU's decoding path (transformers' generate with a static key/value cache) gives the
    runner's tokens and log-probs; each backend says which path it took."""
    chats = [[{"role": "user", "content": t}] for t in TEXTS[:5]]
    params = GenParams(max_tokens=6, logprobs=2)
    static, runner = HFCausalLM(f"{causal}@fp32", decode="static"), HFCausalLM(f"{causal}@fp32", decode="runner")
    a, b = static.chat_many(chats, params, cache=Cache(None)), runner.chat_many(chats, params, cache=Cache(None))
    assert [g.text for g in a] == [g.text for g in b]
    for g, h in zip(a, b):
        assert [t.logprob for t in g.logprobs] == pytest.approx([t.logprob for t in h.logprobs], abs=1e-4)
    assert static.runtime()["paths"] == {"greedy: generate() with a static cache": 1}  # 5 chats in one call, padded to 8 rows
    assert runner.runtime()["paths"] == {"greedy: shared-prefix runner": 1}


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_t5_attention_paths_stay_within_1e_2_of_fp32(tmp_path, attention):
    """Eager attention (the GPU's default for T5) and SDPA, in bf16, against fp32 probabilities."""
    path = str(build_t5(tmp_path / "t5"))
    pairs = [(c or "she", t) for c, t in PAIRS]
    reference = HFSeq2SeqEntailment(f"{path}@fp32", attention="sdpa").probs(pairs, cache=Cache(None))
    ent = HFSeq2SeqEntailment(f"{path}@bf16", attention=attention)
    assert ent.probs(pairs, cache=Cache(None)) == pytest.approx(reference, abs=1e-2)
    assert ent.model()[1].config._attn_implementation == attention and ent.runs_as() == f"@bf16 on CPU, {attention} attention"
