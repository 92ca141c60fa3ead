"""Intervals on every figure of `kalma evaluate`, and `kalma compare` between two evaluations,
through the command line as a user runs them."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from evaluation.base import EvalOptions
from evaluation.runner import evaluate
from kalma.cli import main
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.schema import Answer, DatasetEntry, KnowledgeGraph, Summary


def _cite(t) -> str:
    return f"{t.subject_label} has {t.value_label} as {t.relation_label} [{t.subject}, {t.relation_label}: {t.value_label}]."


def _answers(entries: list[DatasetEntry], cited: int, run: str = "", varied: bool = False, **extra) -> list[Answer]:
    """Each entry answered citing its first `cited` minimum-set triples (`varied`: entry i its first
    i % cited + 1), and one wrong citation."""
    out = []
    for i, e in enumerate(entries):
        ts = (e.minimum_set or [])[: i % cited + 1 if varied else cited]
        wrong = f"It was also big [{e.people[0]}, height: 7 m]."
        out.append(Answer(entry_id=e.id, text=" ".join(_cite(t) for t in ts) + " " + wrong, model=f"cites-{cited}", run=run, **extra))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("intervals")
    entries = demo_entries(open_source("demo"))
    write_jsonl(d / "dataset.jsonl", entries, "dataset")
    write_jsonl(d / "other.jsonl", entries[:-1], "dataset")
    write_jsonl(d / "reversed.jsonl", entries[::-1], "dataset")
    files = {
        "good": _answers(entries, 3),
        "weak": _answers(entries, 1),
        "seeds": _answers(entries, 3, run="s1") + _answers(entries, 2, run="s2"),
        "closed": _answers(entries, 1, kg=KnowledgeGraph()),
        # the pool written out, as `kalma answer` records it, and nothing absent said as []: the same knowledge as weak's
        "written": [a.model_copy(update={"kg": e.knowledge_pool, "absent": []}) for a, e in zip(_answers(entries, 3), entries)],
        "varied": _answers(entries, 3, varied=True),
        "twice": _answers(entries, 3, run="s1", varied=True) + _answers(entries, 3, run="s2", varied=True),  # varied's answers, given twice
        "general": _answers(entries, 1, setting="general"),
        "half": _answers(entries[:4], 1),  # two entries unanswered: scored as empty answers
        # one entry had a triple removed, the others nothing: [NA] recall has a denominator in one entry of six
        "absent": [a.model_copy(update={"absent": [e.minimum_set[-1]] if i == 0 else []}) for i, (a, e) in enumerate(zip(_answers(entries, 1), entries))],
        "removed": [a.model_copy(update={"absent": [e.minimum_set[-1]]}) for a, e in zip(_answers(entries, 1), entries)],
        "temperatures": [
            a.model_copy(update={"settings": {"temperature": t, "seed": k}, "seed": k})  # the seed also in the settings, as a server's options hold it
            for t in (0.0, 0.7)
            for k in (1, 2)
            for a in _answers(entries, 3 if t else 2, run=f"t{t}-s{k}", varied=bool(t) and k == 2)  # at 0.0 both seeds answer alike
        ],
    }
    out = {"dir": d}
    for name, answers in files.items():
        write_jsonl(d / f"{name}.jsonl", answers, "answers")
        evaluate(d / "dataset.jsonl", d / f"{name}.jsonl", d / name, metrics=["citation", "alignment", "na"], progress=False)
        out[name] = d / name
    evaluate(d / "dataset.jsonl", d / "weak.jsonl", d / "strict", metrics=["citation", "alignment"], options=EvalOptions(threshold=0.9), progress=False)
    evaluate(d / "dataset.jsonl", d / "weak.jsonl", d / "stopped", metrics=["citation"], progress=False, stop_after=2, chunk_size=1)
    out["strict"], out["stopped"] = d / "strict", d / "stopped"
    evaluate(d / "other.jsonl", d / "weak.jsonl", d / "other", metrics=["citation"], progress=False)
    evaluate(d / "dataset.jsonl", d / "weak.jsonl", d / "limited", metrics=["citation"], progress=False, limit=3)
    evaluate(d / "reversed.jsonl", d / "good.jsonl", d / "reversed", metrics=["citation"], progress=False)
    out["other"], out["limited"], out["reversed"] = d / "other", d / "limited", d / "reversed"
    return out


def _entry_ids(d: Path) -> list[str]:
    return [json.loads(line)["id"] for line in (d / "dataset.jsonl").read_text().splitlines()[1:]]


def _summary(folder: Path) -> Summary:
    return Summary.model_validate_json((folder / "summary.json").read_text())


def test_every_figure_has_its_interval_and_how_it_was_drawn(runs):
    s = _summary(runs["good"])
    assert s.resampling is not None and (s.resampling.units, s.resampling.resamples, s.resampling.seed) == (6, 10_000, 0)
    for metric, values in s.metrics.items():
        for k, v in values.items():
            b = s.intervals.get(metric, {}).get(k)
            assert (b is not None) == (v is not None), f"{metric}.{k}"  # a value has an interval, an n/a has none
            if b is not None and b.undefined == 0:
                assert b.low is not None and b.high is not None and b.low <= b.high
    table = (runs["good"] / "summary.md").read_text()
    f1 = s.intervals["citation"]["f1_micro"]
    assert f"| citation.f1_micro | {100 * s.metrics['citation']['f1_micro']:.1f} | [{100 * f1.low:.1f}, {100 * f1.high:.1f}] |" in table  # type: ignore[operator]
    assert "percentile bootstrap over dataset entries" in table and "not the judge's own error" in table
    assert not s.run_spread  # one run per entry: no spread over runs


def test_several_runs_per_entry_report_their_spread_apart(runs):
    s = _summary(runs["seeds"])
    assert s.resampling is not None and s.resampling.units == 6 and s.resampling.runs == ["s1", "s2"]  # entries, not answers, are the units
    spread = s.run_spread["all runs"]["citation"]["recall_micro"]
    assert spread.runs == 2 and spread.std is not None and spread.std > 0  # s1 cites three needed triples, s2 two
    assert f"| all runs | citation.recall_micro | {100 * spread.mean:.1f} | {100 * spread.std:.1f} | 2 |" in (runs["seeds"] / "summary.md").read_text()  # type: ignore[operator]


def test_the_spread_is_over_seeds_within_each_condition_never_across_temperatures(runs):
    s = _summary(runs["temperatures"])
    assert set(s.run_spread) == {"temperature=0.0", "temperature=0.7"}
    cold, warm = (s.run_spread[c]["citation"]["recall_micro"] for c in ("temperature=0.0", "temperature=0.7"))
    assert cold.runs == warm.runs == 2 and cold.std == 0.0 and warm.std is not None and warm.std > 0  # at 0.0 the two seeds answered alike
    assert any(c.startswith("The answers come from 2 conditions (temperature=0.0; temperature=0.7)") for c in s.caveats)


def test_a_resample_without_a_value_is_counted_and_said(runs):
    s = _summary(runs["absent"])
    b = s.intervals["na"]["na_recall_micro"]
    assert b.undefined == pytest.approx(10_000 * (5 / 6) ** 6, rel=0.05)  # the resamples that missed the one entry with something absent
    assert f"({b.undefined:,} of 10,000 resamples without a value)" in (runs["absent"] / "summary.md").read_text()


def test_the_cli_takes_the_number_of_resamples(runs, tmp_path):
    d = runs["dir"]
    given = ["--dataset", str(d / "dataset.jsonl"), "--answers", str(d / "absent.jsonl"), "--metrics", "na"]
    res = CliRunner().invoke(main, ["evaluate", *given, "--resamples", "500", "--seed", "3", "-o", str(tmp_path / "e")])
    assert res.exit_code == 0, res.output
    s = _summary(tmp_path / "e")
    assert s.resampling is not None and (s.resampling.resamples, s.resampling.seed) == (500, 3)
    for other in (["--seed", "4"], ["--seed", "-1"], ["--resamples", "800", "--seed", "3"]):  # any integer seed, and each draws its own
        assert CliRunner().invoke(main, ["evaluate", *given, "--resamples", "500", *other, "-o", str(tmp_path / "o")]).exit_code == 0
        again = _summary(tmp_path / "o")
        assert again.intervals["na"]["na_recall_micro"].undefined != s.intervals["na"]["na_recall_micro"].undefined, other  # other draws
        shutil.rmtree(tmp_path / "o")


def _compare(*args: str):
    return CliRunner().invoke(main, ["compare", *args])


def test_compare_two_systems_with_a_real_difference(runs):
    res = _compare(str(runs["good"]), str(runs["weak"]), "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    recall = got["citation.recall_micro"]
    assert set(recall) >= {"a", "b", "diff", "ci", "p"} and len(recall["ci"]) == 2 and recall["ci"][0] <= recall["diff"] <= recall["ci"][1]
    a, b = _summary(runs["good"]).metrics["citation"]["recall_micro"], _summary(runs["weak"]).metrics["citation"]["recall_micro"]
    assert (recall["a"], recall["b"]) == (pytest.approx(a), pytest.approx(b)) and recall["diff"] == pytest.approx(a - b)
    assert recall["ci"][0] > 0 and recall["p"] < 0.05  # every entry recalls more: the smallest p six entries allow
    assert recall["p"] == pytest.approx(2 / 64, abs=0.01)  # only the identity and the full swap reach it
    text = _compare(str(runs["good"]), str(runs["weak"])).stdout
    assert "paired approximate randomization" in text and "| citation.recall_micro |" in text


def test_compare_draws_at_the_level_it_says_with_the_seed_it_is_given(runs):
    got = {seed: json.loads(_compare(str(runs["varied"]), str(runs["weak"]), "--json", "--resamples", "300", "--seed", seed).stdout) for seed in ("0", "7")}
    figures = [k for k, v in got["0"].items() if v["ci"][0] is not None]
    assert figures and all(got["0"][k]["level"] == 0.95 and got["0"][k]["seed"] == 0 and got["7"][k]["seed"] == 7 for k in figures)
    assert any(got["0"][k]["ci"] != got["7"][k]["ci"] for k in figures)  # another seed, other draws
    same = json.loads(_compare(str(runs["varied"]), str(runs["weak"]), "--json", "--resamples", "300", "--seed", "7").stdout)
    assert same == got["7"]
    text = _compare(str(runs["good"]), str(runs["weak"]), "--resamples", "300").stdout
    assert "| 95% interval of A - B |" in text and "300 resamples, seed 0" in text


def test_the_dataset_is_the_same_in_another_line_order(runs):
    """The same entries in another order are the same questions: compared; one entry fewer is not."""
    digest = {k: _summary(runs[k]).provenance["config"]["dataset_digest"] for k in ("weak", "reversed", "other")}
    assert digest["weak"] == digest["reversed"] != digest["other"]
    res = _compare(str(runs["reversed"]), str(runs["weak"]), "--json", "--resamples", "200")
    assert res.exit_code == 0 and json.loads(res.stdout)["citation.recall_micro"]["diff"] > 0, res.output


def test_compare_two_identical_evaluations(runs):
    got = json.loads(_compare(str(runs["good"]), str(runs["good"] / "scores.jsonl"), "--json", "--resamples", "500").stdout)
    for k, d in got.items():
        if d["a"] is not None:
            assert (d["diff"], d["ci"], d["p"]) == (0.0, [0.0, 0.0], 1.0), k


def test_an_entry_answered_twice_weighs_as_one_in_the_pairing(runs):
    """The same answers given twice (two runs of a deterministic system) compare with another
    system exactly as when given once: values, interval and p. Entries' answers are averaged
    before they are swapped, so an entry never weighs double in the test."""
    once, twice = (json.loads(_compare(str(runs[a]), str(runs["good"]), "--json", "--resamples", "2000").stdout) for a in ("varied", "twice"))
    assert once.keys() == twice.keys()
    for k in once:
        for field in ("a", "b", "diff", "p"):
            assert twice[k][field] == pytest.approx(once[k][field]), (k, field)
        assert twice[k]["ci"] == [pytest.approx(x) for x in once[k]["ci"]], k
    assert once["citation.recall_micro"]["p"] < 0.5  # a case where a swap changes something


def test_compare_refuses_other_questions_and_other_knowledge_in_one_line(runs):
    for other, said in ((runs["other"], "different datasets"), (runs["closed"], "given different knowledge")):
        res = _compare(str(runs["weak"]), str(other))
        assert res.exit_code == 1 and said in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.output
    assert _compare(str(runs["weak"]), str(runs["written"])).exit_code == 0  # the pool given, however it was said
    for other in (runs["general"], runs["removed"]):  # another question of each entry; a triple removed from each
        res = _compare(str(runs["weak"]), str(other))
        assert res.exit_code == 1 and "given different knowledge" in res.stderr and "(general, specific)" in res.stderr, res.output
    res = _compare(str(runs["weak"]), str(runs["dir"] / "dataset.jsonl"))
    assert res.exit_code == 1 and "not a scores file" in res.stderr, res.output


def test_compare_reads_a_damaged_header_as_one_line(runs, tmp_path):
    lines = (runs["weak"] / "scores.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    for where, value in ((("provenance", "config", "options"), None), (("provenance", "knowledge"), ["x"]), (("provenance", "config", "dataset_digest"), 7)):
        broken = json.loads(json.dumps(header))
        target = broken["kalma"]
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = value
        (tmp_path / "s.jsonl").write_text("\n".join([json.dumps(broken), *lines[1:]]) + "\n")
        res = _compare(str(runs["weak"]), str(tmp_path / "s.jsonl"))
        assert res.exit_code == 1 and res.stderr.startswith(f"kalma: {tmp_path / 's.jsonl'}:1: field '{'.'.join(where)}'"), res.stderr
        assert len(res.stderr.strip().splitlines()) == 1


def test_compare_says_what_it_leaves_out_and_scores_empty(runs):
    res = _compare(str(runs["weak"]), str(runs["half"]), "--json", "--resamples", "200")
    assert res.exit_code == 0, res.output  # an unanswered entry pairs with any knowledge
    assert "2 entries only A answered: B's scored as empty answers, as kalma evaluate scores a missing answer" in res.stderr
    res = _compare(str(runs["weak"]), str(runs["strict"]), "--resamples", "200")
    assert res.exit_code == 0 and "alignment: not compared, it ran under other settings" in res.stdout, res.output  # another threshold
    assert "| citation.recall_micro |" in res.stdout  # citation reads no threshold: compared
    res = _compare(str(runs["weak"]), str(runs["weak"]), "--resamples", "200")
    assert "A and B are the same file" in res.stdout
    res = _compare(str(runs["stopped"]), str(runs["weak"]), "--resamples", "200")
    assert "A's evaluation is UNFINISHED (2 of 6 answers scored)" in res.stdout and "0 entries only A scored and 4 only B scored are left out" in res.stdout


def test_compare_says_which_entries_only_one_scored(runs):
    res = _compare(str(runs["limited"]), str(runs["good"]), "--json")
    assert res.exit_code == 0, res.output
    assert "0 entries only A scored and 3 only B scored are left out: compared over the 3 entries both scored" in res.stderr
    assert json.loads(res.stdout)["citation.recall_micro"]["entries"] == 3
    assert "alignment: only B has it" in res.stderr


def test_the_leaderboard_shows_intervals_paired_tests_and_ties(runs, tmp_path):
    d, board, site = runs["dir"], tmp_path / "board", tmp_path / "site"
    (d / "silent.jsonl").write_text("".join(json.dumps({"entry_id": e, "text": "Nothing cited."}) + "\n" for e in _entry_ids(d)))
    for name, answers in (("good", "good"), ("good-too", "good"), ("weak", "weak"), ("silent", "silent")):
        submit = ["bench", "submit", str(d / f"{answers}.jsonl"), "--dataset", str(d / "dataset.jsonl"), "--leaderboard", str(board)]
        res = CliRunner().invoke(main, [*submit, "--name", name, "--model", f"m-{name}", "--metrics", "citation"])
        assert res.exit_code == 0, res.output
    assert CliRunner().invoke(main, ["leaderboard", str(board), "-o", str(site)]).exit_code == 0
    md = (site / "leaderboard.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| Submission |")).split(" | ")
    rows = {cells[0].removeprefix("| "): cells for line in md.splitlines() if len(cells := line.split(" | ")) == len(head)}
    rank, f1 = head.index("Rank"), head.index("F1")
    # Two identical submissions no test separates: both could be first; the weak one is third, told apart from both.
    assert (rows["good"][rank], rows["good-too"][rank], rows["weak"][rank]) == ("1-2", "1-2 =", "3")
    assert rows["silent"][rank] == "–" and "1 row has no citation.f1_micro" in md  # no F1: listed, never ranked among them
    good = _summary(board / "submissions" / "good" / "eval")
    low, high = good.intervals["citation"]["f1_micro"].low, good.intervals["citation"]["f1_micro"].high
    assert rows["good"][f1] == f"{100 * good.metrics['citation']['f1_micro']:.1f} [{100 * low:.1f}, {100 * high:.1f}]"  # type: ignore[operator]
    told = re.search(r"\| good \| weak \| \+39\.2 \(p (0\.\d+)\) \| yes \|", md)  # weak is worse on every entry
    assert told and float(told.group(1)) == pytest.approx(2 / 64, abs=0.01) and "| good | good-too | 0.0 (p 1) | no |" in md
    assert "not the judge's own error" in md
    csv_rows = {r["submission"]: r for r in csv.DictReader((site / "leaderboard.csv").open(encoding="utf-8"))}
    assert float(csv_rows["good"]["citation.f1_micro low"]) == pytest.approx(low) and csv_rows["good-too"]["tied with the row above"] == "yes"
    assert csv_rows["good"]["seeds"] == ""  # no seeds is an empty cell, not a dash
    page = (site / "index.html").read_text()
    assert page.count('class="tests"') == 1 and f"<b>+39.2 (p {told.group(1)})</b>" in page and '<td class="tie">1-2 =</td>' in page
