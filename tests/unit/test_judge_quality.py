"""`kalma judge evaluate` (evaluation/judge_quality.py): balanced accuracy against judges whose
answers are known (`table:` with the true labels, flipped, constant), against a hand computation,
threshold tuning as LLM-AggreFact does it, every input layout, and bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation.judge_quality import BUNDLED, NO_DATASET, PairsError, _columns, balanced_accuracy, measure, read_pairs
from kalma.cli import main

# two datasets, a premise judged against two claims (one bootstrap unit): labels and a judge's P
ROWS = [
    ("She was born in Rome.", "place of birth: Rome", 1, "a", 0.9),
    ("She was born in Rome.", "place of death: Rome", 0, "a", 0.6),
    ("She died in Naples.", "place of death: Naples", 1, "a", 0.3),
    ("He wrote a novel.", "occupation: writer", 1, "a", 0.8),
    ("He was a painter.", "occupation: writer", 0, "b", 0.2),
    ("He painted in Rome.", "occupation: painter", 1, "b", 0.7),
    ("He lived in Pisa.", "place of birth: Pisa", 0, "b", 0.55),
]


def _files(tmp_path: Path, probability=lambda row: row[4]) -> tuple[Path, str]:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"doc": p, "claim": h, "label": y, "dataset": d}) + "\n" for p, h, y, d, _ in ROWS))
    table = tmp_path / "judge.jsonl"
    table.write_text("".join(json.dumps({"premise": r[0], "hypothesis": r[1], "probability": probability(r)}) + "\n" for r in ROWS))
    return pairs, f"table:{table}"


def test_a_judge_with_known_answers(tmp_path):
    pairs, _ = _files(tmp_path)
    rows = read_pairs(pairs)
    for name, probability, expected in (
        ("truth", lambda r: float(r[2]), 1.0),
        ("flipped", lambda r: 1.0 - r[2], 0.0),
        ("constant", lambda r: 0.7, 0.5),
    ):
        (tmp_path / name).mkdir()
        _, spec = _files(tmp_path / name, probability)
        report = measure(spec, rows, 0.5, resamples=200)
        assert report.intervals["overall"].point == pytest.approx(expected), name
        assert all(report.intervals[d].point == pytest.approx(expected) for d in ("a", "b")), name


def test_against_a_hand_computation(tmp_path):
    pairs, spec = _files(tmp_path)
    report = measure(spec, read_pairs(pairs), 0.5, resamples=500, seed=3)
    # a: positives (0.9 yes, 0.3 no, 0.8 yes) recall 2/3, negative (0.6 yes) recall 0 -> 1/3
    # b: positive (0.7 yes) recall 1, negatives (0.2 no, 0.55 yes) recall 1/2 -> 3/4
    assert report.intervals["a"].point == pytest.approx(0.5 * (2 / 3 + 0))
    assert report.intervals["b"].point == pytest.approx(0.5 * (1 + 1 / 2))
    assert report.intervals["overall"].point == pytest.approx((1 / 3 + 3 / 4) / 2)  # LLM-AggreFact's mean over datasets
    assert report.confusion["all"] == {"true_positive": 3, "false_negative": 1, "false_positive": 2, "true_negative": 1}
    assert balanced_accuracy([1, 1, 1, 0, 0, 1, 0], [1, 0, 1, 1, 0, 1, 1]) == pytest.approx(0.5 * (3 / 4 + 1 / 3))
    o = report.intervals["overall"]
    assert o.resamples == 500 and o.seed == 3 and o.low is not None and o.high is not None and o.low <= o.point <= o.high
    units, _ = _columns(read_pairs(pairs), report.scored, report.verdicts, ["a", "b"])
    assert len(units) == 6  # the two claims against "She was born in Rome." are one unit
    d = report.as_dict()
    assert d["bootstrap"]["unit"].startswith("a document (premise) within its dataset") and d["thresholds"] == {"a": 0.5, "b": 0.5}


def test_the_threshold_tuned_on_development_pairs(tmp_path):
    pairs, spec = _files(tmp_path)
    dev = tmp_path / "dev.jsonl"
    # dataset a's development pairs are separated at 0.61 (the first threshold above 0.6); b's at 0.21
    dev.write_text(
        "".join(
            json.dumps({"premise": p, "hypothesis": h, "label": y, "dataset": d, "split": "dev"}) + "\n"
            for p, h, y, d in [
                (ROWS[0][0], ROWS[0][1], 1, "a"),
                (ROWS[1][0], ROWS[1][1], 0, "a"),
                (ROWS[5][0], ROWS[5][1], 1, "b"),
                (ROWS[4][0], ROWS[4][1], 0, "b"),
            ]
        )
    )
    rows = read_pairs(dev) + read_pairs(pairs)
    report = measure(spec, rows, None, resamples=100)
    assert report.judged.thresholds == {"a": 0.61, "b": 0.21} and report.judged.tuned_on == {"a": (2, 1.0), "b": (2, 1.0)}
    assert len(report.scored) == len(ROWS)  # the development pairs are not scored
    with pytest.raises(PairsError, match="dataset 'a' has no development pairs"):
        measure(spec, read_pairs(pairs), None)


def test_every_layout_reads_the_same_pairs(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pairs, _ = _files(tmp_path)
    expected = [(p.premise, p.hypothesis, p.label, p.dataset) for p in read_pairs(pairs)]
    csv_file = tmp_path / "pairs.csv"
    csv_file.write_text("doc,claim,label,dataset\n" + "".join(f'"{p}","{h}",{y},{d}\n' for p, h, y, d, _ in ROWS))
    parquet = tmp_path / "pairs.parquet"
    pq.write_table(
        pa.table({"doc": [r[0] for r in ROWS], "claim": [r[1] for r in ROWS], "label": [r[2] for r in ROWS], "dataset": [r[3] for r in ROWS]}), parquet
    )
    for f in (csv_file, parquet):
        assert [(p.premise, p.hypothesis, p.label, p.dataset) for p in read_pairs(f)] == expected
    # what `kalma human score` writes: premise/hypothesis, entailment/not_entailment, no dataset
    human = tmp_path / "majority.jsonl"
    human.write_text(json.dumps({"premise": "x.", "hypothesis": "r: x", "label": "not_entailment", "annotators": 3, "supported": 1}) + "\n")
    assert [(p.label, p.dataset) for p in read_pairs(human)] == [(0, NO_DATASET)]


@pytest.mark.parametrize(
    "line,said",
    [
        ({"claim": "r: v", "label": 1}, ":2: field 'premise' is missing (or 'document' / 'doc')"),
        ({"doc": "x.", "label": 1}, ":2: field 'hypothesis' is missing (or 'claim')"),
        ({"doc": "x.", "claim": "r: v"}, ":2: field 'label' is missing"),
        ({"doc": "x.", "claim": "r: v", "label": 2}, ":2: field 'label': 0 or 1 (or entailment/not_entailment), got 2"),
        ({"doc": "x.", "claim": "r: v", "label": "maybe"}, ":2: field 'label': 0 or 1 (or entailment/not_entailment), got 'maybe'"),
        ({"doc": 3, "claim": "r: v", "label": 1}, ":2: field 'doc': text is required, got 3"),
        ({"doc": None, "claim": "r: v", "label": 1}, ":2: field 'doc' is null: text is required"),
        ({"premise": None, "hypothesis": "r: v", "label": 1}, ":2: field 'premise' is null: text is required"),
        ({"doc": "x.", "claim": "r: v", "label": None}, ":2: field 'label' is null"),
    ],
)
def test_bad_pairs_are_one_line_naming_the_file_line_and_field(tmp_path, line, said):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"doc": "x.", "claim": "r: v", "label": 0}) + "\n" + json.dumps(line) + "\n")
    res = CliRunner().invoke(main, ["judge", "evaluate", "--nli", "lexical", "--pairs", str(bad)])
    assert res.exit_code == 1 and res.stderr.strip() == f"kalma: {bad}{said}" and "Traceback" not in res.output


def test_an_unknown_judge_is_one_line_with_the_nearest_name(tmp_path):
    res = CliRunner().invoke(main, ["judge", "evaluate", "--nli", "minichek:x"])
    assert res.exit_code == 1 and len(res.stderr.strip().splitlines()) == 1 and "unknown entailment backend 'minichek'" in res.stderr
    assert "Did you mean 'minicheck'" in res.stderr


def test_two_judges_at_once_on_the_bundled_set(tmp_path):
    """lexical against the true labels, by one command: each judge's report, their paired
    difference, and every pair's probability in scores.jsonl."""
    rows = read_pairs(BUNDLED)
    truth = tmp_path / "truth.jsonl"
    truth.write_text("".join(json.dumps({"premise": p.premise, "hypothesis": p.hypothesis, "label": p.label}) + "\n" for p in rows))
    res = CliRunner().invoke(main, ["judge", "evaluate", "--nli", "lexical", "--nli", f"table:{truth}", "--resamples", "300", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "rule-based APPROXIMATION" in res.output and "threshold: 0.5 (fixed)" in res.output and f"Against table:{truth}" in res.output
    report = json.loads((tmp_path / "out" / "judge.json").read_text())
    lexical, table = report["judges"]
    assert table["balanced_accuracy"]["overall"]["point"] == 1.0 and lexical["approximate"] and lexical["pairs"] == len(rows)
    assert report["difference"]["balanced_accuracy"]["overall"]["diff"] == pytest.approx(lexical["balanced_accuracy"]["overall"]["point"] - 1.0)
    scores = [json.loads(line) for line in (tmp_path / "out" / "scores.jsonl").read_text().splitlines()]
    assert len(scores) == 2 * len(rows) and {s["judge"] for s in scores} == {"lexical", f"table:{truth}"}
    assert all(s["correct"] for s in scores if s["judge"].startswith("table:"))


def test_the_bundled_set_is_labelled_and_explained():
    rows = [json.loads(line) for line in BUNDLED.read_text().splitlines()]
    assert len(rows) >= 60 and {r["label"] for r in rows} == {0, 1}
    assert all(r["why"] and r["kind"] for r in rows) and len({(r["premise"], r["hypothesis"]) for r in rows}) == len(rows)
    kinds = {r["kind"] for r in rows}
    assert {"paraphrase", "wrong value", "wrong relation", "negation", "date", "number"} <= kinds


def _run(*args: str):
    return CliRunner().invoke(main, ["judge", "evaluate", *args])


def _one_line(res, code: int = 1) -> str:
    assert res.exit_code == code and "Traceback" not in res.output and len(res.stderr.strip().splitlines()) == 1, res.output
    return res.stderr.strip()


def test_rows_without_a_dataset_tune_on_a_dev_file_without_one(tmp_path):
    """A --dev file and a --pairs file whose rows carry no `dataset` are one dataset (they used to be
    named after their files, and tuning refused its own development file)."""
    pairs, spec = _files(tmp_path)
    test, dev = tmp_path / "test.jsonl", tmp_path / "dev.jsonl"
    test.write_text("".join(json.dumps({"doc": p, "claim": h, "label": y}) + "\n" for p, h, y, _, _ in ROWS))
    dev.write_text("".join(json.dumps({"premise": p, "hypothesis": h, "label": y}) + "\n" for p, h, y, _, _ in ROWS[:2]))
    res = _run("--nli", spec, "--pairs", str(test), "--dev", str(dev), "--threshold", "tune", "--resamples", "50", "-o", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "out" / "judge.json").read_text())["judges"][0]
    # the dev pairs (0.9 yes, 0.6 no) are separated first at 0.61; the 7 test pairs scored, the 2 dev pairs not
    assert report["thresholds"] == {NO_DATASET: 0.61} and report["tuned_on_dev"][NO_DATASET]["pairs"] == 2 and report["pairs"] == len(ROWS)


def test_the_dev_file_is_not_the_pairs_file(tmp_path):
    pairs, spec = _files(tmp_path)
    said = _one_line(_run("--nli", spec, "--pairs", str(pairs), "--dev", str(pairs), "--threshold", "tune"), code=2)
    assert f"--dev {pairs} is the --pairs file" in said


def test_an_unreadable_pairs_file_is_named_with_what_to_do(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    latin = tmp_path / "pairs.csv"
    latin.write_bytes("doc,claim,label\nCaf\xe9 in Rome.,r: v,1\n".encode("latin-1"))
    assert _one_line(_run("--nli", "lexical", "--pairs", str(latin))) == f"kalma: {latin}:2: not UTF-8 text (byte 0xe9): save it as UTF-8 " + (
        "(a spreadsheet: 'CSV UTF-8'; iconv -f latin1 -t utf-8)"
    )
    parquet = tmp_path / "pairs.jsonl"
    pq.write_table(pa.table({"doc": ["x."], "claim": ["r: v"], "label": [1]}), parquet)
    assert _one_line(_run("--nli", "lexical", "--pairs", str(parquet))) == f"kalma: {parquet}: a Parquet file, not .jsonl: name it .parquet"
    text = tmp_path / "pairs.parquet"
    text.write_text(json.dumps({"doc": "x.", "claim": "r: v", "label": 1}) + "\n")
    assert _one_line(_run("--nli", "lexical", "--pairs", str(text))).startswith(f"kalma: {text}: not a Parquet file (")
    bom = tmp_path / "bom.csv"  # a CSV saved by a spreadsheet: its byte-order mark is not part of the first column's name
    bom.write_bytes(b"\xef\xbb\xbfdoc,claim,label\nx.,r: v,1\n")
    assert [(p.premise, p.label) for p in read_pairs(bom)] == [("x.", 1)]


def test_every_bad_row_at_once(tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = json.dumps({"doc": "x.", "claim": "r: v", "label": 1})
    bad.write_text(
        "\n".join([json.dumps({"doc": None, "claim": "r: v", "label": 1}), good, json.dumps({"doc": "x.", "claim": "r", "label": 7}), "{oops"]) + "\n"
    )
    errors = [f"{bad}:1: field 'doc' is null: text is required", f"{bad}:3: field 'label': 0 or 1 (or entailment/not_entailment), got 7"]
    errors.append(f"{bad}:4: not JSON (Expecting property name enclosed in double quotes)")
    assert _one_line(_run("--nli", "lexical", "--pairs", str(bad))) == f"kalma: {errors[0]} (and 2 more bad rows: --all-errors lists them)"
    res = _run("--nli", "lexical", "--pairs", str(bad), "--all-errors")
    assert res.exit_code == 1 and res.stderr.splitlines() == [*errors, "kalma: 3 bad rows; nothing was measured"]
    res = CliRunner().invoke(main, ["check", str(bad), "--kind", "pairs", "--all-errors"])
    assert res.exit_code == 1 and res.stderr.splitlines() == errors and res.stdout.strip() == f"{bad}: 1 good row, 3 bad rows"
    res = CliRunner().invoke(main, ["check", str(BUNDLED), "--kind", "pairs"])
    assert res.exit_code == 0 and res.stdout.strip() == f"{BUNDLED}: {len(read_pairs(BUNDLED))} good rows, 0 bad rows"


def test_a_table_that_skips_leaves_its_unjudged_pairs_out_and_counts_them(tmp_path):
    """`table:FILE,unjudged=skip`: a pair the table lacks is neither a correct nor a wrong "no": the
    figures are over the judged pairs, the report counts the others, and no file holds a NaN."""
    pairs, spec = _files(tmp_path)
    table = spec.removeprefix("table:")
    kept = Path(table).read_text().splitlines()
    Path(table).write_text("\n".join(kept[:4] + kept[5:]) + "\n")  # dataset b's 0.2 "no", judged right, is not in the table
    said = _one_line(_run("--nli", spec, "--pairs", str(pairs)))
    assert "no judgement for premise 'He was a painter.'" in said and f"give `--nli {spec},unjudged=skip`" in said and "--metrics" not in said
    res = _run("--nli", f"{spec},unjudged=skip", "--pairs", str(pairs), "--resamples", "50", "-o", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    assert "- pairs: 6 from" in res.output and "- unjudged: 1 pairs the judge gave no judgement, left out of every figure" in res.output
    report = json.loads((tmp_path / "out" / "judge.json").read_text())["judges"][0]
    # b without its right "no": positive 0.7 yes (recall 1), negative 0.55 yes (recall 0) -> 1/2, not 3/4
    assert report["balanced_accuracy"]["b"]["point"] == pytest.approx(0.5) and report["unjudged_pairs"] == 1 and report["pairs"] == 6
    assert report["confusion"]["b"] == {"true_positive": 1, "false_negative": 0, "false_positive": 1, "true_negative": 0}
    rows = [json.loads(line) for line in (tmp_path / "out" / "scores.jsonl").read_text().splitlines()]  # json.loads reads NaN: refuse it
    assert [r["probability"] for r in rows if "predicted" not in r] == [None]
    assert "NaN" not in (tmp_path / "out" / "scores.jsonl").read_text() + (tmp_path / "out" / "judge.json").read_text()


# dataset a (3 supported, 1 not) and b (1 supported, 2 not): their mean balanced accuracy and the
# pooled one differ; one pair sits exactly at the threshold; labels in the spellings files use
TWO = [
    ("a", "She was born in Rome.", "place of birth: Rome", "entailment", 0.9, "direct"),
    ("a", "Rome was her birthplace.", "place of birth: Rome", "Entailment", 0.5, "direct"),  # P = threshold: supported
    ("a", "She was not born in Naples.", "place of birth: Rome", "1", 0.2, "negation"),
    ("a", "She was not born in Rome.", "place of birth: Rome", "not_entailment", 0.1, "negation"),
    ("b", "He never painted.", "occupation: painter", "false", 0.7, "negation"),
    ("b", "He did not write.", "occupation: writer", "not entailment", 0.3, "negation"),
    ("b", "He painted.", "occupation: painter", "true", 0.8, "direct"),
]


def test_overall_is_the_mean_over_datasets_and_p_at_the_threshold_is_supported(tmp_path):
    pairs, table = tmp_path / "pairs.jsonl", tmp_path / "table.jsonl"
    pairs.write_text("".join(json.dumps({"premise": p, "hypothesis": h, "label": y, "dataset": d, "kind": k}) + "\n" for d, p, h, y, _, k in TWO))
    table.write_text("".join(json.dumps({"premise": p, "hypothesis": h, "probability": x}) + "\n" for _, p, h, _, x, _ in TWO))
    res = _run("--nli", f"table:{table}", "--pairs", str(pairs), "--resamples", "50", "-o", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "out" / "judge.json").read_text())["judges"][0]
    ba = {k: v["point"] for k, v in report["balanced_accuracy"].items()}
    a, b = 0.5 * (2 / 3 + 1), 0.5 * (1 + 1 / 2)  # a: 0.9 and 0.5 (at the threshold) supported, 0.2 not; b: 0.7 wrongly supported
    assert ba == pytest.approx({"a": a, "b": b, "overall": (a + b) / 2})
    assert (a + b) / 2 != pytest.approx(0.5 * (3 / 4 + 2 / 3))  # the pooled figure, which LLM-AggreFact does not report
    assert {k: (v["correct"], v["pairs"]) for k, v in report["accuracy_by_kind"].items()} == {"direct": (3, 3), "negation": (2, 4)}
    assert report["accuracy_by_kind"]["negation"]["accuracy"]["point"] == pytest.approx(0.5)
    scores = [json.loads(line) for line in (tmp_path / "out" / "scores.jsonl").read_text().splitlines() if '"probability"' in line]
    assert [s["label"] for s in scores] == [1, 1, 1, 0, 0, 0, 1] and scores[1]["predicted"] == 1


@pytest.mark.parametrize(
    "label,read",
    [(1, 1), (1.0, 1), ("1", 1), (True, 1), ("true", 1), ("TRUE", 1), ("entailment", 1), (" Entailment ", 1), ("entailed", 1), ("supported", 1), ("yes", 1)]
    + [(0, 0), (0.0, 0), ("0", 0), (False, 0), ("false", 0), ("not_entailment", 0), ("not entailment", 0), ("unsupported", 0), ("no", 0)],
)
def test_every_spelling_of_a_label_the_docs_accept(tmp_path, label, read):
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"premise": "x.", "hypothesis": "r: v", "label": label}) + "\n")
    assert [p.label for p in read_pairs(f)] == [read]


def test_the_tuning_grid_is_every_hundredth_from_001_to_099():
    from evaluation.judge_quality import tune

    # the development pairs are separated only at the grid's first, a middle and its last threshold
    assert tune([1, 0], [0.015, 0.005]) == (0.01, 1.0)
    assert tune([1, 0], [0.375, 0.365]) == (0.37, 1.0)
    assert tune([1, 0], [0.995, 0.985]) == (0.99, 1.0)
    assert tune([1, 0], [0.425, 0.415]) == (0.42, 1.0)  # an even hundredth: a grid in steps of 0.02 misses it


def test_judge_md_names_what_ran(tmp_path):
    """judge.md ends with each judge as it ran: the rule-based one said so, a table by its bytes' digest."""
    import hashlib

    truth = tmp_path / "truth.jsonl"
    truth.write_text("".join(json.dumps({"premise": p.premise, "hypothesis": p.hypothesis, "label": p.label}) + "\n" for p in read_pairs(BUNDLED)))
    res = CliRunner().invoke(main, ["judge", "evaluate", "--nli", "lexical", "--nli", f"table:{truth}", "--resamples", "0", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "out" / "judge.md").read_text()
    digest = hashlib.sha256(truth.read_bytes()).hexdigest()[:12]
    assert "- `lexical`: weights none: rule-based; dtype n/a on n/a" in text and f"- `table:{truth}`: weights table sha256 {digest}; dtype n/a on n/a" in text
