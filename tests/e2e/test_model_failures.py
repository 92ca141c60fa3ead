"""A judge or an answerer that fails says so in every report, never a silent n/a: a stand-in
judge whose every reply opens with a QID (as SmolLM2's did), and answers that cite nothing."""

from __future__ import annotations

import csv
import json

from click.testing import CliRunner

from kalma.cli import main
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.schema import Answer, DatasetEntry
from tests.servers import answering, scripted_server


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_a_judge_whose_ratings_are_unreadable_gives_n_a_with_the_reason_and_the_count(tmp_path, dataset):
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(tmp_path / "a.jsonl")])
    card = [{"id": "judge", "root": "/models/judge"}]
    with scripted_server([answering(lambda _: "Q2065 | Artemisia Gentileschi | place of birth | Rome")], models=card) as (url, log):
        judge = f"openai-compatible:{url}/v1:judge"
        table = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--metrics", "citation,geval", "--judge", judge]
                    + ["-o", str(tmp_path / "ev")])  # fmt: skip
        asked = len(log)
        board = tmp_path / "board"
        _ok(["bench", "submit", str(tmp_path / "a.jsonl"), "--dataset", str(dataset), "--leaderboard", str(board), "--name", "t", "--model", "template"]
            + ["--metrics", "citation,geval", "--judge", judge])  # fmt: skip
    _ok(["leaderboard", str(board), "-o", str(tmp_path / "site")])
    md = (tmp_path / "site" / "leaderboard.md").read_text()
    assert f"geval: 24 of 24 ratings unreadable from {judge}; its values n/a" in md  # the board says it too
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert asked == 24  # 6 answers x 4 criteria, every one asked
    geval = summary["metrics"]["geval"]
    assert all(geval[f"{c}_mean"] is None for c in ("coherence", "consistency", "fluency", "relevance"))  # never a number from none
    failed = summary["failures"]["geval"]
    assert failed["unusable"] == 24 and failed["replies"] == 24 and failed["over_limit"]
    said = next(c for c in summary["caveats"] if c.startswith("G-Eval: "))
    assert said.startswith(f"G-Eval: 24 of 24 ratings unreadable from {judge} (replies begin 'Q2065") and "n/a" in said
    assert "G-Eval: 24 of 24 ratings unreadable" in table.split("Read first:")[1].split("Totals:")[0]


def test_answers_that_cite_nothing_are_said_first_and_on_the_board(tmp_path, dataset):
    entries = list(read_jsonl(dataset, DatasetEntry))
    copied = "Q212657 | Artemisia Gentileschi | place of birth | Rome\nQ212657 | Artemisia Gentileschi | occupation | painter"
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=e.id, text=copied, model="tiny") for e in entries], "answers")
    table = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "ev")])
    first = table.split("Read first:")[1].strip().splitlines()[0]
    assert first.startswith("- 6 of 6 answers by tiny cite nothing (no citation, [NA] or bracket); 6 of them copy the knowledge list")
    assert json.loads((tmp_path / "ev" / "summary.json").read_text())["counts"]["answers_citing_nothing"] == 6

    board = tmp_path / "board"
    _ok(["bench", "submit", str(tmp_path / "a.jsonl"), "--dataset", str(dataset), "--leaderboard", str(board), "--name", "tiny-1", "--model", "org/tiny"])
    title = (board / "submissions" / "tiny-1" / "eval" / "summary.md").read_text().splitlines()[0]
    assert title == "# Evaluation of org/tiny (the answers say tiny)"  # the model given names it everywhere
    _ok(["leaderboard", str(board), "-o", str(tmp_path / "site")])
    row = next(r for r in csv.DictReader((tmp_path / "site" / "leaderboard.csv").open(encoding="utf-8")) if r["submission"] == "tiny-1")
    # the model's failure first, then why its [NA] figures assume the full pool (the answers name no knowledge)
    said = row["read first"].split("; ")
    assert said[0] == "6 of 6 answers cite nothing" and said[1].startswith("6 answers do not say which knowledge") and len(said) == 2
    assert "6 of 6 answers cite nothing" in (tmp_path / "site" / "index.html").read_text()
    assert "6 of 6 answers cite nothing" in (tmp_path / "site" / "leaderboard.md").read_text()
