"""Every decision a GPU takes, driven on the CPU through a stand-in 80 GB card (`kalma/models/stand_in.py`):
dtype, attention, the budget from free memory, placement checks, static-cache generation in
bucketed shapes, log-probs moved once per batch, out-of-memory recovery on every path (the same
results as a run without faults), TF32 through whichever API the process set, and the plans of
release-scale runs at the Llama-7B and T5-11B shapes."""

from __future__ import annotations

import math
import random

import pytest

from kalma.cache import Cache
from kalma.errors import BackendError
from kalma.models import GenParams
from kalma.models.hf import HFCausalLM, HFCausalScorer, HFSeq2SeqEntailment
from kalma.models.runtime import tf32_on, using
from kalma.models.stand_in import GIB, H100, FakeCuda
from perf.random_models import build_causal, build_llama, build_t5, build_t5_shape, random_text


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return str(build_llama(tmp_path_factory.mktemp("llama"), hidden=128, layers=2, heads=4, intermediate=344, vocab=2000, positions=1024))


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    return str(build_t5_shape(tmp_path_factory.mktemp("t5"), d_model=64, d_ff=256, d_kv=16, heads=4, layers=2, vocab=2000))


def test_the_card_decides_dtype_attention_budget_and_every_report(llama, t5):
    from kalma.provenance import hardware

    with using(FakeCuda()) as card:
        sc = HFCausalScorer(llama)
        assert sc.dtype == "bf16" and "|cuda" in (sc.cache_identity() or "")
        assert sc.runs_as() == f"@bf16 on {H100}" and HFCausalScorer(f"{llama}@fp32").runs_as() == f"@fp32 on {H100}, TF32 off"
        assert sc.rt.budget() == int((80 * GIB - sum(card.loaded)) * 0.5) and sc.runtime()["budget_from"].startswith("50% of the free memory")
        assert card.emptied >= 2  # the allocator's cache freed before each load
        assert HFSeq2SeqEntailment(t5).attention == "eager"  # T5's position bias defeats SDPA's fused kernels
        assert hardware()["gpus"] == [H100] and hardware()["cuda"] == "12.8"
        # the first batch's measured peak corrects the model's allocator overhead (2.5 until then)
        assert sc.rt.memory.overhead == 2.5
        sc.token_logprobs(["she was born in rome ."], ["artemisia"], cache=Cache(None))
        assert sc.rt.measured.startswith("first batch peaked at") and 1.0 <= sc.rt.memory.overhead < 1.5


def test_loading_never_lands_on_the_cpu_unsaid(tmp_path):
    path = str(build_causal(tmp_path / "m", "llama"))
    with using(FakeCuda(total=1024)):  # a card with no room: device_map="auto" would put the layers on the CPU
        with pytest.raises(BackendError, match=r"on the GPU: 2 of 3 modules on cpu \(device_map='auto' found too little GPU memory\).*offload=true"):
            HFCausalScorer(f"{path}@fp32").model()
        offloaded = HFCausalScorer(f"{path}@fp32", offload=True)
        assert offloaded.runs_as().endswith(", 2 of 3 modules on cpu (device_map='auto' found too little GPU memory)")
        assert "placement" in offloaded.runtime()


def test_tf32_through_the_api_the_process_set(tmp_path):
    """A process that set TF32 the new way (torch >= 2.9) runs every backend: the legacy flag is
    never read, `@tf32` turns it on for its own passes only, and the process's setting comes back."""
    import torch

    path = str(build_causal(tmp_path / "m", "gpt2"))
    matmul = torch.backends.cuda.matmul
    matmul.fp32_precision = "tf32"
    try:
        for dtype, inside in (("fp32", False), ("tf32", True)):
            sc = HFCausalScorer(f"{path}@{dtype}")
            seen: list[bool] = []
            model = sc.model()[1]
            hook = model.register_forward_pre_hook(lambda *_: seen.append(tf32_on()))  # noqa: B023 (used within the iteration)
            assert sc.token_logprobs(["she was born in rome ."], cache=Cache(None))[0]
            hook.remove()
            assert seen == [inside] and matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = "none"


def test_static_cache_generation_compiles_few_shapes_and_syncs_once_per_batch(llama, monkeypatch):
    """On the card, prompts that share little decode with generate() and a static cache, in rows
    of powers of two and widths from a few buckets, so that compiled graphs are reused; the
    log-probs stay on the device until a batch is done (no `float()` per row and step)."""
    import torch

    rng = random.Random(0)
    chats = [[{"role": "user", "content": random_text(rng, rng.randint(5, 300))}] for _ in range(37)]
    with using(FakeCuda()):
        llm = HFCausalLM(f"{llama}@fp32")
        model = llm.model()[1]
        shapes, real = [], model.generate

        def recorded(**kw):
            shapes.append(tuple(kw["input_ids"].shape))
            return real(**kw)

        monkeypatch.setattr(model, "generate", recorded)
        floats = []
        monkeypatch.setattr(torch.Tensor, "__float__", lambda t: floats.append(1) or t.item())
        out = llm.chat_many(chats, GenParams(max_tokens=12, logprobs=2), cache=Cache(None))
    assert llm.runtime()["paths"] == {"greedy: generate() with a static cache": len(shapes)} and len(out) == 37
    assert all(rows & (rows - 1) == 0 for rows, _ in shapes) and len({w for _, w in shapes}) <= 4
    assert floats == []  # every log-prob crossed in one transfer per batch
    assert all(g.logprobs and len(g.logprobs) == g.completion_tokens for g in out)


def _scored(sc, items):
    return sc.token_logprobs([t for _, t in items], [c for c, _ in items], cache=Cache(None))


@pytest.mark.parametrize("path", ["padded", "runner"])
def test_scoring_recovers_from_running_out_of_memory(llama, path):
    """The card's allocator refuses past a limit; a budget given too large (token_budget) makes
    batches that do not fit: each is split, the budget halved once for the run (said), the rest
    of the call planned again, and every log-prob equals the run without faults."""
    rng = random.Random(1)
    shared = path == "runner"
    context = random_text(rng, 150)
    items = [(context if shared else random_text(rng, rng.randint(20, 200)), random_text(rng, rng.randint(5, 40))) for _ in range(48)]
    option = "always" if shared else False
    with using(FakeCuda()):
        want = _scored(HFCausalScorer(f"{llama}@fp32", shared_prefix=option), items)
    limit = 3 << 20
    with using(FakeCuda(limit=limit)) as card:
        # several batches at the budget given (padded rows): those after the first fault are planned again
        sc = HFCausalScorer(f"{llama}@fp32", shared_prefix=option, token_budget=20_000 if shared else 1_000)
        first, emptied = sc.rt.budget(), card.emptied
        got = _scored(sc, items)
    for g, w in zip(got, want):
        assert g == pytest.approx(w, abs=1e-4)
    said = [n for n in sc.rt.notes if n.startswith("halved")]
    assert card.ooms >= 1 and len(said) == 1 and "halved the batch budget" in sc.runtime()["budget_from"]
    assert card.emptied - emptied == card.ooms  # the allocator's cache freed after each fault
    # each fault halved the budget once and re-planned what was left: never a fault per batch, so
    # the budget ends near what fits, not far below it
    assert card.ooms <= math.ceil(math.log2(first / limit)) + 1 and sc.rt.cap is not None and limit // 4 <= sc.rt.cap < first // 4
    if not shared:  # a retry starts with nothing of the failed attempt alive (the runner keeps its remembered prefixes)
        assert set(card.held_at_start) == {0}


def test_entailment_recovers_from_running_out_of_memory(t5):
    rng = random.Random(2)
    pairs = [(random_text(rng, rng.randint(10, 150)), random_text(rng, 6)) for _ in range(40)]
    with using(FakeCuda()):
        want = HFSeq2SeqEntailment(f"{t5}@fp32").probs(pairs, cache=Cache(None))
    with using(FakeCuda(limit=2 << 20)) as card:
        ent = HFSeq2SeqEntailment(f"{t5}@fp32", token_budget=20_000)
        got = ent.probs(pairs, cache=Cache(None))
    assert got == pytest.approx(want, abs=1e-6) and card.ooms >= 1 and ent.rt.cap is not None


@pytest.mark.parametrize("decode", ["static", "runner"])
def test_generation_recovers_from_running_out_of_memory(llama, decode):
    rng = random.Random(3)
    chats = [[{"role": "user", "content": random_text(rng, rng.randint(5, 120))}] for _ in range(16)]
    params = GenParams(max_tokens=8, logprobs=2)
    with using(FakeCuda()):
        want = HFCausalLM(f"{llama}@fp32", decode=decode).chat_many(chats, params, cache=Cache(None))
    with using(FakeCuda(limit=2 << 20)) as card:
        llm = HFCausalLM(f"{llama}@fp32", decode=decode, token_budget=20_000)
        got = llm.chat_many(chats, params, cache=Cache(None))
    assert [g.text for g in got] == [g.text for g in want] and card.ooms >= 1
    for g, w in zip(got, want):
        assert [t.logprob for t in g.logprobs] == pytest.approx([t.logprob for t in w.logprobs], abs=1e-4)


def test_one_item_that_does_not_fit_is_said(tmp_path):
    path = str(build_t5(tmp_path / "t5"))
    with using(FakeCuda(limit=1)):
        with pytest.raises(BackendError, match="one item does not fit in GPU memory"):
            HFSeq2SeqEntailment(f"{path}@fp32").probs([("a premise", "a hypothesis")], cache=Cache(None))


@pytest.mark.slow
def test_release_scale_runs_plan_within_an_80gb_card():
    """`kalma answer` over 1,085 questions (Llama-7B shape), `kalma evaluate` with CONNER (T5-11B
    and Llama-7B loaded together) and a builder round of 1,000 candidates: every batch predicted
    within the budget the card leaves (perf/gpu_plans.py prints the table)."""
    from perf.gpu_plans import plans

    rows = plans()
    assert len(rows) == 4 and all(r["within"] for r in rows), rows
    answer, _, _, builder = rows
    assert answer["items"] == 1085 and answer["budget (GiB)"] < 40 and builder["items"] == 1000


def test_tf32_through_the_legacy_flags(monkeypatch):
    """A torch without `fp32_precision` (before 2.9): the legacy flags, on inside, restored after."""
    from types import SimpleNamespace

    import torch

    from kalma.models.runtime import matmul_precision

    matmul, cudnn = SimpleNamespace(allow_tf32=False), SimpleNamespace(allow_tf32=True)
    monkeypatch.setattr(torch.backends.cuda, "matmul", matmul)
    monkeypatch.setattr(torch.backends, "cudnn", cudnn)
    with matmul_precision("tf32"):
        assert tf32_on() and matmul.allow_tf32 and cudnn.allow_tf32
    with matmul_precision("fp32"):
        assert not tf32_on() and not cudnn.allow_tf32
    assert (matmul.allow_tf32, cudnn.allow_tf32) == (False, True)


def test_static_generation_at_release_scale_is_one_call_a_batch_in_few_shapes(llama):
    """1,085 prompts at the Llama-7B shape on the card, forced onto generate() with a static
    cache: one call a planned batch, rows a power of two (the last padded up), and no more
    shapes than torch compiles before it gives up (8)."""
    from transformers import LlamaConfig

    from kalma.models.hf import Prompt, bucket, row_bucket
    from kalma.models.runtime import resolve
    from perf.gpu_plans import LLAMA_7B

    rng = random.Random(5)
    prompts = [Prompt([], tuple(rng.randrange(1000) for _ in range(rng.randint(300, 1100))), "static") for _ in range(1085)]
    with using(FakeCuda()) as card:
        llm = HFCausalLM(f"{llama}@fp32", decode="static")
        llm.model()
        llm._runtime = resolve(LlamaConfig(**LLAMA_7B), "bf16", None, None)
        card.loaded.append(int(6.74e9 * 2))
        batches = llm._plan(prompts, GenParams(max_tokens=256))
    assert sorted(i for b in batches for i in b) == list(range(1085))
    shapes = {(row_bucket(len(b)), bucket(max(len(prompts[i].ids) for i in b))) for b in batches}
    assert len(shapes) <= 8, shapes
    # rows a power of two but in each width's last batch: nothing padded but there
    assert sum(1 for b in batches if len(b) & (len(b) - 1)) <= len({bucket(len(p.ids)) for p in prompts})


def test_the_runner_decodes_without_waiting_on_the_device_each_step(llama, monkeypatch):
    """On the card the runner asks whether every row has stopped once every 8 steps, and moves
    the tokens and log-probs once a batch: not once a row and step."""
    import sys

    import torch

    rng = random.Random(6)
    chats = [[{"role": "user", "content": random_text(rng, rng.randint(5, 60))}] for _ in range(8)]
    waits: list[str] = []

    def counted(name):
        real = getattr(torch.Tensor, name)

        def wrapper(self, *a, **kw):
            if sys._getframe(1).f_globals.get("__name__") == "kalma.models.shared_prefix":
                waits.append(name)
            return real(self, *a, **kw)

        return wrapper

    with using(FakeCuda()):
        llm = HFCausalLM(f"{llama}@fp32", decode="runner")
        llm.model()
        for name in ("__bool__", "__int__", "__float__", "tolist", "item"):
            monkeypatch.setattr(torch.Tensor, name, counted(name))
        out = llm.chat_many(chats, GenParams(max_tokens=32, logprobs=1), cache=Cache(None))
    assert len(out) == 8 and all(g.completion_tokens for g in out)
    assert waits.count("__bool__") <= 32 // 8 and waits.count("__int__") + waits.count("__float__") + waits.count("item") == 0
    assert waits.count("tolist") <= 8  # once a batch for the steps, and a few for the leaves' last rows


@pytest.mark.parametrize("kind", ["minicheck-t5", "factcg"])
def test_a_checker_recovers_from_running_out_of_memory(tmp_path, kind):
    """The grounding checkers run their chunks through the same planner: batches that do not fit
    the card are split and the budget halved, with the scores of a run without faults."""
    from kalma.models import ENTAILMENT
    from tests.checker_models import build_deberta_classifier, build_minicheck_t5

    path = build_minicheck_t5(tmp_path / "m") if kind == "minicheck-t5" else build_deberta_classifier(tmp_path / "m")
    rng = random.Random(4)
    pairs = [(". ".join(random_text(rng, rng.randint(4, 12)) for _ in range(rng.randint(1, 6))) + ".", random_text(rng, 5)) for _ in range(24)]
    with using(FakeCuda()):
        want = ENTAILMENT.build(f"{kind}:{path}@fp32,chunk_size=16").probs(pairs, cache=Cache(None))
    with using(FakeCuda(limit=1 << 20)) as card:
        ent = ENTAILMENT.build(f"{kind}:{path}@fp32,chunk_size=16,token_budget=20000")  # batches the card cannot hold
        assert sum(len(ent.inputs([p])) for p in pairs) > len(pairs)  # long documents, several chunks each
        got = ent.probs(pairs, cache=Cache(None))
    assert got == pytest.approx(want, abs=1e-6) and card.ooms >= 1 and ent.rt.cap is not None
