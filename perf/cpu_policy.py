"""The CPU's default plan against every fixed batch size, at the demo's and the builder's real
shapes, in one run; and each path's share of this CPU's matmul throughput (a roofline).

For each path the default (memory from the host, the pass width from the calibration) runs
beside the same path with a fixed number of rows a batch (`fixed_rows`: 1, 2, 4, 8, all), each
from an empty call cache after one untimed warm-up of the default. The report gives the
default's time as a ratio to the best fixed one (the goal: at most 1.10).

Paths, with SmolLM2-135M-Instruct (fp32, the demo's model) unless said:
- greedy answers: the demo's six questions in the baseline's prompt with gold knowledge (609 to
  1,073 tokens), 48 new tokens (the runner: shared prefix, leaf passes, decoding);
- sampled answers: the same prompts at temperature 0.5, 24 new tokens;
- LM scoring, unshared: each demo question's answer under its own context (padded rows);
- a builder round: one paragraph, 20 candidate sentences (the runner's scoring);
- T5 entailment: triples against answers, on a random model of t5-small's shape (no TRUE
  checkpoint installs offline).

The roofline: torch's fp32 matmul at the model's feed-forward shape ([positions x hidden] x
[hidden x ff]) gives this CPU's attainable FLOP/s; each path's model FLOPs (2 x the weights a
position passes through, the vocabulary projection only where logits are computed) over its wall
time, as a share of it.

    python -m perf.cpu_policy [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .common import report, scratch

FIXED = (1, 2, 4, 8, "all")


def _items() -> dict[str, Any]:
    """The demo's real inputs for each path."""
    from baselines.prompt import build_messages
    from dataset_builder.demo import demo_entries
    from evaluation.base import lm_context
    from kalma.kg import open_source
    from kalma.verbalize import verbalize

    entries = demo_entries(open_source("demo"))
    chats = [build_messages(e.specific_question, e.knowledge_pool) for e in entries]
    triples = [(verbalize(t, ent.label), e.specific_question) for e in entries for ent in e.knowledge_pool.entities for t in ent.triples]
    paragraph = " ".join(t for t, _ in triples[:8])
    return {
        "chats": chats,
        "unshared": [(lm_context(e.specific_question, ""), " ".join(t for t, _ in triples[i * 3 : i * 3 + 3])) for i, e in enumerate(entries)] * 4,
        "builder": [(paragraph, t) for t, _ in triples[8:28]],
        "pairs": [(t, q) for t, q in triples][:48],
    }


def _flops(model: Any) -> tuple[Callable[[], float], Any]:
    """A counter of the model FLOPs of every pass from now: 2 x the non-embedding weights a
    position passes through, plus 2 x hidden x vocabulary for each position whose logits come out."""
    cfg = model.config
    hidden = getattr(cfg, "hidden_size", None) or cfg.d_model
    vocab = cfg.vocab_size
    weights = sum(p.numel() for n, p in model.named_parameters() if "embed" not in n and "lm_head" not in n and "shared" not in n)
    total = [0.0]

    def hook(_m: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        logits = getattr(out, "logits", None)
        positions = ids.numel() if ids is not None else 0
        total[0] += 2 * weights * positions + (2 * hidden * vocab * logits.shape[0] * logits.shape[1] if logits is not None and logits.dim() == 3 else 0)

    return (lambda: total[0]), model.register_forward_hook(hook, with_kwargs=True)


def matmul_peak(hidden: int, ff: int, positions: int = 512, repeat: int = 20) -> float:
    """This CPU's fp32 matmul FLOP/s at a feed-forward's shape (torch's own kernel)."""
    import torch

    a, b = torch.randn(positions, hidden), torch.randn(hidden, ff)
    a @ b
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            a @ b
        best = min(best, (time.perf_counter() - start) / repeat)
    return 2 * positions * hidden * ff / best


def _run(make: Callable[..., Any], call: Callable[[Any], Any], n: int) -> list[dict[str, Any]]:
    """The default and each fixed setting, each from an empty cache; wall, CPU seconds and FLOPs."""
    rows = []
    call(make())  # load, calibrate and warm up outside the clock
    for setting in ("default", *FIXED):
        backend = make() if setting == "default" else make(fixed_rows=n if setting == "all" else setting)
        counted, hook = _flops(backend.model()[1])
        cpu, wall = time.process_time(), time.perf_counter()
        call(backend)
        rows.append(
            {"setting": str(setting), "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "flops": counted(), "plan": backend.runtime()}
        )
        hook.remove()
    return rows


def measure(quick: bool = False, only: str = "") -> dict[str, Any]:
    from kalma.cache import Cache
    from kalma.models import GenParams
    from kalma.models.hf import HFCausalLM, HFCausalScorer, HFSeq2SeqEntailment
    from kalma.models.smollm2 import converted_dir

    from .random_models import build_t5_shape

    items = _items()
    folder = str(converted_dir())
    new = 16 if quick else 48
    paths: dict[str, tuple[Callable[..., Any], Callable[[Any], Any], int]] = {
        "greedy answers (runner)": (
            lambda **kw: HFCausalLM(folder, spec="smollm2", **kw),
            lambda b: b.chat_many(items["chats"], GenParams(max_tokens=new), cache=Cache(None)),
            len(items["chats"]),
        ),
        "sampled answers": (
            lambda **kw: HFCausalLM(folder, spec="smollm2", **kw),
            lambda b: b.chat_many(items["chats"], GenParams(max_tokens=new // 2, temperature=0.5, seed=0), cache=Cache(None)),
            len(items["chats"]),
        ),
        "LM scoring, unshared (padded rows)": (
            lambda **kw: HFCausalScorer(folder, spec="smollm2", **kw),
            lambda b: b.token_logprobs([t for _, t in items["unshared"]], [c for c, _ in items["unshared"]], cache=Cache(None)),
            len(items["unshared"]),
        ),
        "builder round (runner scoring)": (
            lambda **kw: HFCausalScorer(folder, spec="smollm2", **kw),
            lambda b: b.token_logprobs([t for _, t in items["builder"]], [c for c, _ in items["builder"]], cache=Cache(None)),
            len(items["builder"]),
        ),
    }
    t5 = str(build_t5_shape(Path(scratch()) / "t5-small", d_model=512, d_ff=2048, d_kv=64, heads=8, layers=6, vocab=32128))
    paths["T5 entailment (t5-small shape, random)"] = (
        lambda **kw: HFSeq2SeqEntailment(t5, **kw),
        lambda b: b.probs(items["pairs"], cache=Cache(None)),
        len(items["pairs"]),
    )
    model = HFCausalScorer(folder, spec="smollm2").model()[1]
    peak = matmul_peak(model.config.hidden_size, model.config.intermediate_size)
    out: dict[str, Any] = {"matmul GFLOP/s (SmolLM2's feed-forward, 512 positions)": round(peak / 1e9, 1)}
    for name, (make, call, n) in paths.items():
        if (quick and "sampled" in name) or only not in name:
            continue
        rows = _run(make, call, n)
        default, fixed = rows[0], rows[1:]
        best = min(fixed, key=lambda r: r["wall"])
        out[f"{name}: default s"] = round(default["wall"], 2)
        out[f"{name}: default CPU s"] = round(default["cpu"], 2)
        for r in fixed:
            out[f"{name}: fixed {r['setting']} s"] = round(r["wall"], 2)
        out[f"{name}: best fixed"] = best["setting"]
        out[f"{name}: default / best fixed"] = round(default["wall"] / best["wall"], 3)
        if "T5" not in name:
            out[f"{name}: share of matmul peak"] = round(default["flops"] / default["wall"] / peak, 3)
        out[f"{name}: plan"] = {k: v for k, v in default["plan"].items() if k in ("pass_tokens", "pass_from", "budget_from", "paths")}
        print(f"{name}: default {default['wall']:.2f} s, best fixed ({best['setting']}) {best['wall']:.2f} s: {default['wall'] / best['wall']:.3f}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer new tokens, no sampling: a smoke run")
    parser.add_argument("--only", default="", metavar="TEXT", help="only the paths whose name holds TEXT (e.g. sampled)")
    args = parser.parse_args()
    found = measure(args.quick, args.only)
    report("cpu_policy" + (f"_{args.only.split()[0]}" if args.only else ""), found)


if __name__ == "__main__":
    main()
