"""Every verdict visible (through the CLI): which citation was wrong and why, per answer, in
scores.jsonl, as a flat table, and on a page; [NA] scores for answers that do not say what they
were given; partial answers files named, filed apart and never ranked."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from kalma.cli import main
from kalma.frames import VERDICT_COLUMNS, read_verdicts
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.schema import Answer, AnswerScores, DatasetEntry, KnowledgeGraph
from tests.conftest import ROOT
from tests.e2e.test_bench import CHROMIUM, FLAGS

# One hand-written answer to the demo's Gentileschi question: a correct citation, a value in the
# wrong case, a true triple the sentence does not say, markup with no comma after its QID, and an
# [NA] mark on a sentence that is off the question.
HAND = (
    "Artemisia Gentileschi was a painter [Q212657, occupation: painter]. "
    "She died in Naples [Q212657, place of death: naples]. "
    "She was born in Rome [Q212657, place of death: Naples]. "
    "Orazio died in London [Q367360, place of death: London][Q367360 place of death London]. "
    "Her paintings were admired across Europe [NA]."
)


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def _plain(path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _scores(folder) -> list[AnswerScores]:
    return list(read_jsonl(folder / "scores.jsonl", AnswerScores, kind="scores"))


def test_every_citation_is_judged_with_its_reason(tmp_path, dataset):
    _plain(tmp_path / "a.jsonl", [{"entry_id": "demo-gentileschi", "text": HAND}])
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--limit", "1", "-o", str(tmp_path / "ev")])
    (row,) = _scores(tmp_path / "ev")
    got = [(s.index, [(c.verdict, c.value, c.in_kg, c.in_minimum, c.aligned) for c in s.citations], s.na and s.na.outcome) for s in row.verdicts]
    assert got == [
        (0, [("correct", "painter", True, True, True)], None),
        (1, [("wrong", "naples", False, False, True)], None),
        (2, [("unaligned", "Naples", True, True, False)], None),
        (3, [("correct", "London", True, True, True), ("malformed", None, None, None, None)], None),
        (4, [], "irrelevant: counts correct"),
    ]
    s = row.verdicts
    assert HAND[s[1].start : s[1].end] == s[1].text == "She died in Naples [Q212657, place of death: naples]."
    assert s[1].citations[0].why == "the KG given holds 'Naples' for Q212657, place of death: it differs from 'naples' in case only"
    assert s[2].citations[0].entailment == 0.0 and s[2].citations[0].why == "the sentence does not entail it: P(entailment) 0.000 < 0.5"
    assert s[3].citations[1].bracket == "[Q367360 place of death London]" and s[3].citations[1].why == "no_qid: the bracket does not start with a QID"
    assert s[4].na is not None and s[4].na.relevance == 0.0 and "does not address the question" in s[4].na.why
    # the counts the verdicts sum up are the metric's own
    assert (row.counts["citation"]["correct"], row.counts["alignment"]["aligned"], row.markup["malformed"]) == (3, 3, 1)

    # flat: one row per citation, malformed markup and [NA] mark, for pandas
    _ok(["export", str(tmp_path / "ev" / "scores.jsonl"), "--verdicts"])
    exported = [json.loads(line) for line in (tmp_path / "ev" / "scores.verdicts.jsonl").read_text().splitlines()]
    frame = read_verdicts(tmp_path / "ev" / "scores.jsonl")
    assert list(frame.columns) == list(VERDICT_COLUMNS) and len(frame) == len(exported) == 6
    assert frame["kind"].tolist() == ["citation", "citation", "citation", "citation", "malformed", "na"]
    wrong = frame[frame["verdict"] == "wrong"].iloc[0]
    assert (wrong["sentence"], wrong["relation"], wrong["value"], wrong["in_kg"]) == (1, "place of death", "naples", False)
    assert frame.attrs["kalma"]["kind"] == "scores"


def test_compat_original_records_its_own_precision_verdicts(tmp_path, dataset):
    """The authors' formula counts a minimum-set triple for precision even when it is not in the KG
    given; each verdict records which formula judged it."""
    entry = next(e for e in read_jsonl(dataset, DatasetEntry) if e.id == "demo-gentileschi")
    removed = {t.key() for t in entry.minimum_set or [] if t.relation_label == "occupation"}
    kg = entry.knowledge_pool.without(removed)
    _plain(tmp_path / "a.jsonl", [{"entry_id": entry.id, "text": HAND, "kg": kg.model_dump(mode="json")}])
    for compat in ("default", "original"):
        args = ["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--limit", "1", "--metrics", "citation"]
        _ok([*args, "--compat", compat, "-o", str(tmp_path / compat)])
    default, original = (_scores(tmp_path / c)[0].verdicts[0].citations[0] for c in ("default", "original"))
    assert (default.in_kg, default.in_minimum, default.precise, default.verdict) == (False, True, False, "wrong")
    assert (original.in_kg, original.in_minimum, original.precise, original.verdict) == (False, True, True, "wrong")
    assert default.why == "in the entry's knowledge pool, but not in the KG given (removed, or not retrieved)"


def test_a_plain_answers_file_gets_na_scores_and_says_how(tmp_path, dataset):
    """Answers of just entry_id and text: taken as given the full pool, said in the first lines; a
    header saying `kg_given: none` (closed book) makes the whole minimum set absent."""
    rows = [{"entry_id": e.id, "text": f"{e.specific_question.split(',')[0]} was a painter [NA]."} for e in read_jsonl(dataset, DatasetEntry)]
    _plain(tmp_path / "a.jsonl", rows)
    out = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--model", "my-rag", "-o", str(tmp_path / "pool")])
    first = out.split("Read first:")[1].strip().splitlines()[0]
    assert first.startswith("- 6 answers do not say which knowledge they were given: scored as given the dataset's full knowledge pool")
    pool = json.loads((tmp_path / "pool" / "summary.json").read_text())
    assert pool["metrics"]["na"]["na_precision_micro"] is not None and pool["support"]["na"]["na_precision_micro"] == 6
    assert pool["support"]["na"]["na_recall_micro"] == 0  # the pool lacks nothing the minimum sets need

    head = json.dumps({"kalma": {"kind": "answers", "format_version": 4, "kg_given": "none"}})
    (tmp_path / "closed.jsonl").write_text(head + "\n" + (tmp_path / "a.jsonl").read_text(), encoding="utf-8")
    out = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "closed.jsonl"), "--model", "my-rag", "-o", str(tmp_path / "closed")])
    closed = json.loads((tmp_path / "closed" / "summary.json").read_text())
    n_min = sum(len(e.minimum_set or []) for e in read_jsonl(dataset, DatasetEntry))
    assert closed["support"]["na"]["na_recall_micro"] == n_min and closed["metrics"]["na"]["na_recall_micro"] is not None
    assert "do not say which knowledge" not in out

    (tmp_path / "bad.jsonl").write_text(head.replace('"none"', '"some"') + "\n" + (tmp_path / "a.jsonl").read_text(), encoding="utf-8")
    res = CliRunner().invoke(main, ["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "bad.jsonl"), "-o", str(tmp_path / "bad")])
    said = f"kalma: {tmp_path / 'bad.jsonl'}:1: field 'kg_given': 'some' is not one of pool, none (the knowledge every answer was given)"
    assert res.exit_code == 1 and res.stderr.strip() == said


def test_missing_entries_are_named_first_and_a_partial_submission_is_filed_apart(tmp_path, dataset):
    ids = [e.id for e in read_jsonl(dataset, DatasetEntry)]
    full = tmp_path / "full.jsonl"
    _ok(["answer", "--dataset", str(dataset), "--retrieval", "gold", "-o", str(full)])
    half = tmp_path / "half.jsonl"
    lines = full.read_text().splitlines()
    half.write_text("\n".join(lines[:4]) + "\n")  # the header and the first three answers

    out = _ok(["evaluate", "--dataset", str(dataset), "--answers", str(half), "-o", str(tmp_path / "ev")])
    first = out.split("Read first:")[1].strip().splitlines()[0]
    assert first == f"- MISSING: 3 of 6 entries have no answer: {', '.join(ids[3:])}. " + (
        "Each is scored as an empty answer, which lowers recall; score a subset with --limit, or file a partial submission with `kalma bench submit --partial`."
    )

    board = tmp_path / "board"
    submit = ["bench", "submit", "--dataset", str(dataset), "--leaderboard", str(board), "--model", "template"]
    res = CliRunner().invoke(main, [*submit, str(half), "--name", "half"])
    assert res.exit_code == 1 and "for 3 of 6 entries: " in res.stderr and "1 problem, listed above" in res.stderr
    out = _ok([*submit, str(half), "--name", "half", "--partial"])
    assert "filed 'half' in" in out and "(PARTIAL: 3 of 6 entries, shown apart and not ranked)" in out
    _ok([*submit, str(full), "--name", "whole"])
    _ok([*submit, str(full), "--name", "first-two", "--limit", "2"])
    half_rec = json.loads((board / "submissions" / "half" / "submission.json").read_text())
    assert half_rec["summary"]["coverage"] == {"scored": 3, "entries": 6, "how": "partial"} and half_rec["answers_scored"] == 3
    assert half_rec["summary"]["counts"]["missing_answers_scored_empty"] == 0  # scored on its own entries, not as empty answers
    assert half_rec["summary"]["caveats"][0].startswith("PARTIAL: answers for 3 of 6 dataset entries")

    _ok(["leaderboard", str(board), "-o", str(tmp_path / "site")])
    md = (tmp_path / "site" / "leaderboard.md").read_text()
    ranked, partial = md.split("## ")[1], md.split("## ")[2]
    assert "| whole |" in ranked and "| half |" not in ranked and "| first-two |" not in ranked
    assert partial.startswith("kalma demo questions (hand-written) (6 questions") and ": partial submissions, not ranked" in partial.splitlines()[0]
    assert "| half | template (fixed patterns, not a model) | 3 (3 of 6 entries) |" in partial
    assert "| first-two | template (fixed patterns, not a model) | 2 (2 of 6 entries (--limit)) |" in partial
    assert sorted(p.name for p in (tmp_path / "site" / "answers").iterdir()) == ["first-two.html", "half.html", "whole.html"]
    assert 'href="./answers/half.html"' in (tmp_path / "site" / "index.html").read_text()


HOSTILE = (
    'Born in <img src=x onerror="document.body.dataset.pwned=1"> Rome [Q212657, place of birth: rome]. '
    "<script>document.body.dataset.pwned=2</script> She painted [Q212657, occupation: painter]. "
    'A quote " onmouseover="document.body.dataset.pwned=3" and </mark></li><b>bold</b> [NA].'
)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")
def test_the_verdict_page_filters_by_verdict_and_keeps_hostile_text_inert(tmp_path, dataset):
    rows = [{"entry_id": "demo-gentileschi", "text": HOSTILE}, {"entry_id": "demo-hertwig", "text": HAND}, {"entry_id": "demo-simeone", "text": "Nothing."}]
    _plain(tmp_path / "a.jsonl", rows)
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--model", "my-rag", "--limit", "3", "-o", str(tmp_path / "ev")])
    page = tmp_path / "ev" / "verdicts.html"

    def dom(fragment: str) -> str:
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000", "--dump-dom", page.as_uri() + fragment],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout

    everything, wrong = dom(""), dom("#wrong")
    assert 'data-answers="3"' in everything and 'data-shown="3"' in everything  # the page's own script ran
    assert "pwned" not in everything.split("<body", 1)[1].split(">", 1)[0]  # no hostile handler or script ran
    assert "&lt;script&gt;document.body.dataset.pwned=2&lt;/script&gt;" in everything and "<b>bold</b>" not in everything
    assert 'data-filter="wrong"' in wrong and 'data-shown="2"' in wrong  # the hostile answer (rome) and HAND (naples)
    shot = ROOT / "runs" / "test-artifacts" / "verdicts-wrong.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile2'}", "--window-size=1200,1300", f"--screenshot={shot}", page.as_uri() + "#wrong"],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 20000


def test_an_answer_that_says_its_kg_is_scored_against_it(tmp_path, dataset):
    """A line's `kg` overrides the pool assumption: citing a triple it lacks is wrong, and its
    absent set follows from it."""
    entry = next(e for e in read_jsonl(dataset, DatasetEntry) if e.id == "demo-gentileschi")
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id=entry.id, text=HAND, model="m", kg=KnowledgeGraph())], "answers")
    _ok(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--limit", "1", "-o", str(tmp_path / "ev")])
    (row,) = _scores(tmp_path / "ev")
    assert row.counts["na"]["absent"] == len(entry.minimum_set or []) and row.verdicts[0].citations[0].why == (
        "in the entry's knowledge pool, but not in the KG given (removed, or not retrieved)"
    )


# A bracket written twice, a bracket holding a correct and a wrong pair, and two [NA] marks in one
# sentence: what the flags, rows and page say must add up to what the summary reports.
REPEATS = (
    "Artemisia Gentileschi was a painter [Q212657, occupation: painter] [Q212657, occupation: painter]. "
    "She was born in Rome [Q212657, place of birth: Rome, place of death: Rome]. "
    "Her paintings were admired across Europe [NA] and sold well [N/A]."
)


@pytest.mark.parametrize("compat", ["default", "original"])
def test_precise_flags_brackets_and_na_marks_add_up(tmp_path, dataset, compat):
    _plain(tmp_path / "a.jsonl", [{"entry_id": "demo-gentileschi", "text": REPEATS}])
    args = ["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "--limit", "1", "--compat", compat]
    _ok([*args, "--metrics", "citation,na", "-o", str(tmp_path / "ev")])
    (row,) = _scores(tmp_path / "ev")
    cits = [c for s in row.verdicts for c in s.citations]
    assert [c.bracket for c in cits[:2]] == ["[Q212657, occupation: painter]"] * 2  # each its own bracket, not the run
    flags = [c.precise for c in cits]
    # the authors' formula counts the repeated minimum-set triple once; the paper's counts each correct citation
    assert flags == ([True, False, False, False] if compat == "original" else [True, True, False, False])
    assert sum(flags) == row.counts["citation"]["precise"] and row.values["citation"]["precision"] == sum(flags) / len(cits)
    if compat == "original":
        assert "counts it once" in (cits[1].why or "")
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert summary["metrics"]["citation"]["precision_micro"] == sum(flags) / len(cits)

    last = row.verdicts[-1]
    assert last.na_marks == ["[NA]", "[N/A]"] and row.markup["na_marks"] == 2
    rows = [r for r in read_verdicts(tmp_path / "ev" / "scores.jsonl").to_dict("records") if r["kind"] == "na"]
    assert [r["bracket"] for r in rows] == ["[NA]", "[N/A]"] and len({r["verdict"] for r in rows}) == 1
    assert "counts the sentence once" in rows[1]["why"] and row.counts["na"]["na_sentences"] == 1

    page = (tmp_path / "ev" / "verdicts.html").read_text()
    # the mixed bracket: each pair in its own colour
    assert '<mark class="v-correct">place of birth: Rome</mark>' in page and '<mark class="v-wrong">place of death: Rome</mark>' in page
    outside = sum(c.in_minimum is False for c in cits)
    assert page.count('class="badge v-extra">outside the minimum set<') == outside and f"{outside} of them outside the minimum set" in page
    assert "li:not(.k-wrong){display:none}" in page  # a filter hides the other citations, it does not dim them
