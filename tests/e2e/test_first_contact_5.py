"""The README followed by a new user, offline (fifth pass): messages that must name what they are
about, and numbers that must say what they are computed over, through the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner

from evaluation.base import EvalOptions
from evaluation.conner import ConnerIntrinsic
from kalma.cli import main


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_notes_name_their_answers_and_f1_is_over_what_p_and_r_are(tmp_path, dataset):
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"entry_id": e, "text": "Nobody knows [NA]."}) + "\n" for e in ("demo-gentileschi", "demo-hertwig", "demo-simeone")))
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(answers), "--metrics", "citation,na", "-o", str(tmp_path / "e")])
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert "no answer for this entry: scored as empty (3 answers: demo-crane, demo-crane-baseball, demo-orazio-pisa)" in summary["notes"]
    table = (tmp_path / "e" / "summary.md").read_text()
    # [NA] precision over the 3 marked sentences, recall over no absent triple: F1 says both, and why recall is n/a
    assert "| na.na_f1_micro | n/a (n/a when [NA] precision or recall is) | 0-1, shown x100 | P: 3, R: 0 |" in table
    assert "| na.na_recall_micro | n/a (nothing was absent from the KG the answers were given: recall has no denominator) |" in table
    assert summary["unavailable"]["na"]["na_recall_micro"].startswith("nothing was absent")


def test_conner_says_why_a_share_is_unavailable():
    m = ConnerIntrinsic(EvalOptions(nli="lexical", lm="smollm2"))
    assert m.unavailable("conner_fact_unverified", []).startswith("lexical gives P(entailment) only; the unverified and inconsistent shares need")
    assert m.unavailable("conner_relevance", []) == ""


def test_the_answer_bar_counts_each_answer_as_it_is_written(tmp_path, dataset):
    res = CliRunner().invoke(main, ["answer", "--dataset", str(dataset), "--temperatures", "0,0.5,1", "--no-cache", "-o", str(tmp_path / "a.jsonl")])
    assert res.exit_code == 0, res.output
    drawn = res.stderr.replace("\r", "\n")
    assert all(f"| {k}/18 [" in drawn for k in (6, 12, 18))  # each batch of 6 shown when written, not a batch late
