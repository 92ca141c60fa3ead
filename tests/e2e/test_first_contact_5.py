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
    assert "| na.na_f1_micro | n/a (n/a when [NA] precision or recall is) | – | 0-1, shown x100 | P: 3, R: 0 |" in table
    assert "| na.na_recall_micro | n/a (nothing was absent from the KG the answers were given: recall has no denominator) |" in table
    assert summary["unavailable"]["na"]["na_recall_micro"].startswith("nothing was absent")


def test_conner_says_why_a_share_is_unavailable():
    m = ConnerIntrinsic(EvalOptions(nli="lexical", lm="smollm2"))
    assert m.unavailable("conner_fact_unverified", []).startswith("lexical gives P(entailment) only; the unverified and inconsistent shares need")
    assert m.unavailable("conner_relevance", []) == ""


def test_the_answer_bar_counts_each_answer_as_it_is_written(tmp_path, dataset):
    args = ["answer", "--dataset", str(dataset), "--temperatures", "0,0.5,1", "--no-cache", "-o", str(tmp_path / "a.jsonl")]
    res = CliRunner().invoke(main, args, env={"KALMA_PROGRESS_EVERY": "0"})  # in a log: a line at every count
    assert res.exit_code == 0, res.output
    assert all(f"answer: template: {k}/18 answers, " in res.stderr for k in (6, 12, 18))  # each batch of 6 shown when written, not a batch late


def _alce_items(dataset) -> list[dict]:
    from kalma.jsonl import read_jsonl
    from kalma.schema import DatasetEntry

    entries = list(read_jsonl(dataset, DatasetEntry))
    return [
        {
            "question": e.specific_question if i % 2 == 0 else e.general_question,
            "answer": "",
            "docs": [{"title": "Wikidata", "text": "a retrieved passage", "score": 1.5}],
            "output": "Nobody knows [NA].",
        }
        for i, e in enumerate(entries)
    ]


def test_alce_result_files_are_read_as_alce_writes_them(tmp_path, dataset):
    """ALCE's run.py writes `{"args": …, "data": [{"question", "output", "docs", …}]}` with indent=4;
    others keep the bare array. Each item is matched to its entry by its question."""
    items = _alce_items(dataset)
    (tmp_path / "alce.json").write_text(json.dumps({"args": {"model": "gpt-3.5-turbo", "shot": 2, "seed": 42}, "data": items}, indent=4))
    out = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "alce.json"), "--metrics", "citation", "-o", str(tmp_path / "e")])
    first = out.split("Read first:")[1].strip().splitlines()[0]
    assert first == "- ALCE result file: 6 of 6 items matched to entries (3 by specific question, 3 by general question)"
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["counts"]["answers"] == 6 and summary["counts"]["na_marks"] == 6 and summary["models"]["answers"] == "gpt-3.5-turbo"

    bare = [*items[:2], {"question": "Who painted the Mona Lisa?", "output": "Leonardo [NA]."}, {"question": "x"}]
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    res = CliRunner().invoke(main, ["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "bare.json"), "-o", str(tmp_path / "f")])
    assert res.exit_code == 1 and "1 unreadable item, 1 question matching no entry; every valid answer was scored" in res.stderr
    notes = json.loads((tmp_path / "f" / "summary.json").read_text())["notes"]
    assert any("item 3: field 'question': 'Who painted the Mona Lisa?' is no entry's general or specific question" in n for n in notes)
    assert any("item 4: field 'output': expected an item with its answer text in `output`" in n for n in notes)
    res = CliRunner().invoke(main, ["check", str(tmp_path / "alce.json"), "--kind", "answers"])
    assert res.exit_code == 0 and "6 good records, 0 bad items" in res.stdout and "an ALCE result file: `output` is each answer's text" in res.stdout


class _CtrlC:
    """A metric that is stopped by Ctrl-C while it scores the answer of `entry`: where a user stops
    a slow model metric."""

    entry = ""


def test_an_interrupted_evaluate_keeps_the_rows_scored_and_resumes_from_them(tmp_path, dataset):
    from evaluation.base import METRICS
    from evaluation.citation_quality import CitationQuality

    class Stopped(CitationQuality):
        name = "stopped"

        def score(self, items):
            if any(it.answer.entry_id == _CtrlC.entry for it in items):
                raise KeyboardInterrupt
            return super().score(items)

    globals()["Stopped"] = Stopped
    METRICS.add("stopped", f"{__name__}:Stopped", argument="none")
    try:
        answers = tmp_path / "a.jsonl"
        _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(answers)])
        _CtrlC.entry = json.loads(answers.read_text().splitlines()[5])["entry_id"]  # the fifth answer
        args = ["evaluate", "--dataset", str(dataset), "--answers", str(answers), "--metrics", "citation,stopped", "-o", str(tmp_path / "e")]
        res = CliRunner().invoke(main, args)
        said = f"kalma: interrupted: 4 of 6 answers are scored in {tmp_path / 'e' / 'scores.jsonl'}; run the same command again to resume"
        assert res.exit_code == 130 and res.stderr.strip().splitlines()[-1] == said
        stopped = json.loads((tmp_path / "e" / "summary.json").read_text())  # says it stopped: compare and bench refuse it
        assert stopped["finished"] is False and stopped["to_score"] == 6 and stopped["metrics"] == {}
        kept = (tmp_path / "e" / "scores.jsonl").read_text().splitlines()[1:]
        assert len(kept) == 4  # the first chunk, scored before the fifth answer was reached
        _CtrlC.entry = ""  # the rerun is not stopped: it scores only what is left
        _ok(args)
        rows = (tmp_path / "e" / "scores.jsonl").read_text().splitlines()[1:]
        assert rows[:4] == kept and len(rows) == 6
        _ok([*args[:-1], str(tmp_path / "fresh")])
        fresh = json.loads((tmp_path / "fresh" / "summary.json").read_text())["metrics"]
        assert json.loads((tmp_path / "e" / "summary.json").read_text())["metrics"] == fresh
    finally:
        METRICS._entries.pop("stopped")
        _CtrlC.entry = ""
