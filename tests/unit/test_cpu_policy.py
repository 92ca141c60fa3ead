"""The CPU's plans, pinned (deterministic, no timing): memory bounds what a batch holds, read from
the host as CUDA's is from the card; the pass width (the knee of the measured throughput) bounds
how many positions one pass computes; decoding is bounded by memory alone. And the calibration
that measures the pass width, once per machine and model."""

from __future__ import annotations

import json
import random

import pytest

from kalma.cache import Cache
from kalma.models import GenParams
from kalma.models.calibration import ROW, SIZES, knee, measure
from kalma.models.hf import HFCausalLM, HFCausalScorer, Prompt
from kalma.models.runtime import MEMORY_SHARE, padded, resolve, using
from kalma.models.stand_in import GIB, FakeHost
from perf.random_models import build_causal, build_llama, random_text

MIB = 2**20
# SmolLM2-135M, the demo's model: its shape sets the demo's plans
SMOLLM2 = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3, vocab_size=49152)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return str(build_llama(tmp_path_factory.mktemp("llama"), hidden=64, layers=2, heads=4, intermediate=172, vocab=2000, positions=2048))


def _meminfo_available() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))


def test_the_cpu_budget_is_the_hosts_memory_and_the_pass_width_apart(llama, monkeypatch):
    with using(FakeHost(8 * GIB)):
        sc = HFCausalScorer(f"{llama}@fp32")
        assert sc.rt.budget() == int(8 * GIB * MEMORY_SHARE)
        assert sc.runtime()["budget_from"] == "50% of the host's available memory when each call is planned"
        assert sc.runtime()["pass_tokens"] == 2048 and sc.runtime()["pass_from"] == "KALMA_PASS_TOKENS"
        assert HFCausalScorer(f"{llama}@fp32", pass_tokens=300).rt.pass_tokens == 300
    monkeypatch.setenv("KALMA_TOKEN_BUDGET", "300")
    sc = HFCausalScorer(f"{llama}@fp32")
    assert sc.rt.budget() == sc.rt.memory.tokens(300) and sc.runtime()["budget_from"] == "KALMA_TOKEN_BUDGET (300 tokens of a padded pass)"


def test_the_real_host_reading():
    """No stand-in: the budget is half of what /proc/meminfo says is available (it moves a little
    between the two readings)."""
    from kalma.models.runtime import device

    read = device().free()
    assert read > 0 and abs(read - _meminfo_available()) < 0.1 * read


def _demo_prompts(rng: random.Random) -> list[Prompt]:
    """Six prompts as the demo's answers have them (609 to 1,073 tokens, sharing the instruction
    and demonstration: 480 tokens)."""
    shared = tuple(rng.randrange(1000) for _ in range(480))
    return [Prompt([], shared + tuple(rng.randrange(1000) for _ in range(n - 480)), "runner") for n in (742, 1073, 851, 609, 930, 688)]


def _as_smollm2(backend):
    from transformers import LlamaConfig

    backend.model()
    backend._runtime = resolve(LlamaConfig(**SMOLLM2), "fp32", None, None, pass_tokens=512)
    return backend


def test_the_demos_six_prompts_are_one_batch_with_memory_to_spare(llama):
    """The plan the old CPU budget (a 1,024-token pass in bytes: 96 MiB at SmolLM2's vocabulary)
    cut into six batches of one prompt: memory to spare holds them in one; only memory splits it."""
    prompts = _demo_prompts(random.Random(0))
    seqs = [p.ids for p in prompts]
    with using(FakeHost(16 * GIB)):
        llm = _as_smollm2(HFCausalLM(f"{llama}@fp32"))
        (batch,) = llm._plan(prompts, GenParams(max_tokens=256))
        assert sorted(batch) == list(range(6))
        runner = llm.shared_runner()
        assert runner.pass_tokens == 512 and runner.max_rows == 1024
        # their own tokens after the shared 480, each keeping one position (what follows it): the
        # leaf rows' logits are a few MiB, so only the pass width cuts them, never memory
        sizes = [(480, len(s) - 480, 1) for s in seqs]
        assert runner._leaf_plan(sizes, 128 * MIB) == runner._leaf_plan(sizes, 1 << 62)
        assert all(len(b) == 1 or sum(sizes[i][1] for i in b) <= 512 * len(b) for b in runner._leaf_plan(sizes, 128 * MIB))
    with using(FakeHost(256 * MIB)):  # a small machine: the prompts' caches do not fit together
        llm = _as_smollm2(HFCausalLM(f"{llm.path}@fp32"))
        batches = llm.prefix_plan(seqs, decode=True)
        assert len(batches) > 1 and sorted(i for b in batches for i in b) == list(range(6))
        # memory cut it: each batch's caches (the shared 480 once, each prompt's own) within half the budget
        held = [480 + sum(len(seqs[i]) - 480 for i in b) + sum(len(seqs[i]) for i in b) for b in batches if len(b) > 1]
        assert all(llm.rt.memory.kv(1, h) <= llm.rt.budget() // 2 for h in held)


def test_decoding_is_one_batch_and_prefill_is_cut_at_the_pass_width(llama):
    """On a real (tiny) model: six prompts decode together however narrow the pass width; their
    own tokens run in leaf passes within it; a host short of memory splits the decoding."""
    rng = random.Random(1)
    shared = random_text(rng, 200)
    chats = [[{"role": "user", "content": shared + " " + random_text(rng, n)}] for n in (40, 90, 60, 120, 20, 75)]
    params = GenParams(max_tokens=4)

    def passes(available: int, width: int) -> list[tuple[int, int]]:
        with using(FakeHost(available)):
            llm = HFCausalLM(f"{llama}@fp32", pass_tokens=width)
            model = llm.model()[1]
            shapes: list[tuple[int, int]] = []
            hook = model.register_forward_pre_hook(lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
            try:
                llm.chat_many(chats, params, cache=Cache(None))
            finally:
                hook.remove()
            return shapes

    roomy = passes(16 * GIB, 128)
    decoding = [s for s in roomy if s[1] == 1]
    assert decoding and all(rows == 6 for rows, _ in decoding)  # every step, all six rows
    leaves = [s for s in roomy if s[0] > 1 and s[1] > 1]
    assert leaves and all(rows * width <= 128 for rows, width in leaves if rows > 1)
    wide = passes(16 * GIB, 1 << 20)
    assert [s for s in wide if s[1] > 1 and s[0] > 1] and max(r * w for r, w in wide) > 128
    tight = passes(3 * MIB, 1 << 20)
    assert max(rows for rows, width in tight if width == 1) < 6


def test_padded_scoring_rows_stop_at_the_pass_width_or_memory(llama):
    rng = random.Random(2)
    items = [(random_text(rng, 30), random_text(rng, rng.randint(5, 60))) for _ in range(24)]
    with using(FakeHost(16 * GIB)):
        sc = HFCausalScorer(f"{llama}@fp32", shared_prefix=False, pass_tokens=256)
        encoded = sc._prepare(items)
        batches = sc._plan(encoded)
        widths = [padded(len(e.ids)) for e in encoded]
        assert len(batches) > 2
        for b in batches:
            assert len(b) == 1 or len(b) * max(widths[i] for i in b) <= 256
            # cut by the width, not memory: one more row would have passed it
        assert all(len(b) == 1 or (len(b) + 1) * max(widths[i] for i in b) > 256 for b in batches[:-1])
        assert len(HFCausalScorer(f"{llama}@fp32", shared_prefix=False, pass_tokens=1 << 20)._plan(encoded)) == 1
    with using(FakeHost(1 * MIB)):  # memory, not the width, cuts it now
        sc = HFCausalScorer(f"{llama}@fp32", shared_prefix=False, pass_tokens=1 << 20)
        assert len(sc._plan(sc._prepare(items))) > 2


def test_fixed_rows_are_what_the_benchmark_measures(llama):
    rng = random.Random(3)
    items = [(random_text(rng, 30), random_text(rng, 10)) for _ in range(10)]
    sc = HFCausalScorer(f"{llama}@fp32", shared_prefix=False, fixed_rows=4)
    assert [len(b) for b in sc._plan(sc._prepare(items))] == [4, 4, 2]
    llm = HFCausalLM(f"{llama}@fp32", fixed_rows=2)
    prompts = llm._prepare([[{"role": "user", "content": t}] for _, t in items], GenParams())
    assert [len(b) for b in llm._plan(prompts, GenParams())] == [2] * 5


def test_sampled_prompts_prefilled_in_parts_decode_the_same(llama):
    """Sampling's prompt pass cut to the pass width (one row a pass) gives the tokens and
    log-probs of one pass over every row."""
    rng = random.Random(4)
    chats = [[{"role": "user", "content": random_text(rng, rng.randint(5, 80))}] for _ in range(5)]
    params = GenParams(max_tokens=6, temperature=0.7, seed=3, logprobs=1)
    narrow = HFCausalLM(f"{llama}@fp32", pass_tokens=8).chat_many(chats, params, cache=Cache(None))
    wide = HFCausalLM(f"{llama}@fp32", pass_tokens=1 << 20).chat_many(chats, params, cache=Cache(None))
    assert [g.text for g in narrow] == [g.text for g in wide]
    for a, b in zip(narrow, wide):
        assert [t.logprob for t in a.logprobs] == pytest.approx([t.logprob for t in b.logprobs], abs=1e-4)


def test_the_knee():
    assert knee({32: 444, 64: 592, 128: 723, 256: 788, 512: 847, 1024: 877, 2048: 880}) == 512
    assert knee({32: 100, 64: 100, 128: 100}) == 32  # flat: the narrowest pays as well
    assert knee({32: 100, 64: 200, 128: 150}) == 64


def test_the_calibration_measures_once_per_machine_and_model(tmp_path, monkeypatch):
    """Unset, the pass width is measured on the loaded model and kept; a second backend of the
    same shape reads it (here a measurement written by hand: a flat curve, knee at the
    narrowest), another shape measures its own."""
    monkeypatch.delenv("KALMA_PASS_TOKENS")
    kept = tmp_path / "calibration.json"
    monkeypatch.setenv("KALMA_CALIBRATION", str(kept))
    path = str(build_causal(tmp_path / "m", "llama"))
    first = HFCausalScorer(f"{path}@fp32")
    assert first.rt.pass_tokens in SIZES and first.rt.pass_from.startswith("the knee of this CPU's measured throughput")
    found = json.loads(kept.read_text())
    (key,) = found
    assert "|causal|fp32|" in key and "threads=" in key and set(found[key]) <= {str(s) for s in SIZES}
    found[key] = {str(s): 100.0 for s in found[key]}
    kept.write_text(json.dumps(found))
    assert HFCausalScorer(f"{path}@fp32").rt.pass_tokens == SIZES[0]
    other = HFCausalScorer(f"{str(build_causal(tmp_path / 'g', 'gpt2'))}@fp32")
    other.model()  # loading measures nothing: the calibration is a step of resolving the backend
    assert len(json.loads(kept.read_text())) == 1 and other._runtime is None
    assert other.rt.pass_from.startswith("the knee") and len(json.loads(kept.read_text())) == 2


def test_the_calibration_stops_at_its_slowest_pass():
    """A pass that takes `slowest` seconds is the last measured: a large model never runs the
    widest sizes (a clock advanced by each pass's positions, not a timed test)."""
    now, passes = [0.0], []

    def probe(rows: int, width: int) -> None:
        passes.append(rows * width)
        now[0] += rows * width / 1000  # a model running 1,000 positions a second

    found = measure(probe, slowest=0.25, clock=lambda: now[0])
    assert list(found) == [32, 64, 128, 256] and found[256] == pytest.approx(1000)
    assert max(passes) == 256 and passes[0] == min(SIZES[0], ROW)
