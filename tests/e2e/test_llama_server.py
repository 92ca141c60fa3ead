"""The `openai-compatible:` path against a real server nobody here wrote: llama.cpp's
(llama-cpp-python), serving the SmolLM2 GGUF, driven through the CLI as a user types it.

Skipped with a one-line reason where llama-cpp-python[server] is not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from kalma.cli import main
from kalma.jsonl import read_header, read_jsonl
from kalma.kg import open_source
from kalma.schema import Answer
from tests.llama_server import llama_server, needs_llama, perturbed_copy, smollm2_gguf
from tests.servers import free_port

pytestmark = [needs_llama, pytest.mark.slow, pytest.mark.llama]


def _kalma(args: list[str]) -> dict:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout) if res.stdout.lstrip().startswith("{") else {"out": res.stdout}


def _answer(dataset, spec: str, out, limit: int = 2) -> dict:
    return _kalma(
        ["answer", "--dataset", str(dataset), "--llm", spec, "--retrieval", "gold", "--temperatures", "0"]
        + ["--max-tokens", "24", "--limit", str(limit), "-o", str(out)]
    )


def test_answer_evaluate_with_its_judge_and_the_cache_across_a_restart_with_other_weights(tmp_path, dataset):
    other = perturbed_copy(smollm2_gguf(), tmp_path / "other.gguf")
    with llama_server(smollm2_gguf()) as (base, _):
        # /models names only the alias: without the user's word nothing is cached, and the answers file says so
        plain = f"openai-compatible:{base}:smollm2,concurrency=1"
        report = _answer(dataset, plain, tmp_path / "plain.jsonl")
        assert report["written"] == 2 and report["from_cache"] == 0
        assert "not cached: /models gives no root" in read_header(tmp_path / "plain.jsonl")["provenance"]["llm_cache"]
        first = [a.text for a in read_jsonl(tmp_path / "plain.jsonl", Answer)]
        assert all(first)

        # with an identity: the second run is answered from the cache
        a = f"{plain},identity=smollm2-q4_1"
        assert _answer(dataset, a, tmp_path / "a1.jsonl")["from_cache"] == 0
        assert _answer(dataset, a, tmp_path / "a2.jsonl")["from_cache"] == 2

        # G-Eval judged by the server, its log-probabilities read; entailment by it too
        _kalma(
            ["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a1.jsonl"), "--judge", a, "--nli", f"llm:{a}"]
            + ["--metrics", "citation,alignment,geval", "--limit", "2", "-o", str(tmp_path / "ev")]
        )
        summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
        assert summary["models"]["geval"] == a and summary["models"]["alignment"].startswith("llm:openai-compatible:")
        ratings = sum(summary["metrics"]["geval"][f"{k}_invalid"] for k in ("coherence", "consistency", "fluency", "relevance"))
        if ratings:  # every unreadable rating is counted and said first, never a silent n/a
            assert summary["failures"]["geval"]["unusable"] == ratings and any(c.startswith("G-Eval: ") for c in summary["caveats"])

    # restarted under the same URL and name with other weights: never served the first one's answers
    with llama_server(other) as (base2, _):
        b = f"openai-compatible:{base2}:smollm2,concurrency=1,identity=smollm2-perturbed"
        assert _answer(dataset, b, tmp_path / "b.jsonl")["from_cache"] == 0
        assert _answer(dataset, f"openai-compatible:{base2}:smollm2,concurrency=1", tmp_path / "b-plain.jsonl")["from_cache"] == 0
        second = [a.text for a in read_jsonl(tmp_path / "b-plain.jsonl", Answer)]
    assert second != first  # other weights, other answers: none came from the first server's cache


def test_a_server_killed_mid_run_keeps_every_answer_that_came_back_and_the_rerun_asks_for_the_rest(tmp_path, dataset):
    port = free_port()
    spec = f"openai-compatible:http://127.0.0.1:{port}/v1:smollm2,concurrency=1"
    out = tmp_path / "answers.jsonl"
    cmd = [sys.executable, "-m", "kalma.cli", "answer", "--dataset", str(dataset), "--llm", spec, "--retrieval", "gold"]
    cmd += ["--temperatures", "0", "--max-tokens", "48", "-o", str(out)]
    env = {**os.environ, "KALMA_CACHE": "off"}
    with llama_server(smollm2_gguf(), port=port) as (_, server):
        run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 2):  # header + one answer
            time.sleep(0.2)
        server.kill()
        stdout, stderr = run.communicate(timeout=120)
    kept = list(read_jsonl(out, Answer))
    assert run.returncode == 1 and 1 <= len(kept) < 6, stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("kalma:")]
    assert len(lines) == 1 and f"nothing answers at http://127.0.0.1:{port}/v1" in lines[0]
    assert f"{len(kept)} of 6 answers were written" in lines[0] and "run the same command again to resume" in lines[0]

    with llama_server(smollm2_gguf(), port=port):
        rerun = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    report = json.loads(rerun.stdout)
    assert rerun.returncode == 0 and report["skipped_existing"] == len(kept) and report["written"] == 6 - len(kept)
    assert sorted(a.entry_id for a in read_jsonl(out, Answer)) == sorted(e.id for e in demo_entries(open_source("demo")))


def test_bench_run_and_build_through_the_server(tmp_path):
    from importlib import resources

    with llama_server(smollm2_gguf()) as (base, _):
        spec = f"openai-compatible:{base}:smollm2,concurrency=1"
        cfg = tmp_path / "bench.toml"
        cfg.write_text(f'llms = ["{spec}"]\nmax_tokens = 24\nmetrics = ["citation"]\n[experiments.main]\n')
        _kalma(["bench", "run", str(cfg), "--limit", "2", "-o", str(tmp_path / "run")])
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        assert results["results"][0]["llm"] == spec and results["results"][0]["answers"] == 2

        records = resources.files("dataset_builder") / "data" / "demo_records.jsonl"
        first = tmp_path / "records.jsonl"
        first.write_text("".join(str(records.read_text()).splitlines(keepends=True)[:2]))
        res = CliRunner().invoke(
            main, ["build", "--records", str(first), "--kg", "demo", "--llm", spec, "--lm", "smollm2", "--rounds", "1", "-o", str(tmp_path / "built.jsonl")]
        )
        assert res.exit_code in (0, 1), res.output  # SmolLM2 may fail to write usable questions: then every failure is counted
    trace = [json.loads(ln) for ln in (tmp_path / "built.trace.jsonl").read_text().splitlines()[1:]]
    assert trace and all(t["backend"] == spec for t in trace if "backend" in t)
