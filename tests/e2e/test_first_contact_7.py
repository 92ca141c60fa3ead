"""First contact, seventh pass (issue 54), through the CLI as a user runs it: a dataset answered
from the graph it was built from, lm-evaluation-harness's output folder read as it is written
(its newest run, its `--limit`, its model, files of other kinds named), a build that keeps what it
did when stopped, a nested bracket counted once, model options checked, formula-safe tables, and
names and help that say one thing each."""

from __future__ import annotations

import csv
import html
import json
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from kalma.cli import main
from kalma.frames import VERDICT_COLUMNS
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.models.template import TemplateLLM
from kalma.schema import Answer
from perf.random_models import build_causal
from tests.conftest import ROOT
from tests.e2e.conftest import LM_EVAL, made_once
from tests.e2e.test_builder_publishable import KG_TTL, RECORDS
from tests.servers import answering, free_port, scripted_server


def _run(args: list[str]) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, args)
    return res.exit_code, res.stdout, res.stderr


def _ok(args: list[str]) -> tuple[str, str]:
    code, out, err = _run(args)
    assert code == 0, out + err
    return out, err


def _fails(args: list[str], *said: str) -> str:
    """A user's mistake: one line on stderr (after any note), a non-zero exit, no traceback."""
    code, out, err = _run(args)
    *notes, last = [ln for ln in err.splitlines() if ln.strip()] or [""]
    assert code != 0 and "Traceback" not in err and last.startswith("kalma: ") and all(n.startswith("note: ") for n in notes), out + err
    for s in said:
        assert s in err, err
    return err


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> str:
    return "hf:" + str(build_causal(tmp_path_factory.mktemp("lm")))


@pytest.fixture(scope="module")
def botanists(tmp_path_factory, tiny_lm) -> Path:
    """A dataset `kalma build` made from a Turtle graph of its own people, none of them in the demo graph."""
    work = tmp_path_factory.mktemp("botanists")
    (work / "kg.ttl").write_text(KG_TTL)
    (work / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    _ok(["build", "--records", str(work / "records.jsonl"), "--kg", str(work / "kg.ttl"), "--lm", tiny_lm, "-o", str(work / "ds.jsonl")])
    return work


# ---------------------------------------------------------------- 1: the dataset's own graph


def test_answer_and_retrieve_use_the_graph_the_dataset_was_built_from(botanists, tmp_path):
    ds, kg = str(botanists / "ds.jsonl"), str(botanists / "kg.ttl")
    out, _ = _ok(["answer", "--dataset", ds, "-o", str(tmp_path / "a.jsonl")])
    assert json.loads(out)["recall"] == 1.0  # the demo graph knows neither botanist: recall 0
    (answer,) = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()[1:]]
    assert answer["settings"]["kg_source"] == kg
    out, _ = _ok(["retrieve", "--dataset", ds])
    assert json.loads(out)["recall"] == 1.0
    out, err = _ok(["retrieve", "--dataset", ds, "--kg", "demo"])
    assert json.loads(out)["recall"] == 0.0  # asked for, and said
    assert err.strip().splitlines()[-1] == f"note: retrieved from 'demo'; {ds} was built from {kg!r}, whose people and minimum sets it holds"


# ---------------------------------------------------------------- 2-5: lm-evaluation-harness, as it writes


EARLIER = "2020-01-01T00-00-00.000000"  # the stamp of a run before the real one


@pytest.fixture(scope="module")
def harness(tmp_path_factory, worker_id) -> dict[str, Path]:
    """A real `lm_eval` run (its `local-chat-completions` API backend, against a local server that
    answers as the template backend does) of both KaLMA tasks with `--limit 3`, on the demo dataset
    whose second entry has no general question; and an earlier run beside it, as a second
    `lm_eval` into one output folder leaves it."""
    pytest.importorskip("lm_eval")
    with made_once("fc7-harness", tmp_path_factory, worker_id) as (work, make):
        if make:
            work.mkdir(exist_ok=True)
            entries = demo_entries(open_source("demo"))
            entries[1] = entries[1].model_copy(update={"general_question": ""})
            write_jsonl(work / "dataset.jsonl", entries, "dataset")
            tasks = _ok(["harness", "tasks"])[0].strip()
            with scripted_server([answering(TemplateLLM().respond)], models=[{"id": "m", "root": "m"}]) as (url, _):
                command = [*LM_EVAL, "--model", "local-chat-completions"]
                command += ["--model_args", f"model=m,base_url={url}/v1/chat/completions,tokenized_requests=False"]
                command += ["--tasks", "kalma", "--include_path", tasks, "--metadata", json.dumps({"dataset": str(work / "dataset.jsonl")})]
                command += ["--limit", "3", "--gen_kwargs", "max_gen_toks=200", "--apply_chat_template", "--log_samples", "--output_path", str(work / "out")]
                # lm_eval's own start, a few seconds of imports; the server answers at once
                done = subprocess.run(command, capture_output=True, text=True, cwd=work)
            assert done.returncode == 0, done.stderr[-3000:]
            (results,) = (work / "out").glob("*/results_*.json")
            stamp = results.stem.removeprefix("results_")
            for f in results.parent.glob(f"*_{stamp}.json*"):
                text = f.read_text().replace("[Q", "[NA] [Q") if f.name.startswith("samples_") else f.read_text()
                f.with_name(f.name.replace(stamp, EARLIER)).write_text(text)
    (results,) = [p for p in (work / "out").glob("*/results_*.json") if EARLIER not in p.name]
    stamp = results.stem.removeprefix("results_")
    return {
        "dataset": work / "dataset.jsonl",
        "out": work / "out",
        "results": results,
        "specific": results.with_name(f"samples_kalma_specific_{stamp}.jsonl"),
        "general": results.with_name(f"samples_kalma_general_{stamp}.jsonl"),
    }


def test_the_harness_extra_runs_the_api_backends(harness):
    """The fixture's run is lm-eval's API backend; the extra that installs lm-eval asks for what it needs."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.replace(" ", "").startswith("lm-eval[api]") for r in extras["harness"]), extras["harness"]
    assert json.loads(harness["results"].read_text())["config"]["model"] == "local-chat-completions"


def test_harness_documents_are_the_entries_with_that_question(harness):
    counted = json.loads(harness["results"].read_text())["n-samples"]
    assert counted["kalma_specific"]["original"] == 6 and counted["kalma_general"]["original"] == 5  # the entry without one is not asked


def test_the_output_folder_is_read_as_its_newest_run_and_said(harness, tmp_path):
    out, err = _ok(["evaluate", "--dataset", str(harness["dataset"]), "--answers", str(harness["out"]), "--metrics", "citation", "-o", str(tmp_path / "e")])
    assert f"note: reading {harness['specific']} (the newest of 2 KaLMA runs in {harness['out']}" in err
    assert f"give {harness['general']} to score its general questions" in err
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["provenance"]["config"]["answers"] == str(harness["specific"])
    assert "[NA] [Q" not in (tmp_path / "e" / "scores.jsonl").read_text()  # the earlier run's answers have it
    assert any(harness["specific"].name in c for c in summary["caveats"])  # every report names the file
    # the README's pattern over two runs: one line that says so
    both = sorted(harness["out"].glob("*/samples_kalma_specific_*.jsonl"))
    _fails(["evaluate", "--dataset", str(harness["dataset"]), "--answers", *map(str, both), "-o", str(tmp_path / "x")], "a pattern gave it 2")


def test_a_limited_run_is_scored_on_what_it_asked_with_its_provenance(harness, tmp_path):
    out, _ = _ok(["evaluate", "--dataset", str(harness["dataset"]), "--answers", str(harness["general"]), "--metrics", "citation", "-o", str(tmp_path / "e")])
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    # of the 5 entries with a general question (the sixth was never asked: left out, not missing)
    assert summary["coverage"] == {"scored": 3, "entries": 5, "how": "partial"} and summary["counts"]["missing_answers_scored_empty"] == 0
    assert any("lm_eval --limit 3 asked 3 of its 5 documents" in c for c in summary["caveats"])
    scored = [json.loads(x)["entry_id"] for x in (tmp_path / "e" / "scores.jsonl").read_text().splitlines()[1:]]
    entries = demo_entries(open_source("demo"))
    assert scored == [entries[i].id for i in (0, 2, 3)]  # the first three that have a general question
    page = (tmp_path / "e" / "verdicts.html").read_text()
    assert html.escape(entries[0].general_question) in page and html.escape(entries[0].specific_question) not in page  # answers to the general questions
    run = summary["provenance"]["config"]["answers_made_by"]["lm_eval"]
    assert run["lm_eval_version"] and run["gen_kwargs"] == {"max_gen_toks": 200} and run["limit"] == 3
    assert summary["models"]["answers"] == "lm-eval:local-chat-completions:m"


def test_a_complete_general_run_leaves_out_the_entry_it_never_asked(harness, tmp_path):
    """The fixture's `kalma_general` run completed (every one of its 5 documents asked, as a run
    without --limit): the entry without a general question was never asked, so it is left out and
    said, not scored as an empty answer; and the run is complete, not taken for a limited one."""
    entries = demo_entries(open_source("demo"))
    results = json.loads(harness["results"].read_text())
    results["config"]["limit"] = None
    results["n-samples"]["kalma_general"] = {"original": 5, "effective": 5}
    (tmp_path / harness["results"].name).write_text(json.dumps(results))
    lines = [json.loads(x) for x in harness["general"].read_text().splitlines()]
    for i in (4, 5):  # the documents --limit 3 left out, as lm_eval writes them
        doc = {**lines[0]["doc"], "id": entries[i].id, "entry": entries[i].model_dump_json(), "question": entries[i].general_question}
        lines.append({**lines[0], "doc_id": len(lines), "doc": doc})
    samples = tmp_path / harness["general"].name
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out, err = _ok(["evaluate", "--dataset", str(harness["dataset"]), "--answers", str(samples), "--metrics", "citation", "-o", str(tmp_path / "e")])
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["counts"]["missing_answers_scored_empty"] == 0 and summary.get("coverage") is None and "MISSING" not in out + err
    said = f"general setting: 1 of 6 entries have no general question, so none was asked: left out ({entries[1].id})"
    assert said in summary["caveats"] and not any("asked" in c and "documents" in c for c in summary["caveats"])
    scored = [json.loads(x)["entry_id"] for x in (tmp_path / "e" / "scores.jsonl").read_text().splitlines()[1:]]
    assert sorted(scored) == sorted(entries[i].id for i in (0, 2, 3, 4, 5))


def test_kalma_answer_asks_no_empty_general_question(tmp_path):
    """`kalma answer --setting general` asks only the entries that have a general question, as the
    harness does, and `kalma evaluate` leaves the other out and says so."""
    entries = demo_entries(open_source("demo"))
    entries[1] = entries[1].model_copy(update={"general_question": ""})
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    _, err = _ok(["answer", "--dataset", str(tmp_path / "d.jsonl"), "--setting", "general", "--llm", "template", "-o", str(tmp_path / "a.jsonl")])
    assert f"note: 1 of 6 entries have no general question, so none is asked: {entries[1].id}" in err
    assert entries[1].id not in (tmp_path / "a.jsonl").read_text()
    args = ["--dataset", str(tmp_path / "d.jsonl"), "--answers", str(tmp_path / "a.jsonl"), "--metrics", "citation", "-o", str(tmp_path / "e")]
    out, err = _ok(["evaluate", *args])
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["counts"]["missing_answers_scored_empty"] == 0 and "MISSING" not in out + err
    assert f"general setting: 1 of 6 entries have no general question, so none was asked: left out ({entries[1].id})" in summary["caveats"]


def test_bench_submit_files_a_harness_run_under_the_model_its_results_file_names(harness, tmp_path):
    board = tmp_path / "board"
    out, _ = _ok(["bench", "submit", str(harness["out"]), "--dataset", str(harness["dataset"]), "--leaderboard", str(board), "--name", "m-harness"])
    filed = json.loads((board / "submissions" / "m-harness" / "submission.json").read_text())
    assert filed["submission"]["model"] == "lm-eval:local-chat-completions:m"
    assert filed["summary"]["coverage"] == {"scored": 3, "entries": 6, "how": "partial"} and "PARTIAL" in out


def test_a_duplicate_harness_sample_is_named_by_its_line(harness, tmp_path):
    samples = tmp_path / harness["specific"].name
    shutil.copy(harness["results"], tmp_path / harness["results"].name)
    lines = harness["specific"].read_text().splitlines()
    samples.write_text("\n".join([*lines, lines[0]]) + "\n")
    _ok(["evaluate", "--dataset", str(harness["dataset"]), "--answers", str(samples), "--metrics", "citation", "--lenient", "-o", str(tmp_path / "e")])
    notes = json.loads((tmp_path / "e" / "summary.json").read_text())["notes"]
    assert f"{samples}:4: duplicate answer 'demo-gentileschi' (first on line 1); this copy skipped" in notes


def test_files_of_other_kinds_are_named(harness, tmp_path, dataset):
    import pyarrow as pa
    import pyarrow.parquet as pq

    def refused(path: Path, *said: str) -> None:
        _fails(["evaluate", "--dataset", str(dataset), "--answers", str(path), "-o", str(tmp_path / "e")], str(path), *said)
        assert not (tmp_path / "e").exists()

    refused(harness["results"], "lm-evaluation-harness's results file holds figures, not answers", f"use the samples file beside it: {harness['general']}")
    pq.write_table(pa.table({"entry_id": ["demo-crane"], "text": ["x"]}), tmp_path / "a.parquet")
    refused(tmp_path / "a.parquet", "a Parquet file, not JSON Lines")
    (tmp_path / "ids.jsonl").write_text(json.dumps({"id": "demo-crane", "answer": "x"}) + "\n")
    refused(tmp_path / "ids.jsonl", "fields id, answer; an answer needs entry_id", "rename id -> entry_id, answer -> text")
    (tmp_path / "rag.jsonl").write_text(json.dumps({"question": "q", "answer": "x", "contexts": ["c"]}) + "\n")
    refused(tmp_path / "rag.jsonl", "fields question, answer, contexts; an answer needs entry_id", "rename answer -> text")
    other = tmp_path / "samples_gsm8k_2026-01-01T00-00-00.jsonl"
    sample = json.loads(harness["specific"].read_text().splitlines()[0])
    other.write_text(json.dumps({**sample, "doc": {"question": "1+1?", "answer": "2"}}) + "\n")
    refused(other, "samples of the lm-eval task 'gsm8k', not of a KaLMA task", "documents hold question, answer")
    # and `kalma check` says what a samples file is, as evaluate reads it
    out, _ = _ok(["check", str(harness["specific"]), "--kind", "answers"])
    assert "lm-evaluation-harness samples file" in out and "3 good records, 0 bad lines" in out


# ---------------------------------------------------------------- 7: a build stopped, and resumed


def test_a_stopped_build_says_what_it_keeps_leaves_no_lock_and_resumes(botanists, tiny_lm, tmp_path):
    """SIGTERM mid-window: exit 143, what is done and how to go on in one line, no lock file left;
    the same command then finishes, replaying from the call cache what the first run asked."""
    answer = answering(TemplateLLM().respond)

    def slowly(h, body: bytes) -> None:
        time.sleep(0.02)
        answer(h, body)

    with scripted_server([slowly], models=[{"id": "m", "root": "m"}]) as (url, log):
        command = [sys.executable, "-m", "kalma.cli", "build", "--records", str(botanists / "records.jsonl"), "--kg", str(botanists / "kg.ttl")]
        command += ["--llm", f"openai-compatible:{url}/v1:m,concurrency=1", "--lm", tiny_lm, "-o", str(tmp_path / "ds.jsonl")]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while len(log) < 3 and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        asked = [x["body"] for x in log]
        said = err.strip().splitlines()[-1]
        assert proc.returncode == 143, err
        assert said.startswith("kalma: terminated (SIGTERM): 0 of 1 entries are done") and said.endswith("run the same command again to resume"), said
        assert "replays from the call cache the model calls they made" in said
        assert "(no file is written yet)" in said and not (tmp_path / "ds.jsonl").exists()  # issue 59 §5.9: only files that exist are named
        assert not list(tmp_path.glob(".*.lock"))
        report, _ = _ok(command[3:])  # the same command, in this process
        again = [x["body"] for x in log[len(asked) :]]
    assert len(set(asked) & set(again)) <= 1  # at most the one request in flight when it stopped
    assert json.loads(report)["entries"]["written"] == 1


# ---------------------------------------------------------------- 8, §2: verdicts, and the tables they go to


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("scored")
    entries = demo_entries(open_source("demo"))
    write_jsonl(work / "d.jsonl", entries, "dataset")
    texts = {
        entries[0].id: "Her father was Orazio [Q212657, father: [Orazio Gentileschi]]. She was born in Rome [Q212657, place of birth: Rome].",
        entries[2].id: '=HYPERLINK("http://evil.example","click") was born [NA].',
    }
    write_jsonl(work / "a.jsonl", [Answer(entry_id=e.id, text=texts.get(e.id, "Nothing [NA]."), model="m") for e in entries], "answers")
    _ok(["evaluate", "--dataset", str(work / "d.jsonl"), "--answers", str(work / "a.jsonl"), "--metrics", "citation", "-o", str(work / "e")])
    return work


def test_a_nested_bracket_is_one_malformed_item(scored):
    summary = json.loads((scored / "e" / "summary.json").read_text())
    assert summary["malformed"] == {"nested": 1} and summary["counts"]["malformed"] == 1
    assert summary["counts"]["citations"] == 1  # the well-formed one after it


def test_verdict_tables_hold_no_formula_and_tsv_is_tab_separated(scored):
    for suffix, delimiter in ((".csv", ","), (".tsv", "\t")):
        table = scored / f"v{suffix}"
        _ok(["export", str(scored / "e" / "scores.jsonl"), "--verdicts", "-o", str(table)])
        with table.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh, delimiter=delimiter))
        assert rows[0] == list(VERDICT_COLUMNS)
        cells = [c for r in rows[1:] for c in r]
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")], suffix
        assert any(c.startswith("'=HYPERLINK(") for c in cells)  # kept, as text


# ---------------------------------------------------------------- 9, 11: options checked, a server asked first


def test_model_options_no_chosen_metric_uses_are_refused(dataset, tmp_path):
    args = ["evaluate", "--dataset", str(dataset), "--answers", str(dataset), "-o", str(tmp_path / "e")]
    _fails([*args, "--judge", "foo:bar"], "--judge", "no chosen metric uses it (citation, alignment, na)", "geval")
    _fails([*args, "--lm", "hf:no-such/model"], "--lm", "no chosen metric uses it", "consens")
    _fails([*args, "--metrics", "geval", "--judge", "foo:bar"], "unknown LLM backend 'foo'")
    assert not (tmp_path / "e").exists()


def test_a_submission_url_must_be_a_web_address(dataset, tmp_path):
    answers = tmp_path / "a.jsonl"
    write_jsonl(answers, [Answer(entry_id=e.id, text="x [NA].", model="m") for e in demo_entries(open_source("demo"))], "answers")
    args = ["bench", "submit", str(answers), "--dataset", str(dataset), "--leaderboard", str(tmp_path / "b"), "--name", "n", "--model", "m"]
    args += ["--metrics", "citation"]
    code, _, err = _run([*args, "--url", "javascript:alert(1)"])
    assert code == 1 and "--url: 'javascript:alert(1)' is not an http or https address" in err and not (tmp_path / "b" / "submissions" / "n").exists()
    code, _, err = _run([*args, "--url", "https:///m"])  # a scheme without a host is no address either
    assert code == 1 and "--url: 'https:///m' is not an http or https address" in err and not (tmp_path / "b" / "submissions" / "n").exists()
    _ok([*args, "--url", "https://example.org/m"])


def test_a_refused_server_is_named_before_anything_else_loads(dataset, botanists, tmp_path):
    """The server is asked before spaCy, the KG and the scorer: a spaCy pipeline, a graph and a
    scorer that are not there would each fail first otherwise."""
    refused = f"openai-compatible:http://127.0.0.1:{free_port()}/v1:m,wait=0"
    said = "nothing answers at"
    _fails(["answer", "--dataset", str(dataset), "--llm", refused, "--spacy", "no-such-pipeline", "-o", str(tmp_path / "a.jsonl")], said)
    build = ["build", "--records", str(botanists / "records.jsonl"), "--kg", str(tmp_path / "no-such.ttl"), "-o", str(tmp_path / "ds.jsonl")]
    _fails([*build, "--llm", refused, "--lm", f"hf:{tmp_path / 'no-such-model'}"], said)
    _fails([*build, "--lm", refused], said)


# ---------------------------------------------------------------- 12: help and names


def test_lenient_means_accept_in_check_as_in_evaluate(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"entry_id": "e1", "text": "x"}\n{"entry_id": 3}\nnot json\n')
    code, out, err = _run(["check", str(tmp_path / "a.jsonl"), "--kind", "answers", "--lenient"])
    assert code == 0 and "1 good record, 2 bad lines" in out and ":2: field" in err and ":3: invalid JSON" in err
    code, out, err = _run(["check", str(tmp_path / "a.jsonl"), "--kind", "answers", "--all-errors"])
    assert code == 1 and "1 good record, 2 bad lines" in out


def test_build_window_default_in_help_and_the_release_file_as_the_kg_importer_takes_it(tmp_path):
    out, _ = _ok(["build", "--help"])
    assert "[default: 128" in " ".join(out.split())
    graphs = [{"qid": "Q1", "name": "Robert Southey", "occupation": "poet"}, {"qid": "Q2", "name": "Edith Fricker", "spouse": "Robert Southey"}]
    release = [["Who were they?", graphs]]
    (tmp_path / "r.json").write_text(json.dumps(release))
    out, _ = _ok(["dataset", "import-biokalma", str(tmp_path / "r.json"), "-o", str(tmp_path / "d.jsonl")])
    assert "wrote 1 entries" in out
    _fails(["dataset", "import-biokalma", "-o", str(tmp_path / "e.jsonl")], "complex_question_graph.json")


def test_bench_run_mentions_no_cache_only_where_the_cache_served(tmp_path):
    with scripted_server([answering(TemplateLLM().respond)], models=[{"id": "m", "root": "m"}]) as (url, _):
        cfg = tmp_path / "b.toml"
        cfg.write_text(f'llms = ["openai-compatible:{url}/v1:m"]\nmetrics = ["citation"]\n[experiments.main]\n')
        first, _ = _ok(["bench", "run", str(cfg), "--limit", "2", "-o", str(tmp_path / "r1")])
        again, _ = _ok(["bench", "run", str(cfg), "--limit", "2", "-o", str(tmp_path / "r2")])
    assert "note: 0 of 2 answers came from the call cache\n" in first and "--no-cache" not in first
    assert "note: 2 of 2 answers came from the call cache (rerun with --no-cache to make every call now)" in again
