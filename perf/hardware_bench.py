"""How well the HF backends use the hardware: every setting of entailment, LM scoring and
generation, each in a fresh process, against the card's limits.

A model kept in a process holds its memory and skews a budget read from free memory (T5-11B got
1,973 tokens instead of 34,197 on an H100), so each setting runs alone: this script builds the
random-weight models once, then starts itself (`--one`) per setting. MFU is useful FLOPs
(2 x parameters x real tokens) over the card's dense bf16 peak, for every row alike; a decoding
row also gives its share of the weight-bandwidth bound (every step reads the weights once for the
whole batch). Random weights give honest throughput and memory, not quality.

    python -m perf.hardware_bench                # CPU: small shapes, minutes
    python -m perf.hardware_bench --shapes real  # GPU: TRUE's T5-11B and a Llama-7B shape
    python -m perf.hardware_bench --smollm2      # CPU: SmolLM2 on realistic metric inputs

Writes perf/results/hardware_bench_<shapes>.json and .md (the README's table, with the card,
the date and the versions).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kalma.cache import Cache
from kalma.models import GenParams
from kalma.models.hf import HFCausalLM, HFCausalScorer, HFSeq2SeqEntailment
from kalma.models.runtime import device

from .common import RESULTS, report, scratch, timed
from .random_models import WORDS, build_llama, build_t5_shape

SHAPES = {
    "small": {
        "t5": dict(d_model=256, d_ff=1024, d_kv=32, heads=8, layers=4, vocab=32128),
        "llama": dict(hidden=256, layers=4, heads=8, intermediate=688, vocab=32000),
        "sizes": dict(pairs=96, items=48, chats=16, new_tokens=16),
    },
    "real": {
        "t5": dict(d_model=1024, d_ff=65536, d_kv=128, heads=128, layers=24, vocab=32128),
        "llama": dict(hidden=4096, layers=32, heads=32, intermediate=11008, vocab=32000),
        "sizes": dict(pairs=2000, items=1000, chats=64, new_tokens=128),
    },
}
# (part, setting) -> backend options; the first of each part is the old way, "default" the project's own.
SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "entailment": {
        "authors: fp32, one pair at a time": {"dtype": "fp32", "batching": "items", "batch_size": 1, "share": 0.1},
        "fp32, 16 pairs in input order": {"dtype": "fp32", "batching": "items", "batch_size": 16},
        "default": {},
        "bf16, SDPA attention": {"dtype": "bf16", "attention": "sdpa"},
        "bf16, FlexAttention": {"dtype": "bf16", "attention": "flex_attention", "gpu_only": True},
        "bf16, budget 16,384": {"dtype": "bf16", "token_budget": 16384},
    },
    "scoring (unshared items)": {
        "fp32, 8 items in order, logits everywhere": {"dtype": "fp32", "batching": "items", "batch_size": 8, "logits": "all"},
        "default": {},
        "padded rows, scored logits": {"shared_prefix": False},
        "shared-prefix runner": {"shared_prefix": "always"},
    },
    "scoring (builder candidates)": {
        "default": {},
        "padded rows, scored logits": {"shared_prefix": False},
        "shared-prefix runner": {"shared_prefix": "always"},
    },
    "generation": {
        "fp32 generate(), 8 chats at a time": {"dtype": "fp32", "batching": "items", "batch_size": 8},
        "default": {},
        "generate() with a static cache": {"decode": "static"},
        "shared-prefix runner": {"decode": "runner"},
    },
}
# dense bf16 peak FLOP/s and memory bandwidth (bytes/s), by a name's part
CARDS = {"H200": (989e12, 4.8e12), "H100 PCIe": (756e12, 2.0e12), "H100": (989e12, 3.35e12), "A100": (312e12, 2.0e12), "L4": (121e12, 0.3e12)}


def card() -> tuple[float, float] | None:
    name = device().name()
    return next((spec for key, spec in CARDS.items() if key in name), None)


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS[4:]) for _ in range(rng.randint(lo, hi)))


def inputs(part: str, sizes: dict[str, int]) -> Any:
    """The same inputs in every process: seeded."""
    rng = random.Random(part)
    if part == "entailment":
        return [(_sentence(rng, 8, 120), _sentence(rng, 2, 8)) for _ in range(sizes["pairs"])]  # premise lengths vary, as sentences do
    if part == "scoring (unshared items)":
        return [(_sentence(rng, 20, 300), _sentence(rng, 5, 60)) for _ in range(sizes["items"])]  # knowledge context, answer: no prefix shared
    if part == "scoring (builder candidates)":
        paragraph = _sentence(rng, 120, 160)  # a round of the builder: one paragraph, its candidate sentences
        return [(paragraph, _sentence(rng, 8, 20)) for _ in range(sizes["items"])]
    return [[{"role": "user", "content": _sentence(rng, 10, 200)}] for _ in range(sizes["chats"])]


def _peak_reset() -> None:
    if device().available():
        device().empty_cache()
        device().reset_peak()


def _peak_gib() -> float:
    if device().available():
        return device().peak() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # the process's peak RSS (kB on Linux)


def one(part: str, setting: str, folder: str, sizes: dict[str, int]) -> dict[str, Any]:
    """One setting, in this (fresh) process: throughput, MFU, peak memory, and what ran."""
    opts = dict(SETTINGS[part][setting])
    share = opts.pop("share", 1.0)
    opts.pop("gpu_only", None)
    work = inputs(part, sizes)
    work = work[: max(1, int(len(work) * share))]
    backend: Any
    if part == "entailment":
        backend = HFSeq2SeqEntailment(folder, **opts)
        run = lambda: backend.probs(work, cache=Cache(None))  # noqa: E731
        tok = backend.model()[0]
        tokens = sum(len(ids) + 1 for ids in tok([backend._text(p) for p in work])["input_ids"])
    elif part.startswith("scoring"):
        backend = HFCausalScorer(folder, **opts)
        run = lambda: backend.token_logprobs([t for _, t in work], [c for c, _ in work], cache=Cache(None))  # noqa: E731
        tokens = sum(len(e.ids) for e in backend._prepare(work))
    else:
        backend = HFCausalLM(folder, **opts)
        params = GenParams(max_tokens=sizes["new_tokens"])
        run = lambda: backend.chat_many(work, params, cache=Cache(None))  # noqa: E731
    # Warmed up on the very work it times: every shape a compiled path (a static cache's CUDA graphs)
    # meets is built before the clock starts; what the runner remembered of it is then forgotten.
    run()
    if getattr(backend, "_runner", None) is not None:
        from kalma.models.shared_prefix import PrefixMemory

        backend._runner.memory = PrefixMemory()
    backend.rt.paths.clear()
    _peak_reset()
    seconds, out = timed(run)
    model = backend.model()[1]
    n_params = sum(p.numel() for p in model.parameters())
    row: dict[str, Any] = {"part": part, "setting": setting, "seconds": seconds, "peak_gib": _peak_gib(), "runtime": backend.runtime(), "params": n_params}
    spec = card()
    if part == "generation":
        new = sum(g.completion_tokens for g in out)
        row |= {"items": len(work), "new_tokens": new, "throughput": new / seconds, "unit": "new tokens/s"}
        if spec:  # each decoding step reads every weight once for its whole batch of rows
            weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
            rows = min(len(work), sizes["chats"])
            row["bandwidth_share"] = row["throughput"] / (spec[1] / weight_bytes * rows)
    else:
        row |= {"items": len(work), "tokens": tokens, "throughput": (len(work) if part == "entailment" else tokens) / seconds}
        row["unit"] = "pairs/s" if part == "entailment" else "tokens/s"
        if spec:
            row["mfu"] = 2 * n_params * tokens / seconds / spec[0]
    return row


def build(shapes: str, root: Path) -> dict[str, str]:
    """The random-weight models, on the GPU in bf16 when there is one (seconds, not minutes)."""
    from .random_models import building

    with building():
        t5 = build_t5_shape(root / "t5", **SHAPES[shapes]["t5"])
        llama = build_llama(root / "llama", **SHAPES[shapes]["llama"])
    return {"t5": str(t5), "llama": str(llama)}


def run_all(shapes: str, parts: list[str], limit: int) -> list[dict[str, Any]]:
    root = Path(scratch())
    subprocess.run([sys.executable, "-m", "perf.hardware_bench", "--build", str(root), "--shapes", shapes], check=True)
    folders = json.loads((root / "models.json").read_text())
    rows = []
    for part in parts:
        folder = folders["t5" if part == "entailment" else "llama"]
        for setting, opts in SETTINGS[part].items():
            if opts.get("gpu_only") and not device().available():  # compiled kernels: on the CPU they take minutes to build
                continue
            args = [sys.executable, "-m", "perf.hardware_bench", "--one", part, "--setting", setting, "--model", folder, "--shapes", shapes]
            print(f"{part}: {setting}", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            try:
                done = subprocess.run(args, capture_output=True, text=True, timeout=limit)
            except subprocess.TimeoutExpired:
                rows.append({"part": part, "setting": setting, "error": f"not done after {limit} s"})
                continue
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                rows.append({"part": part, "setting": setting, "error": last[:300]})
                continue
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]) | {"wall_s": time.monotonic() - t0})
    return rows


def markdown(rows: list[dict[str, Any]], shapes: str) -> str:
    import torch
    import transformers

    head = (
        f"Measured {datetime.now(UTC):%Y-%m-%d} on {device().name()} (torch {torch.__version__}, transformers {transformers.__version__}), "
        f"`python -m perf.hardware_bench --shapes {shapes}`, each setting in a fresh process, random weights. "
        "MFU: 2 x parameters x real tokens over the card's dense bf16 peak."
    )
    lines = [head, "", "| part | setting | throughput | MFU | bandwidth | peak memory | what ran |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['part']} | {r['setting']} | failed: {r['error'].replace('|', '/')} | | | | |")
            continue
        rt = r["runtime"]
        budget = f"{rt['budget_bytes'] / 2**30:.1f} GiB" if "budget_bytes" in rt else "–"
        ran = f"{rt['dtype']}, {rt['attention']}, budget {budget}, memory overhead {rt.get('memory_overhead', '–')}; " + ", ".join(rt.get("paths", {}))
        mfu = f"{100 * r['mfu']:.1f} %" if "mfu" in r else "–"
        bw = f"{100 * r['bandwidth_share']:.1f} %" if "bandwidth_share" in r else "–"
        lines.append(f"| {r['part']} | {r['setting']} | {r['throughput']:,.1f} {r['unit']} | {mfu} | {bw} | {r['peak_gib']:.1f} GiB | {ran} |")
    return "\n".join(lines) + "\n"


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Flat figures for readme_figures: each setting's throughput, and the default over the first setting of its part."""
    out: dict[str, Any] = {"device": device().name()}
    for part in dict.fromkeys(r["part"] for r in rows):
        mine = {r["setting"]: r for r in rows if r["part"] == part and "error" not in r}
        for name, r in mine.items():
            out[f"{part}: {name} ({r['unit']})"] = r["throughput"]
        first = next(iter(SETTINGS[part]))
        if "default" in mine and first in mine and first != "default":
            out[f"{part}: default / {first}"] = mine["default"]["throughput"] / mine[first]["throughput"]
        if "default" in mine and "padded rows, scored logits" in mine:
            out[f"{part}: default / padded rows"] = mine["default"]["throughput"] / mine["padded rows, scored logits"]["throughput"]
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
    old: dict[str, Any] = {"dtype": "fp32", "batching": "items", "batch_size": 8, "logits": "all"}
    for label, kw in (("old", old), ("new", {})):
        sc = HFCausalScorer(path, spec=SPEC, **kw)
        lengths = [len(e.ids) for e in sc._prepare(items)]
        out["smollm2 tokens per item (min-max)"] = f"{min(lengths)}-{max(lengths)}"
        sc.token_logprobs([items[0][1]], [items[0][0]], cache=Cache(None))
        t_batch, _ = timed(lambda: sc.token_logprobs([t for _, t in items], [c for c, _ in items], cache=Cache(None)))
        t_single, _ = timed(lambda: [sc.token_logprobs([t], [c], cache=Cache(None)) for c, t in items])
        out[f"smollm2 {label}: batched items/s"] = len(items) / t_batch
        out[f"smollm2 {label}: one-at-a-time items/s"] = len(items) / t_single
        out[f"smollm2 {label}: batched / one-at-a-time"] = t_single / t_batch
    out["smollm2 peak memory (GiB)"] = _peak_gib()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--shapes", choices=sorted(SHAPES), default="real" if device().available() else "small")
    ap.add_argument("--parts", default=",".join(SETTINGS), help=f"comma-separated, of: {', '.join(SETTINGS)}")
    ap.add_argument("--limit", type=int, default=300, help="seconds a setting may take before it is recorded as not done (default 300)")
    ap.add_argument("--smollm2", action="store_true", help="only the SmolLM2 realistic-input comparison")
    ap.add_argument("--build", metavar="DIR", help=argparse.SUPPRESS)  # internal: build the models into DIR
    ap.add_argument("--one", metavar="PART", help=argparse.SUPPRESS)  # internal: run one setting, print its row
    ap.add_argument("--setting", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = SHAPES[args.shapes]["sizes"]
    if args.build:
        (Path(args.build) / "models.json").write_text(json.dumps(build(args.shapes, Path(args.build))))
        return
    if args.one:
        print(json.dumps(one(args.one, args.setting, args.model, sizes)))
        return
    if args.smollm2:
        report("hardware_bench_smollm2", {"device": device().name(), **smollm2()})
        return
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in SETTINGS]
    if unknown:
        ap.error(f"unknown part {unknown[0]!r}; known: {', '.join(SETTINGS)}")
    rows = run_all(args.shapes, parts, args.limit)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"hardware_bench_{args.shapes}.md").write_text(markdown(rows, args.shapes))
    (RESULTS / f"hardware_bench_{args.shapes}.rows.json").write_text(json.dumps(rows, indent=2))
    report(f"hardware_bench_{args.shapes}", summary(rows))
    print(markdown(rows, args.shapes))


if __name__ == "__main__":
    main()
