"""Entailment and LM scoring: batched against one item at a time, on the same model, as items
per second and their ratio. Models: the tiny random T5/BERT/GPT-2 the tests build, and
SmolLM2 for LM scoring.

    python -m perf.models_bench
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from kalma.cache import Cache
from kalma.models import Entailment, get_scorer
from kalma.models.hf import HFCausalScorer, HFNLIEntailment, HFSeq2SeqEntailment

from .common import report, timed

N = 128


def main() -> None:
    from .random_models import WORDS, build_bert_nli, build_causal, build_t5

    pairs = [(" ".join(WORDS[i % 20 : i % 20 + 12]), " ".join(WORDS[(i * 7) % 30 : (i * 7) % 30 + 4])) for i in range(N)]
    pairs = [(f"{p} {i}", h) for i, (p, h) in enumerate(pairs)]  # all distinct: no dedup help
    sentences = [f"the painter {p}" for p, _ in pairs]
    rows: dict[str, float | int | str] = {"items": N}
    with tempfile.TemporaryDirectory() as tmp:
        models: dict[str, Entailment] = {
            "tiny_t5_entail": HFSeq2SeqEntailment(str(build_t5(Path(tmp) / "t5")), batch_size=32),
            "tiny_bert_nli": HFNLIEntailment(str(build_bert_nli(Path(tmp) / "bert")), batch_size=32),
        }
        for name, ent in models.items():
            ent.probs(pairs[:2], cache=Cache(None))  # load once, outside the timing
            t_b, _ = timed(lambda: ent.probs(pairs, cache=Cache(None)))
            t_s, _ = timed(lambda: [ent.probs([p], cache=Cache(None)) for p in pairs])
            rows |= {f"{name}_batched_per_s": N / t_b, f"{name}_single_per_s": N / t_s, f"{name}_ratio": t_s / t_b}
        scorers = {"tiny_gpt2_lm": HFCausalScorer(str(build_causal(Path(tmp) / "gpt2")), batch_size=32), "smollm2_lm": get_scorer("smollm2")}
        for name, sc in scorers.items():
            texts = (
                sentences
                if name.startswith("tiny")
                else [f"Artemisia Gentileschi was an Italian painter, number {i} in this list of sentences." for i in range(32)]
            )
            sc.batch_size = 16
            sc.token_logprobs(texts[:1], cache=Cache(None))
            t_b, _ = timed(lambda: sc.token_logprobs(texts, cache=Cache(None)))
            t_s, _ = timed(lambda: [sc.token_logprobs([t], cache=Cache(None)) for t in texts])
            rows |= {
                f"{name}_items": len(texts),
                f"{name}_batched_per_s": len(texts) / t_b,
                f"{name}_single_per_s": len(texts) / t_s,
                f"{name}_ratio": t_s / t_b,
            }
    report("models_bench", rows)


if __name__ == "__main__":
    main()
