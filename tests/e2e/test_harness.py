"""KaLMA inside lm-evaluation-harness: the real harness (its CLI, `tests/e2e/conftest.py`'s `LM_EVAL`; its `hf` backend on
SmolLM2's folder) runs the task; its figures are `kalma evaluate`'s on the samples file it wrote,
and its generations are `kalma answer`'s greedy ones for the same prompt and model."""

from __future__ import annotations

import json
import math
import subprocess

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from evaluation.harness import MICRO, aggregate, documents, process_results
from kalma.cli import main
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from tests.e2e.conftest import LM_EVAL

pytest.importorskip("lm_eval")


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def _same(harness: float, suite: float | None) -> bool:
    return math.isnan(harness) if suite is None else harness == suite


def test_the_harness_metrics_are_the_suites_on_the_same_answers(tmp_path):
    """The template's answers to the demo, scored document by document as the harness does and
    aggregated by its hooks, against `kalma evaluate`: the same figures, to the last digit."""
    entries = demo_entries(open_source("demo"))
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    _ok(["answer", "--dataset", str(tmp_path / "d.jsonl"), "--retrieval", "gold", "-o", str(tmp_path / "a.jsonl")])
    texts = {json.loads(x)["entry_id"]: json.loads(x)["text"] for x in (tmp_path / "a.jsonl").read_text().splitlines()[1:]}
    per_doc = [process_results(doc, [texts[doc["id"]]]) for doc in documents(entries, "specific")]
    harness = {key: aggregate(key, [d[key] for d in per_doc]) for key in MICRO}
    _ok(["evaluate", "--dataset", str(tmp_path / "d.jsonl"), "--answers", str(tmp_path / "a.jsonl"), "--metrics", "citation", "-o", str(tmp_path / "e")])
    suite = json.loads((tmp_path / "e" / "summary.json").read_text())["metrics"]["citation"]
    assert all(_same(harness[k], suite[k]) for k in MICRO), (harness, suite)
    assert harness["correctness_micro"] > 0.5 and not math.isnan(harness["f1_micro"])  # figures, not all n/a


def test_the_task_files_for_a_dataset_and_a_harness_too_old(tmp_path, monkeypatch):
    import evaluation.harness as h

    assert _ok(["harness", "tasks"]).strip() == str(h.TASKS_DIR)
    entries = demo_entries(open_source("demo"))[:3]
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    out = _ok(["harness", "tasks", "--dataset", str(tmp_path / "d.jsonl"), "-o", str(tmp_path / "tasks")])
    assert "kalma_specific (3 questions)" in out
    assert f'dataset: "{tmp_path / "d.jsonl"}"' in (tmp_path / "tasks" / "kalma_general.yaml").read_text()
    monkeypatch.setattr(h, "MIN_LM_EVAL", "99.0")
    res = CliRunner().invoke(main, ["harness", "tasks"])
    assert res.exit_code == 1 and "the KaLMA tasks need 99.0 or later" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_a_real_harness_run_scored_by_kalma_evaluate(tmp_path):
    from baselines.prompt import build_messages
    from kalma.models import GenParams
    from kalma.models.hf import HFCausalLM
    from kalma.models.smollm2 import converted_dir

    # the demo's two shortest prompts (626 and 712 tokens; its first two have 1,716): SmolLM2 reads each twice
    entries = [e for e in demo_entries(open_source("demo")) if e.id in ("demo-hertwig", "demo-orazio-pisa")]
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    folder, new = str(converted_dir()), 24
    command = [*LM_EVAL, "--model", "hf", "--model_args", f"pretrained={folder},dtype=float32", "--device", "cpu"]
    tasks, metadata = _ok(["harness", "tasks"]).strip(), json.dumps({"dataset": str(tmp_path / "d.jsonl")})
    command += ["--tasks", "kalma_specific", "--include_path", tasks, "--metadata", metadata]
    command += ["--limit", "2", "--gen_kwargs", f"max_gen_toks={new}", "--apply_chat_template", "--log_samples", "--output_path", str(tmp_path / "out")]
    # ~14 s CPU here: lm_eval's imports and SmolLM2; no network is tried (HF_HUB_OFFLINE, tests/conftest.py)
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (results,) = tmp_path.glob("out/*/results_*.json")
    (samples,) = tmp_path.glob("out/*/samples_kalma_specific_*.jsonl")
    figures = json.loads(results.read_text())["results"]["kalma_specific"]

    args = ["--answers", str(samples), "--metrics", "citation", "--limit", "2", "-o", str(tmp_path / "e")]
    out = _ok(["evaluate", "--dataset", str(tmp_path / "d.jsonl"), *args])
    assert f"lm-evaluation-harness samples file {samples.name} (kalma_specific): 2 of 2 items matched" in out
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    for key in MICRO:
        assert _same(figures[f"{key},none"], summary["metrics"]["citation"][key]), key
    assert summary["models"]["answers"] == f"lm-eval:hf:{folder}"

    # the generations are kalma answer's greedy ones for the same messages and model
    generated = [json.loads(x) for x in samples.read_text().splitlines()]
    chats = [build_messages(e.specific_question, e.knowledge_pool) for e in entries[:2]]
    ours = HFCausalLM(f"{folder}@fp32").chat_many(chats, GenParams(max_tokens=new, temperature=0.0))
    assert [g["doc"]["id"] for g in generated] == [e.id for e in entries[:2]]
    assert [g["filtered_resps"][0].strip() for g in generated] == [o.text for o in ours]
