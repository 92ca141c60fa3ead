"""KaLMA inside Inspect: a real Inspect eval of `kalma/kalma_specific` (found through the package's
entry point) against a local OpenAI-compatible server, on the demo dataset, two epochs. Its figures
are `kalma evaluate`'s on the same answers, its clustered standard errors those of the formula,
its log is an answers file like any other, and lm-evaluation-harness's task asks the same prompts
and scores the same answers the same way."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from baselines.prompt import template_answer
from kalma.cli import main
from tests.servers import answering, scripted_server
from tests.terminal import sigint_default

if importlib.util.find_spec("inspect_ai") is None:
    pytest.skip("KaLMA in Inspect needs inspect-ai (pip install -e '.[inspect]')", allow_module_level=True)


def read_eval_log(*args: Any, **kwargs: Any) -> Any:
    """Inspect's reader, imported when a test reads a log: importing Inspect at collection cost each worker 3 s."""
    from inspect_ai.log import read_eval_log as read

    return read(*args, **kwargs)


INSPECT = str(Path(sys.executable).with_name("inspect"))
MODEL = "openai-api/local/m"


def varied(prompt: str, seen: Counter[str]) -> str:
    """The template's answer, cut and spoiled differently at each asking of one prompt: answers
    whose citations are partly wrong, of different lengths, one citing nothing at all, so that a
    pooled figure is not the mean of per-answer ones and an entry's two epochs differ."""
    seen[prompt] += 1
    k = len(prompt) + seen[prompt]
    if k % 5 == 0:
        return "I cannot say."
    sentences = re.split(r"(?<=\]\.)\s+", template_answer(prompt))
    kept = sentences[: 1 + k % 4] + [x for x in sentences[1 + k % 4 :] if x.endswith("[NA].")]
    return " ".join(kept) + (" It also won a prize [Q1, award received: Turing Award]." if k % 2 else "")


def demo_run(dataset: Path, log_dir: Path) -> None:
    """The whole demo (`dataset`, its file), two epochs, alignment and [NA] by the lexical stand-in,
    its log in `log_dir`: made once a session (`inspect_run` in tests/e2e/conftest.py), in this
    process (the command line's own runs are the tests below)."""
    from inspect_ai import eval

    seen: Counter[str] = Counter()
    with scripted_server([answering(lambda p: varied(p, seen))], models=[{"id": "m"}]) as (url, _), pytest.MonkeyPatch.context() as env:
        env.setenv("LOCAL_API_KEY", "unused")
        args = {"dataset": str(dataset), "nli": "lexical"}
        (done,) = eval("kalma/kalma_specific", task_args=args, epochs=2, model=MODEL, model_base_url=f"{url}/v1", log_dir=str(log_dir), display="none")
    assert done.status == "success", done.error


@pytest.fixture(scope="module")
def run(inspect_run: dict[str, Path]) -> Path:
    """The shared run's log."""
    return inspect_run["log"]


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def _evaluate(dataset: Path, answers: Path, out: Path, *more: str) -> dict:
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(answers), "--metrics", "citation,alignment,na", "--resamples", "50", "-o", str(out), *more])
    return json.loads((out / "summary.json").read_text())


def _inspect_figures(log: Path) -> dict[str, float]:
    (score,) = read_eval_log(str(log), header_only=True).results.scores
    return {k: m.value for k, m in score.metrics.items()}


def _same_figures(log: Path, dataset: Path, out: Path) -> tuple[dict, int]:
    """`kalma evaluate`'s summary of the log, each figure equal to Inspect's (and n/a where Inspect
    has none); with how many figures had a value."""
    figures = _inspect_figures(log)
    summary = _evaluate(dataset, log, out, "--nli", "lexical")
    compared = 0
    for metric, values in summary["metrics"].items():
        for key, value in values.items():
            name = f"{metric}.{key}"
            if value is None:
                assert name not in figures, name
            else:
                assert figures[name] == pytest.approx(value, abs=1e-9), name
                compared += 1
    return summary, compared


def test_inspects_figures_are_kalma_evaluates(run, dataset, tmp_path):
    figures = _inspect_figures(run)
    summary, compared = _same_figures(run, dataset, tmp_path / "e")
    assert compared == 13 and summary["counts"]["answers"] == 12  # 6 entries x 2 epochs; [NA] recall is n/a: nothing was removed
    # the micro figures are the ratios of the counts summed over all twelve answers, not a mean of ratios
    rows = [json.loads(x) for x in (tmp_path / "e" / "scores.jsonl").read_text().splitlines()[1:]]
    counts = [r["counts"]["citation"] for r in rows]
    pooled = sum(c["correct"] for c in counts) / sum(c["citations"] for c in counts)
    means = np.mean([c["correct"] / c["citations"] for c in counts if c["citations"]])
    assert figures["citation.correctness_micro"] == pytest.approx(pooled, abs=1e-12) and abs(pooled - means) > 0.01
    recall = sum(c["recalled"] for c in counts) / sum(c["minimum"] for c in counts)
    assert figures["citation.recall_micro"] == pytest.approx(recall, abs=1e-12)
    # what the log says it did and left undone, and the lexical stand-in named as such
    said = read_eval_log(str(run), header_only=True).eval.metadata["kalma"]
    assert said["metrics"] == ["citation", "alignment", "na"] and "geval" in said["left_to_kalma_evaluate"]
    assert any("APPROXIMATION" in c for c in said["caveats"])


def _clustered(infl: np.ndarray, clusters: list[str]) -> float:
    """The clustered standard error of an estimate from each answer's influence on it: Inspect's
    finite-cluster correction C/(C-1) over the squared sums of the influences within each cluster."""
    sums = [infl[[i for i, c in enumerate(clusters) if c == k]].sum() for k in dict.fromkeys(clusters)]
    n = len(sums)
    return math.sqrt(n / (n - 1) * sum(s * s for s in sums))


def test_the_clustered_stderr_is_the_formulas(run, dataset, tmp_path):
    """Inspect's stderr of each figure against the clustered standard error written out here: of
    a ratio of sums Y/X, the influence of answer i is (y_i - R x_i) / X; of a mean, the same with
    x_i = 1 for the answers that have a value; of F1, found by numerical differentiation."""
    figures = _inspect_figures(run)
    _evaluate(dataset, run, tmp_path / "e")
    rows = [json.loads(x) for x in (tmp_path / "e" / "scores.jsonl").read_text().splitlines()[1:]]
    clusters = [r["entry_id"] for r in rows]
    assert len(set(clusters)) == 6 and len(rows) == 12
    c = {k: np.array([r["counts"]["citation"].get(k, 0) for r in rows], float) for k in ("correct", "citations", "precise", "recalled", "minimum")}

    def ratio_se(y, x):
        r = y.sum() / x.sum()
        return _clustered((y - r * x) / x.sum(), clusters)

    assert figures["citation.correctness_micro_stderr"] == pytest.approx(ratio_se(c["correct"], c["citations"]), abs=1e-9)
    assert figures["citation.recall_micro_stderr"] == pytest.approx(ratio_se(c["recalled"], c["minimum"]), abs=1e-9)
    has = np.array([r["values"]["citation"].get("correctness") is not None for r in rows], float)
    values = np.array([r["values"]["citation"].get("correctness") or 0.0 for r in rows])
    assert 0 < has.sum() < len(rows)  # an answer citing nothing drops out of the macro mean
    assert figures["citation.correctness_macro_stderr"] == pytest.approx(ratio_se(values, has), abs=1e-9)

    def f1(w):
        p, r = (w @ c["precise"]) / (w @ c["citations"]), (w @ c["recalled"]) / (w @ c["minimum"])
        return 2 * p * r / (p + r)

    h, ones = 1e-6, np.ones(len(rows))
    infl = np.array([(f1(ones + h * e) - f1(ones - h * e)) / (2 * h) for e in np.eye(len(rows))])
    assert figures["citation.f1_micro_stderr"] == pytest.approx(_clustered(infl, clusters), abs=1e-7)
    # clustering by entry matters here: the same influences taken one answer at a time give another error
    unclustered = _clustered((c["correct"] - c["correct"].sum() / c["citations"].sum() * c["citations"]) / c["citations"].sum(), [str(i) for i in range(12)])
    assert abs(unclustered - figures["citation.correctness_micro_stderr"]) > 1e-3


def test_the_log_scores_as_the_same_answers_in_json_lines(run, dataset, tmp_path):
    from inspect_ai.log import write_eval_log

    from kalma.jsonl import write_jsonl
    from kalma.schema import Answer

    log = read_eval_log(str(run))
    answers = [
        Answer(entry_id=s.metadata["entry_id"], text=s.output.completion, run=f"epoch{s.epoch}", kg=s.metadata["kg"], absent=s.metadata["absent"])
        for s in log.samples
    ]
    write_jsonl(tmp_path / "a.jsonl", answers, "answers")
    write_eval_log(log, str(tmp_path / "log.json"))  # the same log in Inspect's JSON format
    from_log = _evaluate(dataset, run, tmp_path / "log")
    assert _evaluate(dataset, tmp_path / "log.json", tmp_path / "json-log")["metrics"] == from_log["metrics"]
    from_jsonl = _evaluate(dataset, tmp_path / "a.jsonl", tmp_path / "jsonl", "--model", f"inspect:{MODEL}")
    assert from_log["metrics"] == from_jsonl["metrics"] and from_log["intervals"] == from_jsonl["intervals"]
    assert from_log["models"]["answers"] == f"inspect:{MODEL}"
    made = from_log["provenance"]["config"]["answers_made_by"]["inspect"]
    assert made["task"] == "kalma/kalma_specific" and made["epochs"] == 2 and made["generation"]["max_tokens"] == 256
    assert made["task_args"]["nli"] == "lexical"


def test_inspect_score_rescores_the_log_to_the_same_figures(run, tmp_path):
    """`inspect score` re-imports the task from the log and scores every sample again, without
    generating: the figures, their errors and every sample's row are the run's own."""
    env = {**os.environ, "LOCAL_API_KEY": "unused"}  # Inspect initialises the log's model even though it asks nothing
    out = tmp_path / "rescored.eval"
    command = [INSPECT, "score", str(run), "--output-file", str(out), "--action", "overwrite", "--display", "plain"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    again, first = _inspect_figures(out), _inspect_figures(run)
    assert again == pytest.approx(first, rel=1e-12) and len(first) > 20  # the errors' sums run in another order
    rows = {(s.id, s.epoch): s.scores["kalma_scorer"].metadata["row"] for s in read_eval_log(str(out)).samples}
    assert rows == {(s.id, s.epoch): s.scores["kalma_scorer"].metadata["row"] for s in read_eval_log(str(run)).samples}


def test_a_log_folder_reads_its_newest_kalma_run(run, other_log, dataset, tmp_path):
    import shutil

    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(run, folder / run.name)
    shutil.copy(other_log, folder / "other.eval")
    res = CliRunner().invoke(main, ["evaluate", "--dataset", str(dataset), "--answers", str(folder), "--metrics", "citation", "-o", str(tmp_path / "e")])
    assert res.exit_code == 0, res.output
    assert f"reading {folder / run.name} (the only KaLMA log in {folder}" in res.stderr and "1 log of other tasks left aside" in res.stderr


@pytest.fixture(scope="module")
def other_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished log of a task that is not KaLMA's."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    with scripted_server([answering(lambda p: "4")], models=[{"id": "m"}]) as (url, _), pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("LOCAL_API_KEY", "unused")
        (log,) = eval(
            Task(dataset=[Sample(input="2+2?", target="4")], scorer=match(), name="arithmetic"),
            model=MODEL,
            model_base_url=f"{url}/v1",
            log_dir=str(tmp_path_factory.mktemp("other")),
            display="none",
        )
    return Path(log.location)


def _refused(dataset: Path, answers: Path, out: Path) -> str:
    res = CliRunner().invoke(main, ["evaluate", "--dataset", str(dataset), "--answers", str(answers), "--metrics", "citation", "-o", str(out)])
    assert res.exit_code == 1 and "Traceback" not in res.stderr and not out.exists(), res.output
    (line,) = res.stderr.strip().splitlines()
    return line


def test_another_tasks_log_is_refused_in_one_line(other_log, dataset, tmp_path):
    line = _refused(dataset, other_log, tmp_path / "e")
    assert "an Inspect log of the task 'arithmetic', not of a KaLMA task" in line


def test_an_unfinished_log_and_one_with_failed_samples_are_refused(run, dataset, tmp_path):
    """Rewritten copies of the real log: its header saying the run was cancelled, and one sample
    with the error Inspect records when a model call fails."""
    from inspect_ai.log import EvalError, write_eval_log

    log = read_eval_log(str(run))
    log.status = "cancelled"
    write_eval_log(log, str(tmp_path / "cancelled.eval"))
    line = _refused(dataset, tmp_path / "cancelled.eval", tmp_path / "e1")
    assert "an unfinished Inspect log (status 'cancelled')" in line and "inspect eval-retry" in line

    log = read_eval_log(str(run))
    log.samples[3].error = EvalError(message="APIStatusError: the server said 500", traceback="", traceback_ansi="")
    write_eval_log(log, str(tmp_path / "failed.eval"))
    line = _refused(dataset, tmp_path / "failed.eval", tmp_path / "e2")
    assert f"1 of 12 samples ended in an error (first: {log.samples[3].id}, epoch {log.samples[3].epoch}: APIStatusError: the server said 500)" in line


def test_the_harness_and_inspect_ask_the_same_prompts_and_score_alike(run):
    """lm-evaluation-harness's KaLMA task and Inspect's: the same two messages for every entry,
    and the same citation figures on the same answers (the harness's hooks, document by document)."""
    from dataset_builder.demo import demo_entries
    from evaluation.harness import MICRO, aggregate, documents, process_results
    from kalma.kg import open_source

    log = read_eval_log(str(run))
    docs = {d["id"]: d for d in documents(demo_entries(open_source("demo")), "specific")}
    for s in log.samples:
        system, user = s.input
        assert (system.role, system.text, user.role, user.text) == ("system", docs[s.id]["system"], "user", docs[s.id]["user"])
    per_doc = [process_results(docs[s.id], [s.output.completion]) for s in log.samples]
    figures = _inspect_figures(run)
    for key in MICRO:
        assert aggregate(key, [d[key] for d in per_doc]) == pytest.approx(figures[f"citation.{key}"], abs=1e-9), key


def test_bench_submit_takes_a_log(run, dataset, tmp_path):
    out = _ok(["bench", "submit", str(run), "--dataset", str(dataset), "--leaderboard", str(tmp_path / "b"), "--name", "inspect-run", "--metrics", "citation"])
    assert "filed 'inspect-run'" in out
    filed = json.loads((tmp_path / "b" / "submissions" / "inspect-run" / "submission.json").read_text())
    assert filed["submission"]["model"] == f"inspect:{MODEL}" and filed["answers_scored"] == 12
    assert (tmp_path / "b" / "submissions" / "inspect-run" / "answers.eval").read_bytes() == run.read_bytes()


def test_task_parameters_and_limit(dataset, tmp_path, monkeypatch):
    """`-T removed=1` takes one minimum-set triple out of what each entry is given (the
    knowledge-removal experiment's own draw), `--limit` asks the first entries only, and a model
    metric without its model is refused before any sample runs."""
    from inspect_ai import eval

    from dataset_builder.demo import demo_entries
    from kalma.kg import open_source
    from kalma.removal import remove_knowledge
    from kalma.schema import KnowledgeGraph
    from kalma.verbalize import kg_to_text

    monkeypatch.setenv("LOCAL_API_KEY", "unused")
    with scripted_server([answering(template_answer)], models=[{"id": "m"}]) as (url, _):  # in this process: one Inspect start is enough
        args = {"removed": 1, "seed": 3, "nli": "lexical"}
        (done,) = eval("kalma/kalma_general", task_args=args, limit=2, model=MODEL, model_base_url=f"{url}/v1", log_dir=str(tmp_path / "logs"), display="none")
    assert done.status == "success"
    # refused as Inspect's command line says a missing prerequisite: its one line, no traceback
    from inspect_ai._util.error import PrerequisiteError

    from bench.inspect_registry import kalma_specific

    with pytest.raises(PrerequisiteError) as refused:
        kalma_specific(metrics="citation,alignment")
    assert str(refused.value.message).startswith("-T metrics: alignment needs an entailment model: -T nli=SPEC")
    (log,) = (tmp_path / "logs").glob("*.eval")
    samples = read_eval_log(str(log)).samples
    entries = demo_entries(open_source("demo"))
    expected = remove_knowledge(entries, 1, 3)
    assert [s.id for s in samples] == [e.id for e in entries if e.general_question][:2]
    pools = {e.id: e.knowledge_pool for e in entries}
    for s in samples:
        given = KnowledgeGraph.model_validate(s.metadata["kg"])
        assert given == expected[s.id].kg and len(s.metadata["absent"]) == 1
        asked = s.input[1].text.split("Now your turn.")[1]
        assert kg_to_text(given) in asked and kg_to_text(pools[s.id]) not in asked
    summary, compared = _same_figures(log, dataset, tmp_path / "e")  # [NA] recall now has something to recall
    assert compared == 17 and summary["coverage"]["scored"] == 2


def test_which_metrics_the_task_scores():
    """Citation quality by default; alignment and [NA] with an entailment model, G-Eval with a
    judge; a metric named without its model refused; the rest named as left to kalma evaluate."""
    from bench.inspect_task import chosen_metrics
    from evaluation.base import EvalOptions
    from kalma.errors import ConfigError

    none = {"nli": None, "judge": None, "lm": None}
    assert chosen_metrics(None, EvalOptions(), none) == (["citation"], ["alignment", "na", "geval"])
    assert chosen_metrics(None, EvalOptions(), {**none, "nli": "lexical", "judge": "smollm2"}) == (["citation", "alignment", "na", "geval"], [])
    assert chosen_metrics("na", EvalOptions(), {**none, "nli": "lexical"}) == (["na"], ["citation", "alignment", "geval"])
    with pytest.raises(ConfigError, match="geval needs a judge"):
        chosen_metrics("citation,geval", EvalOptions(), none)
    with pytest.raises(ConfigError, match="unknown metric|no metric"):
        chosen_metrics("citaton", EvalOptions(), none)


@pytest.mark.slow
def test_the_retrieval_parameter_gives_the_baselines_retrieval():
    """`-T retrieval=ner`: each sample is given what `kalma answer --retrieval ner` retrieves (spaCy)."""
    from baselines.pipeline import BaselineConfig, run_retrieval
    from bench.inspect_task import kalma_task
    from dataset_builder.demo import demo_entries
    from kalma.kg import open_source
    from kalma.schema import KnowledgeGraph

    samples = list(kalma_task(retrieval="ner").dataset)
    entries = demo_entries(open_source("demo"))
    retrieved = run_retrieval(entries, BaselineConfig(kg="demo", setting="specific"))
    assert [s.id for s in samples] == [e.id for e in entries]
    assert [KnowledgeGraph.model_validate(s.metadata["kg"]) for s in samples] == [r.kg for r in retrieved]
    assert all("mentions" in s.metadata["retrieval"] for s in samples)
    with pytest.raises(Exception, match="knowledge removal takes triples out of the gold pools"):
        kalma_task(retrieval="ner", removed=1)


# ---------------------------------------------------------------- the suite's backends as Inspect's model provider

OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}  # any download fails at once


def _offline_eval(args: list[str], folder: Path) -> tuple[list[str], dict[str, str]]:
    """`inspect eval ARGS` as a user without a network types it, in a fresh folder (no tiktoken table cached)."""
    env = {**os.environ, **OFFLINE, "TIKTOKEN_CACHE_DIR": str(folder / "tiktoken"), "INSPECT_LOG_DIR": str(folder / "logs")}
    return [INSPECT, "eval", *args, "--display", "plain"], env


def test_inspect_runs_the_suites_template_offline_and_kalma_evaluate_reads_its_log(dataset, tmp_path):
    """The first command of docs/inspect.md, with no network and no server: `--model kalma/template`
    answers through the suite's backend, and the log is an answers file."""
    command, env = _offline_eval(["kalma/kalma_specific", "--model", "kalma/template", "--limit", "3"], tmp_path)
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (log,) = (tmp_path / "logs").glob("*.eval")
    read = read_eval_log(str(log))
    assert read.status == "success" and read.eval.model == "kalma/template" and len(read.samples) == 3
    for s in read.samples:  # each answer is the template's, and says so
        assert s.output.completion == template_answer(s.input[1].text)
        said = s.output.choices[0].message.metadata or s.output.metadata
        assert said["kalma"]["backend"] == "template" and "not a language model" in said["kalma"]["note"]
    out = tmp_path / "e"
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(log), "--metrics", "citation", "--resamples", "0", "-o", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["answers"] == 3 and summary["models"]["answers"] == "inspect:kalma/template"
    figures = _inspect_figures(log)
    assert all(figures[f"citation.{k}"] == pytest.approx(v, abs=1e-9) for k, v in summary["metrics"]["citation"].items() if v is not None)


def test_a_missing_dataset_is_one_line(tmp_path):
    """A user's mistake in a task parameter: one line, never Inspect's double traceback."""
    command, env = _offline_eval(["kalma/kalma_specific", "-T", "dataset=MISSING", "--model", "kalma/template"], tmp_path)
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    assert done.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"-T dataset=MISSING: no such file ({tmp_path / 'MISSING'})"), lines[:20]


def test_an_unknown_kalma_model_is_refused_as_a_prerequisite():
    """Said as Inspect's command line says a missing prerequisite (its one line, no traceback)."""
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai.model import get_model

    import bench.inspect_registry  # noqa: F401 - the entry point Inspect loads: it names the provider

    with pytest.raises(PrerequisiteError) as refused:
        get_model("kalma/hf:/nowhere/model", memoize=False)
    assert str(refused.value.message).startswith("--model kalma/hf:/nowhere/model: cannot load the model")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from perf.random_models import build_causal

    return build_causal(tmp_path_factory.mktemp("lm"), positions=4096)  # the demo's prompts and a long reply fit


def test_kalma_models_batch_across_samples_and_use_the_call_cache(tiny_lm, tmp_path, caplog):
    """`--model kalma/hf:PATH -M dtype=fp32`: the samples that ask together are one batch of the
    backend's, and a second run is served by the call cache (every answer says so)."""
    import logging

    from inspect_ai import eval

    caplog.set_level(logging.INFO, logger="kalma.inspect_model")
    runs = []
    for n in (1, 2):
        caplog.clear()
        model, args = f"kalma/hf:{tiny_lm}", {"dtype": "fp32"}
        (done,) = eval("kalma/kalma_specific", model=model, model_args=args, max_tokens=4, log_dir=str(tmp_path / str(n)), display="none")
        assert done.status == "success", done.error
        runs.append(read_eval_log(done.location))
        batches = [int(m.split("batch of ")[1].split()[0]) for m in caplog.messages if "answering a batch" in m]
        assert sum(batches) == 6 and len(batches) < 6, batches  # the six samples, not one call each
    first, second = ([s.output.metadata["kalma"] for s in r.samples] for r in runs)
    assert not any(m["cached"] for m in first) and all(m["cached"] for m in second)
    assert first[0]["backend"].startswith(f"hf:{tiny_lm},dtype=fp32 ") and "fp32" in first[0]["backend"].split(" ", 1)[1]
    assert [s.output.completion for s in runs[0].samples] == [s.output.completion for s in runs[1].samples]


@pytest.fixture(scope="module")
def long_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model with room for a reply long enough that decoding it whole takes minutes: a run
    that waited for the batch instead of stopping it would end far outside the test's bound."""
    from perf.random_models import build_causal

    return build_causal(tmp_path_factory.mktemp("long-lm"), positions=16384)


def test_ctrl_c_stops_a_kalma_model_mid_batch(long_lm, tmp_path):
    """Ctrl-C once the local model's batch has begun (its thread still loading the model here, as a
    run sampled showed; a stop inside a decoding step is `tests/unit/test_decoding_stop.py`'s): the
    model is stopped in its thread and the run ends, its log cancelled, never "terminate called
    without an active exception"."""
    import signal
    import time

    command, env = _offline_eval(["kalma/kalma_specific", "--model", f"kalma/hf:{long_lm}", "--max-tokens", "14000", "--log-level", "info"], tmp_path)
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path, preexec_fn=sigint_default)
    assert run.stdout is not None
    seen = []
    for line in run.stdout:  # the batch has begun: the model loads, then decodes
        seen.append(line)
        if "answering a batch of" in line:
            break
    run.send_signal(signal.SIGINT)
    began = time.monotonic()
    try:
        rest = run.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        run.kill()
        pytest.fail("still running 60 s after Ctrl-C:\n" + "".join(seen)[-2000:] + run.communicate()[0][-3000:])
    took = time.monotonic() - began
    assert "terminate called" not in rest and run.returncode >= 0 and "Traceback" not in rest, "".join(seen)[-2000:] + rest[-3000:]
    (log,) = (tmp_path / "logs").glob("*.eval")
    assert read_eval_log(str(log), header_only=True).status == "cancelled" and took < 30, took
