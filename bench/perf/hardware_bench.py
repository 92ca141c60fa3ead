"""How well the HF backends use the hardware: the old settings against the new, in one run.

Old: fp32, fixed item batches in input order (16 pairs for entailment, 8 for scoring and
generation), padding to the longest item, logits at every position. New: the project's
defaults (bf16 on CUDA, fp32 on the CPU; length-sorted batches under a token budget, padded
to a multiple of 8; logits only at scored positions). Every model is built with random
weights from a shape (no download), so the figures are throughput and memory, not quality.

    python -m bench.perf.hardware_bench                # CPU: small shapes, minutes
    python -m bench.perf.hardware_bench --shapes real  # GPU: TRUE T5-11B and Llama-7B shapes
    python -m bench.perf.hardware_bench --smollm2      # CPU: SmolLM2 on realistic metric inputs

`--smollm2` scores what ConSens and CONNER score (an answer given its question and
knowledge) with SmolLM2-135M: batched against one at a time, old and new settings.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import tempfile
from pathlib import Path
from typing import Any

from kalma.cache import Cache
from kalma.models import GenParams
from kalma.models.hf import HFCausalLM, HFCausalScorer, HFSeq2SeqEntailment, cuda

from .common import report, timed
from .random_models import WORDS, build_llama, build_t5_shape

SHAPES = {
    "small": {
        "t5": dict(d_model=256, d_ff=1024, d_kv=32, heads=8, layers=4, vocab=32128),
        "llama": dict(hidden=256, layers=4, heads=8, intermediate=688, vocab=32000),
    },
    "real": {
        "t5": dict(d_model=1024, d_ff=65536, d_kv=128, heads=128, layers=24, vocab=32128),
        "llama": dict(hidden=4096, layers=32, heads=32, intermediate=11008, vocab=32000),
    },
}
OLD: dict[str, Any] = {"dtype": "fp32", "batching": "items"}
NEW: dict[str, Any] = {}  # the defaults


def _peak() -> str:
    if cuda():
        import torch

        return f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB GPU"
    return f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GiB RSS (process peak)"


def _reset_peak() -> None:
    gc.collect()
    if cuda():
        import torch

        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS[4:]) for _ in range(rng.randint(lo, hi)))


def entailment(folder: Path, n: int) -> dict[str, Any]:
    rng = random.Random(0)
    pairs = [(_sentence(rng, 8, 120), _sentence(rng, 2, 8)) for _ in range(n)]  # premise lengths vary, as real sentences do
    out: dict[str, Any] = {}
    speeds = {}
    for label, kw in (("old", {**OLD, "batch_size": 16}), ("new", NEW)):
        ent = HFSeq2SeqEntailment(str(folder), **kw)
        ent.probs(pairs[:2], cache=Cache(None))  # load outside the timing
        _reset_peak()
        seconds, _ = timed(lambda: ent.probs(pairs, cache=Cache(None)))
        speeds[label] = n / seconds
        out[f"entailment {label} ({ent.dtype}, {ent.batching}): pairs/s"] = speeds[label]
        out[f"entailment {label}: peak memory"] = _peak()
    out["entailment new/old speed-up"] = speeds["new"] / speeds["old"]
    return out


def scoring(folder: Path, n: int) -> dict[str, Any]:
    rng = random.Random(1)
    items = [(_sentence(rng, 20, 300), _sentence(rng, 5, 60)) for _ in range(n)]  # knowledge context, answer
    tokens = sum(len(c.split()) + len(t.split()) + 1 for c, t in items)
    out: dict[str, Any] = {}
    speeds = {}
    for label, kw in (("old", {**OLD, "batch_size": 8, "logits": "all"}), ("new", NEW)):
        sc = HFCausalScorer(str(folder), **kw)
        sc.token_logprobs([items[0][1]], [items[0][0]], cache=Cache(None))
        _reset_peak()
        seconds, _ = timed(lambda: sc.token_logprobs([t for _, t in items], [c for c, _ in items], cache=Cache(None)))
        speeds[label] = tokens / seconds
        out[f"scoring {label} ({sc.dtype}, {sc.batching}, logits {sc.logits}): tokens/s"] = speeds[label]
        out[f"scoring {label}: peak memory"] = _peak()
    out["scoring new/old speed-up"] = speeds["new"] / speeds["old"]
    return out


def generation(folder: Path, n: int, new_tokens: int) -> dict[str, Any]:
    rng = random.Random(2)
    chats = [[{"role": "user", "content": _sentence(rng, 10, 200)}] for _ in range(n)]
    out: dict[str, Any] = {}
    speeds = {}
    params = GenParams(max_tokens=new_tokens)
    for label, kw in (("old", {**OLD, "batch_size": 8}), ("new", NEW)):
        llm = HFCausalLM(str(folder), **kw)
        llm.chat_many(chats[:1], params, cache=Cache(None))
        _reset_peak()
        seconds, gens = timed(lambda: llm.chat_many(chats, params, cache=Cache(None)))
        speeds[label] = sum(g.completion_tokens for g in gens) / seconds
        out[f"generation {label} ({llm.dtype}, {llm.batching}): new tokens/s"] = speeds[label]
        out[f"generation {label}: peak memory"] = _peak()
    out["generation new/old speed-up"] = speeds["new"] / speeds["old"]
    return out


def smollm2(n_single: int = 24) -> dict[str, Any]:
    """SmolLM2 scoring an answer given its question and knowledge, as ConSens and CONNER do."""
    from baselines.prompt import build_messages
    from dataset_builder.demo import demo_entries
    from evaluation.base import knowledge_prose, lm_context
    from kalma.citations import strip_citations
    from kalma.kg import open_source
    from kalma.models import get_llm
    from kalma.models.smollm2 import SPEC, converted_dir

    entries = demo_entries(open_source("demo"))
    llm = get_llm("template")
    items = []
    for e in entries:
        for setting in ("general", "specific"):
            answer = strip_citations(llm.chat(build_messages(e.question(setting), e.knowledge_pool)).text)
            for kg in (e.knowledge_pool, e.knowledge_pool.model_copy(update={"entities": e.knowledge_pool.entities[:1]})):
                items.append((lm_context(e.question(setting), knowledge_prose(kg)), answer))
    items = list(dict.fromkeys(items))[:n_single]
    path = str(converted_dir())
    out: dict[str, Any] = {"smollm2 items": len(items)}
    for label, kw in (("old", {**OLD, "batch_size": 8, "logits": "all"}), ("new", NEW)):
        sc = HFCausalScorer(path, spec=SPEC, **kw)
        lengths = [len(e.ids) for e in sc._prepare(items)]
        out["smollm2 tokens per item (min-max)"] = f"{min(lengths)}-{max(lengths)}"
        sc.token_logprobs([items[0][1]], [items[0][0]], cache=Cache(None))
        t_batch, _ = timed(lambda: sc.token_logprobs([t for _, t in items], [c for c, _ in items], cache=Cache(None)))
        t_single, _ = timed(lambda: [sc.token_logprobs([t], [c], cache=Cache(None)) for c, t in items])
        out[f"smollm2 {label}: batched items/s"] = len(items) / t_batch
        out[f"smollm2 {label}: one-at-a-time items/s"] = len(items) / t_single
        out[f"smollm2 {label}: batched / one-at-a-time"] = t_single / t_batch
    out["smollm2 peak memory"] = _peak()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", choices=sorted(SHAPES), default="real" if cuda() else "small")
    ap.add_argument("--pairs", type=int, default=None, help="entailment pairs (default 2000 on GPU, 96 on CPU)")
    ap.add_argument("--smollm2", action="store_true", help="only the SmolLM2 realistic-input comparison")
    args = ap.parse_args()
    if args.smollm2:
        report("hardware_bench_smollm2", {"device": "cuda" if cuda() else "cpu", **smollm2()})
        return
    gpu = cuda()
    n = args.pairs or (2000 if gpu else 96)
    rows: dict[str, Any] = {"device": _device_name(), "shapes": args.shapes}
    with tempfile.TemporaryDirectory() as tmp:
        t5 = build_t5_shape(Path(tmp) / "t5", **SHAPES[args.shapes]["t5"])
        rows |= entailment(t5, n)
        llama = build_llama(Path(tmp) / "llama", **SHAPES[args.shapes]["llama"])
        rows |= scoring(llama, n // 2)
        rows |= generation(llama, 64 if gpu else 16, 128 if gpu else 16)
    report(f"hardware_bench_{args.shapes}", rows)


def _device_name() -> str:
    if cuda():
        import torch

        return torch.cuda.get_device_name(0)
    import os
    import platform

    return f"CPU ({os.cpu_count()} cores, {platform.processor() or platform.machine()})"


if __name__ == "__main__":
    main()
