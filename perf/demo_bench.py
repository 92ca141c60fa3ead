"""Each stage of the demo that runs SmolLM2, old path against new, in one run, each from an
empty call cache: the builder's coherence scoring, SmolLM2's answers, and the evaluation of the
template's and SmolLM2's answers with every metric (G-Eval judged, ConSens and CONNER scored by
SmolLM2).

- old: padded rows, each item with its whole prefix (the scorer's `shared_prefix=False`), and
  transformers' generate() on fixed batches (the LLM's `batching="items"`);
- new: the defaults, on the shared-prefix runner (prefixes run once, remembered across calls,
  greedy decoding of all rows together).

Reports wall and CPU seconds per stage and path, and the ratios.

    python -m perf.demo_bench
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .common import report, scratch

METRICS = ["citation", "alignment", "na", "geval", "kprec", "consens", "conner", "conner-extrinsic"]


def _use(path: str) -> None:
    """Make the specs `smollm2` (LLM and LM scorer) the old or the new path, and empty the cache."""
    from kalma import cache, models
    from kalma.models.hf import HFCausalLM, HFCausalScorer
    from kalma.models.smollm2 import SPEC, converted_dir

    cache.set_cache(cache.Cache(Path(scratch()) / "cache.sqlite"))
    folder = str(converted_dir())
    old = path == "old"
    llm = HFCausalLM(folder, spec=SPEC, batching="items", batch_size=8) if old else HFCausalLM(folder, spec=SPEC)
    scorer = HFCausalScorer(folder, spec=SPEC, shared_prefix=not old)
    models._instances[(models.LLMS.group, SPEC)] = llm
    models._instances[(models.SCORERS.group, SPEC)] = scorer
    scorer.perplexity(["The model is loaded before the clock starts."])


def _stages(work: Path) -> dict[str, Any]:
    """(stage -> (wall s, CPU s)) of one pass through the demo's SmolLM2 stages."""
    from importlib import resources

    from baselines.pipeline import BaselineConfig, answer_dataset
    from dataset_builder.build import BuildConfig, build
    from dataset_builder.demo import demo_entries
    from evaluation.base import EvalOptions
    from evaluation.runner import evaluate
    from kalma.jsonl import write_jsonl
    from kalma.kg import open_source

    entries = demo_entries(open_source("demo"))
    write_jsonl(work / "d.jsonl", entries, "dataset")
    records = Path(str(resources.files("dataset_builder") / "data" / "demo_records.jsonl"))
    opts = EvalOptions(nli="lexical", judge="smollm2", lm="smollm2")
    steps = {
        "builder (4 entries, coherence by SmolLM2)": lambda: build(records, work / "built.jsonl", BuildConfig(llm="template", lm="smollm2"), progress=False),
        "template answers (6)": lambda: answer_dataset(
            entries, work / "a-template.jsonl", BaselineConfig(llm="template", retrieval="gold", temperatures=[0.0], max_tokens=160), progress=False
        ),
        "evaluate template answers, every metric": lambda: evaluate(
            work / "d.jsonl", work / "a-template.jsonl", work / "e1", metrics=METRICS, options=opts, progress=False
        ),
        "SmolLM2 answers (6, up to 160 tokens)": lambda: answer_dataset(
            entries, work / "a-smollm2.jsonl", BaselineConfig(llm="smollm2", retrieval="gold", temperatures=[0.0], max_tokens=160), progress=False
        ),
        "evaluate SmolLM2 answers, every metric": lambda: evaluate(
            work / "d.jsonl", work / "a-smollm2.jsonl", work / "e2", metrics=METRICS, options=opts, progress=False
        ),
    }
    out = {}
    for name, step in steps.items():
        wall, cpu = time.perf_counter(), time.process_time()
        step()
        out[name] = (time.perf_counter() - wall, time.process_time() - cpu)
    return out


def main() -> None:
    from kalma.nlp import load_spacy

    load_spacy()  # loads are start-up, not a stage's cost
    runs = {}
    for path in ("old", "new"):
        _use(path)
        runs[path] = _stages(Path(scratch()))
    rows: dict[str, object] = {"model": "SmolLM2-135M-Instruct, fp32, CPU", "entailment": "lexical (approximation)"}
    for stage in runs["old"]:  # numbers, not prose: readme_figures takes medians of them
        (ow, oc), (nw, nc) = runs["old"][stage], runs["new"][stage]
        rows |= {f"{stage}: wall s old": ow, f"{stage}: wall s new": nw, f"{stage}: wall speed-up": ow / nw, f"{stage}: CPU speed-up": oc / nc}
    old_total, new_total = (sum(w for w, _ in runs[p].values()) for p in ("old", "new"))
    rows |= {"all stages: wall s old": old_total, "all stages: wall s new": new_total, "all stages: wall speed-up": old_total / new_total}
    report("demo_bench", rows)


if __name__ == "__main__":
    main()
