"""Per-answer cost of each metric on this CPU with SmolLM2 as the LM scorer and judge, on the
bundled demo's template answers, with an empty cache (so every model call is paid).

    python -m perf.metric_cost
"""

from __future__ import annotations

import os
from pathlib import Path

from .common import report, scratch, timed

METRICS = ["citation", "alignment", "na", "kprec", "consens", "conner", "conner-extrinsic", "geval"]


def main() -> None:
    os.environ["KALMA_CACHE_DIR"] = scratch()  # before kalma opens its cache
    from baselines.pipeline import BaselineConfig, answer_dataset
    from dataset_builder.demo import demo_entries
    from evaluation.base import EvalOptions
    from evaluation.runner import evaluate
    from kalma.jsonl import write_jsonl
    from kalma.kg import open_source
    from kalma.models import get_matcher, get_scorer

    tmp = Path(scratch())
    entries = demo_entries(open_source("demo"))
    write_jsonl(tmp / "d.jsonl", entries, "dataset")
    answer_dataset(entries, tmp / "a.jsonl", BaselineConfig(), progress=False)
    get_scorer("smollm2").perplexity(["warm up the model once."])  # load time is not per-answer cost
    get_matcher("minilm").scores([("a", "b")])
    opts = EvalOptions(lm="smollm2", judge="smollm2", nli="lexical")
    rows: dict[str, float | int | str] = {"answers": len(entries), "lm_and_judge": "smollm2", "nli": "lexical (approximation)"}
    for m in METRICS:
        secs, _ = timed(lambda: evaluate(tmp / "d.jsonl", tmp / "a.jsonl", tmp / f"out-{m}", metrics=[m], options=opts, progress=False))
        rows[f"{m}_seconds_per_answer"] = secs / len(entries)
    report("metric_cost", rows)


if __name__ == "__main__":
    main()
