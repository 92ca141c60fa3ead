"""How release-scale runs are planned on an 80 GB card, at the real shapes, with no GPU at hand:
every batch of `kalma answer` over the release's questions (a Llama-7B shape, bf16), of
`kalma evaluate` with CONNER (TRUE's T5-11B shape for entailment, the Llama-7B shape for LM
scoring, both loaded), and of a builder round of 1,000 candidate sentences (the shared-prefix
runner), each predicted by the memory model against the budget the card leaves.

The card is a stand-in (`kalma/models/stand_in.py`), so every planning decision takes the
GPU's branch; texts are tokenized by SmolLM2's real BPE tokenizer (Llama's counts are close) and
by a word-level one for T5. The release is read from ../shared when present, else the demo's
questions stand in, repeated to the release's 1,085.

    python -m perf.gpu_plans
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

GIB = 2**30
LLAMA_7B: dict[str, Any] = dict(
    hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32, vocab_size=32000
)
T5_11B: dict[str, Any] = dict(d_model=1024, d_ff=65536, d_kv=128, num_heads=128, num_layers=24, vocab_size=32128, feed_forward_proj="relu")
WEIGHTS = {"llama-7b": 6.74e9 * 2, "t5-11b": 11.3e9 * 2}  # bf16 bytes


def questions_and_kgs(limit: int = 1085) -> list[tuple[str, Any]]:
    """(question, KG) of each entry: the release's (specific questions, retrieved graphs), else the demo's."""
    from .common import BIOKALMA

    if (BIOKALMA / "complex_question_graph.json").exists():
        from kalma.biokalma import release_entries

        entries = release_entries(BIOKALMA / "complex_question_graph.json")
    else:
        from dataset_builder.demo import demo_entries
        from kalma.kg import open_source

        entries = demo_entries(open_source("demo"))
    found = [(e.specific_question, e.knowledge_pool) for e in entries]
    return (found * (limit // len(found) + 1))[:limit]


def _as(backend: Any, shape: str, card: Any) -> Any:
    """`backend` (a small model, for its tokenizer) planning as the `shape` model in bf16 on `card`."""
    from transformers import LlamaConfig, T5Config

    from kalma.models.runtime import resolve

    backend.model()
    config = LlamaConfig(**LLAMA_7B) if shape == "llama-7b" else T5Config(**T5_11B)
    backend._runtime = resolve(config, "bf16", "eager" if shape == "t5-11b" else None, None)
    card.loaded.append(int(WEIGHTS[shape]))
    return backend


def _row(name: str, batches: Sequence[Sequence[int]], peaks: Sequence[int], budget: int) -> dict[str, Any]:
    return {
        "run": name,
        "items": sum(len(b) for b in batches),
        "batches": len(batches),
        "largest batch (rows)": max(len(b) for b in batches),
        "predicted peak (GiB)": round(max(peaks) / GIB, 2),
        "budget (GiB)": round(budget / GIB, 2),
        "within": all(p <= budget for p in peaks),
    }


def plans() -> list[dict[str, Any]]:
    from baselines.prompt import build_messages
    from evaluation.base import lm_context
    from kalma.citations import strip_citations
    from kalma.models import GenParams, get_llm
    from kalma.models.hf import HFCausalLM, HFCausalScorer, HFSeq2SeqEntailment, bucket, row_bucket
    from kalma.models.runtime import padded, using
    from kalma.models.shared_prefix import Request
    from kalma.models.smollm2 import converted_dir
    from kalma.models.stand_in import FakeCuda
    from kalma.verbalize import verbalize

    from .random_models import build_t5

    rows = []
    work = questions_and_kgs()
    smollm2 = str(converted_dir())
    with using(FakeCuda()) as card:  # kalma answer: generation, 256 new tokens
        llm = _as(HFCausalLM(smollm2), "llama-7b", card)
        params = GenParams(max_tokens=256)
        prompts = llm._prepare([build_messages(q, kg) for q, kg in work], params)
        batches = llm._plan(prompts, params)
        budget = llm.rt.budget()
        how = prompts[0].how
        if how == "runner":  # prompts sharing the instruction and demonstration: the shared-prefix runner
            runner = llm.shared_runner()
            peaks = [runner.predict([Request(prompts[i].ids, len(prompts[i].ids), decode=256) for i in b]) for b in batches]
        else:
            peaks = [llm.rt.memory.generation(row_bucket(len(b)), bucket(max(len(prompts[i].ids) for i in b)), 256, 0) for b in batches]
        rows.append(_row(f"kalma answer, {len(work)} questions ({how})", batches, peaks, budget))

    template = get_llm("template")
    answers = [strip_citations(template.chat(build_messages(q, kg)).text) for q, kg in work]
    with using(FakeCuda()) as card, tempfile.TemporaryDirectory() as tmp:  # kalma evaluate with CONNER
        ent = _as(HFSeq2SeqEntailment(str(build_t5(Path(tmp) / "t5"))), "t5-11b", card)
        scorer = _as(HFCausalScorer(smollm2), "llama-7b", card)
        pairs = [(verbalize(t, e.label), a) for (_, kg), a in zip(work, answers) for e in kg.entities[:1] for t in e.triples[:5]]
        batches = ent._plan(pairs)
        widths = ent._widths(pairs)
        peaks = [ent.rt.memory.seq2seq(len(b), max(widths[i][0] for i in b)) for b in batches]
        rows.append(_row(f"kalma evaluate, CONNER factuality: {len(pairs)} pairs", batches, peaks, ent.rt.budget()))
        items = [(lm_context(q, ""), a or " ") for (q, _), a in zip(work, answers)]
        encoded = scorer._prepare(items)
        batches = scorer._plan(encoded)
        if encoded[0].runner:  # questions that share their opening: the runner's plan, and its model
            runner = scorer.shared_runner()
            peaks = [runner.predict([Request(encoded[i].ids, encoded[i].start) for i in b]) for b in batches]
        else:
            sizes = scorer._sizes(encoded)
            peaks = [scorer.rt.memory.forward(len(b), max(sizes[i][0] for i in b), max(sizes[i][1] for i in b)) for b in batches]
        path = "runner" if encoded[0].runner else "padded rows"
        rows.append(_row(f"kalma evaluate, CONNER informativeness: {len(items)} answers ({path})", batches, peaks, scorer.rt.budget()))

    with using(FakeCuda()) as card:  # a builder round: one paragraph, 1,000 candidate sentences
        scorer = _as(HFCausalScorer(smollm2), "llama-7b", card)
        paragraph = " ".join(verbalize(t, "Artemisia Gentileschi") for t in work[0][1].triples())[:900]
        candidates = [(paragraph, f"{verbalize(t, 'Orazio Gentileschi')} ({i})") for i, t in enumerate(list(work[0][1].triples()) * 200)][:1000]
        encoded = scorer._prepare(candidates)
        batches = scorer._plan(encoded)
        runner = scorer.shared_runner()
        peaks = [runner.predict([Request(encoded[i].ids, encoded[i].start) for i in b]) for b in batches]
        paragraph_tokens = encoded[0].start - 1
        rows.append(_row(f"builder round: 1,000 candidates after a {paragraph_tokens}-token paragraph (runner)", batches, peaks, scorer.rt.budget()))
        rows[-1]["padded width"] = padded(max(len(e.ids) for e in encoded))
    return rows


def main() -> None:
    from .common import report

    rows = plans()
    for r in rows:
        print(" | ".join(f"{k}: {v}" for k, v in r.items()))
    report("gpu_plans", {f"{r['run']}: {k}": v for r in rows for k, v in r.items() if k != "run"})


if __name__ == "__main__":
    main()
