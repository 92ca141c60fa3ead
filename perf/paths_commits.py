"""Each model path with its defaults at several commits, in one run, interleaved: what a change
to the shared planner did to every path it touches, on this CPU.

Paths (the demo's inputs; SmolLM2-135M fp32, random t5-small and BERT shapes, the MiniLM wheel):
greedy and sampled answers to the demo's six questions, LM scoring of unshared items, T5 and NLI
entailment of 48 pairs, and the MiniLM matcher. Each commit runs in a fresh process from a git
worktree (as `demo_commits` does), each path once untimed (loading, calibrating) and then timed
on a new backend with no call cache.

    python -m perf.paths_commits 61eb023 . --rounds 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .common import AT_COMMIT, at_commits, report

CHILD = (
    AT_COMMIT
    + """
import json, time, tempfile
from pathlib import Path
from perf.random_models import build_t5_shape, build_bert_nli
from baselines.prompt import build_messages
from dataset_builder.demo import demo_entries
from evaluation.base import lm_context
from kalma.cache import Cache
from kalma.kg import open_source
from kalma.models import GenParams, get_matcher
from kalma.models.hf import HFCausalLM, HFCausalScorer, HFSeq2SeqEntailment, HFNLIEntailment
from kalma.models.smollm2 import converted_dir
from kalma.verbalize import verbalize

entries = demo_entries(open_source("demo"))
chats = [build_messages(e.specific_question, e.knowledge_pool) for e in entries]
triples = [(verbalize(t, g.label), e.specific_question) for e in entries for g in e.knowledge_pool.entities for t in g.triples]
unshared = [(lm_context(e.specific_question, ""), " ".join(t for t, _ in triples[i * 3 : i * 3 + 3])) for i, e in enumerate(entries)] * 4
pairs = triples[:48]
folder = str(converted_dir())
tmp = Path(tempfile.mkdtemp())
t5, nli = str(build_t5_shape(tmp / "t5", d_model=512, d_ff=2048, d_kv=64, heads=8, layers=6, vocab=32128)), str(build_bert_nli(tmp / "nli"))
llm = lambda: HFCausalLM(folder, spec="smollm2")
sampled = GenParams(max_tokens=24, temperature=0.5, seed=0)
texts, contexts = [t for _, t in unshared], [c for c, _ in unshared]
paths = {{
    "greedy answers, 48 tokens": lambda: llm().chat_many(chats, GenParams(max_tokens=48), cache=Cache(None)),
    "sampled answers, 24 tokens": lambda: llm().chat_many(chats, sampled, cache=Cache(None)),
    "LM scoring, unshared": lambda: HFCausalScorer(folder, spec="smollm2").token_logprobs(texts, contexts, cache=Cache(None)),
    "T5 entailment (t5-small shape)": lambda: HFSeq2SeqEntailment(t5).probs(pairs, cache=Cache(None)),
    "NLI entailment (BERT shape)": lambda: HFNLIEntailment(nli).probs(pairs, cache=Cache(None)),
}}
out = {{}}
for name, run in paths.items():
    run()
    start = time.perf_counter()
    run()
    out[name] = time.perf_counter() - start
m = get_matcher("minilm")
m.scores(pairs)
from kalma.models import _instances
_instances.clear()
m = get_matcher("minilm")
start = time.perf_counter()
m._match(pairs)
out["MiniLM matcher"] = time.perf_counter() - start
print(json.dumps(out))
"""
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="+", help="commits to compare ('.' is the working tree); the first is the baseline")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in args.commits}
    with tempfile.TemporaryDirectory(prefix="kalma-paths-") as tmp, at_commits(args.commits, Path(tmp)) as roots:
        for r in range(args.rounds):
            for c in args.commits:
                done = subprocess.run([sys.executable, "-c", CHILD.format(root=str(roots[c]))], capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"{c} failed: {done.stderr[-2000:]}")
                runs[c].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"round {r + 1}, {c}: {runs[c][-1]}", flush=True)
    base = args.commits[0]
    rows: dict[str, Any] = {}
    for path in runs[base][0]:
        for c in args.commits:
            rows[f"{path}: {c} s (each run)"] = [round(x[path], 3) for x in runs[c]]
            rows[f"{path}: {c} / {base}"] = round(statistics.median(x[path] for x in runs[c]) / statistics.median(x[path] for x in runs[base]), 3)
    report("paths_commits", rows)
    for k, v in rows.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
