"""Shared-prefix scoring gives the log-probs of the plain path, whatever the sequences share:
one context under many texts (the builder's rounds), texts sharing their first words, a context
that grows between calls, a sequence that ends where another goes on, and the next-token
distribution G-Eval reads."""

from __future__ import annotations

import pytest

from kalma.cache import Cache
from kalma.models.hf import HFCausalScorer
from kalma.models.loading import load
from kalma.models.memory import MemoryModel, Shape
from kalma.models.shared_prefix import PrefixMemory, Request, SharedPrefixRunner, plan_tree
from perf.random_models import build_causal

TOL = {"fp32": 1e-4, "bf16": 0.05}
CONTEXT = "artemisia gentileschi was a painter . she was born in rome . her father was orazio gentileschi ."
TEXTS = [
    "orazio gentileschi occupation is painter .",
    "orazio gentileschi place of birth is rome .",
    "orazio gentileschi place of death is naples .",
    "artemisia gentileschi place of death is naples .",
    "artemisia gentileschi father is orazio gentileschi .",
    "she",
    "",
]


def _runner(tok, model, remembered: PrefixMemory) -> SharedPrefixRunner:
    """A runner with room for any batch these tests make (fp32, 64 MiB)."""
    return SharedPrefixRunner(
        model, pad_id=tok.pad_token_id, memory=MemoryModel(Shape.of(model.config), "fp32"), budget=lambda: 64 << 20, min_saved=1, remembered=remembered
    )


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def causal(request, tmp_path_factory):
    return str(build_causal(tmp_path_factory.mktemp(request.param), request.param, positions=256))


def test_the_tree_runs_each_shared_prefix_once_and_cuts_where_scoring_starts():
    ctx = (1, 5, 6, 7, 8)
    reqs = [Request(ctx + t, len(ctx)) for t in [(9, 10, 11, 12), (9, 10, 11, 13), (9, 10, 14), (20, 21)]]
    root = plan_tree(reqs, min_saved=1)
    assert (root.begin, root.end, root.members) == (0, 5, [0, 1, 2, 3])  # the context, cut before the scored text
    (child,) = root.children
    assert (child.begin, child.end, child.members, child.leaves) == (5, 7, [0, 1, 2], [2])
    assert [(c.begin, c.end, c.members) for c in child.children] == [(7, 8, [0, 1])]
    assert root.leaves == [3]
    assert plan_tree(reqs, min_saved=100).children == []  # sharing too little to pay for a pass of its own


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("min_shared", [1, 64])  # 1: the texts' shared first words get passes of their own too
def test_a_builder_round_equals_one_at_a_time(causal, dtype, min_shared):
    shared = HFCausalScorer(f"{causal}@{dtype}", min_shared=min_shared)
    single = HFCausalScorer(f"{causal}@{dtype}", logits="all", batching="items", batch_size=1, shared_prefix=False)
    contexts = [CONTEXT] * len(TEXTS) + ["", "she was born in rome ."]
    texts = TEXTS + ["orazio gentileschi was a painter .", "her father was orazio gentileschi ."]
    got = shared.token_logprobs(texts, contexts, cache=Cache(None))
    want = [single.token_logprobs([t], [c], cache=Cache(None))[0] for t, c in zip(texts, contexts)]
    for g, w, t in zip(got, want, texts):
        assert len(g) == len(t.split()) and g == pytest.approx(w, abs=TOL[dtype])


def test_a_growing_context_is_run_once_across_calls(causal):
    tok, model, _ = load("causal", causal, "fp32")
    runner = _runner(tok, model, PrefixMemory(64))
    single = HFCausalScorer(f"{causal}@fp32", logits="all", batching="items", batch_size=1, shared_prefix=False)
    scorer = HFCausalScorer(f"{causal}@fp32")
    paragraph = CONTEXT
    for added in ("orazio gentileschi was a painter .", "she was born in rome ."):
        encoded = scorer._prepare([(paragraph, t) for t in TEXTS[:4]])
        results = runner.run([Request(e.ids, e.start) for e in encoded])
        for r, t in zip(results, TEXTS[:4]):
            assert r.logprobs == pytest.approx(single.token_logprobs([t], [paragraph], cache=Cache(None))[0], abs=1e-4)
        paragraph = f"{paragraph} {added}"
    kept = [len(k) for k in runner.memory.keys()]
    assert len(kept) == 2 and kept[1] > kept[0]  # the second round's context extended the first's


def test_next_token_distribution_equals_a_full_pass(causal):
    import torch

    tok, model, _ = load("causal", causal, "fp32")
    runner = _runner(tok, model, PrefixMemory(0))
    prompts = [f"user : {CONTEXT} question : {q} assistant :" for q in ("born", "father", "father of")]
    ids = [tuple(tok(p)["input_ids"]) for p in prompts]
    results = runner.run([Request(i, len(i), top=5) for i in ids] + [Request(ids[0][:3], 3, top=2)])
    for r, i in zip(results, ids + [ids[0][:3]]):
        with torch.no_grad():
            row = torch.log_softmax(model(input_ids=torch.tensor([i], device=model.device)).logits[0, -1].float(), -1)
        want = torch.topk(row, len(r.next_top))
        assert [t for t, _ in r.next_top] == want.indices.tolist()
        assert [v for _, v in r.next_top] == pytest.approx(want.values.tolist(), abs=1e-4)
        assert r.logprobs == []


def test_identical_ids_split_differently_score_their_own_tokens(causal):
    shared = HFCausalScorer(f"{causal}@fp32")
    a, b = shared.token_logprobs(["was a painter", "a painter"], ["artemisia", "artemisia was"], cache=Cache(None))
    assert len(a) == 3 and len(b) == 2 and a[1:] == pytest.approx(b, abs=1e-5)


@pytest.mark.slow
def test_smollm2_builder_perplexities_equal_one_at_a_time():
    """The issue's bar: perplexities of a builder round with SmolLM2 within 1e-4 of one at a time."""
    from dataset_builder.selection import template_sentence
    from kalma.kg import open_source
    from kalma.models.smollm2 import SPEC, converted_dir

    graphs = open_source("demo").subgraphs(["Q212657", "Q367360"])
    sentences = [template_sentence(t) for g in graphs.values() for t in g.triples][:16]
    paragraph = "Artemisia Gentileschi was a painter born in Rome. She learned to paint in the workshop of her father, Orazio Gentileschi."
    shared = HFCausalScorer(str(converted_dir()), spec=SPEC, dtype="fp32").perplexity(sentences, [paragraph] * len(sentences))  # rel=1e-4 holds in fp32 only
    single = HFCausalScorer(str(converted_dir()), spec=SPEC, dtype="fp32", logits="all", batching="items", batch_size=1, shared_prefix=False)
    for s, p in zip(sentences, shared):
        assert p == pytest.approx(single.perplexity([s], [paragraph])[0], rel=1e-4)


def test_greedy_decoding_of_rows_from_several_prefixes_equals_generate(causal):
    """Prompts in two groups that share different prefixes run as separate leaf batches, then
    decode as one merged batch: each continuation equals transformers' generate() alone."""
    import torch

    tok, model, _ = load("causal", causal, "fp32")
    runner = _runner(tok, model, PrefixMemory(0))
    heads = [CONTEXT, "she was born in rome . her father was a painter . question : who"]
    prompts = [f"{h} {tail}" for h in heads for tail in ("father", "born in", "painter of rome")]
    ids = [tuple(tok(p)["input_ids"]) for p in prompts]
    stop = (tok.eos_token_id,)
    results = runner.run([Request(i, len(i), top=3, decode=6, stop=stop) for i in ids])
    for i, r in zip(ids, results):
        with torch.no_grad():
            out = model.generate(
                torch.tensor([i], device=model.device),
                max_new_tokens=6,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
                output_scores=True,
                return_dict_in_generate=True,
            )
        want = out.sequences[0, len(i) :].tolist()
        got = [s.token for s in r.generated]
        assert got == want[: len(got)] and (len(got) == 6 or got[-1] in stop)
        for s, scores in zip(r.generated, out.scores):
            assert s.logprob == pytest.approx(float(torch.log_softmax(scores[0].float(), -1)[s.token]), abs=1e-4) and len(s.top) == 3
