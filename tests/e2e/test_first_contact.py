"""The README followed by a new user, offline (fourth pass): each rough edge found, through the CLI."""

from __future__ import annotations

import csv
import json

from click.testing import CliRunner

from evaluation.human.units import Sample
from kalma.cli import main
from kalma.jsonl import read_jsonl
from kalma.schema import DatasetEntry


def _run(args: list[str]):
    return CliRunner().invoke(main, args)


def test_every_wrong_field_of_a_line_is_named(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"model": "x"}\n{"entry_id": "e", "text": "t"}\n')
    res = _run(["check", str(tmp_path / "a.jsonl"), "--kind", "answers", "--all-errors"])
    assert res.exit_code == 1
    assert res.stderr.strip() == f"{tmp_path / 'a.jsonl'}:1: field 'entry_id': Field required; field 'text': Field required"
    assert res.stdout.strip() == f"{tmp_path / 'a.jsonl'}: 1 good record, 1 bad line"


def test_an_unknown_entry_id_gets_the_nearest_known_one(tmp_path, dataset):
    (tmp_path / "a.jsonl").write_text('{"entry_id": "demo_crane", "text": "Born in Newark [NA]."}\n')
    res = _run(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "e")])
    assert res.exit_code == 1 and "no answer could be read (1 unknown entry id;" in res.stderr
    summary_less = not (tmp_path / "e").exists()
    (tmp_path / "b.jsonl").write_text('{"entry_id": "demo_crane", "text": "x"}\n{"entry_id": "demo-crane", "text": "y"}\n')
    res = _run(["evaluate", "--dataset", str(dataset), "--answers", str(tmp_path / "b.jsonl"), "-o", str(tmp_path / "f")])
    notes = json.loads((tmp_path / "f" / "summary.json").read_text())["notes"]
    assert summary_less and any("unknown entry id 'demo_crane' (not in the dataset); did you mean 'demo-crane'?; answer skipped" in n for n in notes)
    assert res.exit_code == 1 and "1 unknown entry id; every valid answer was scored" in res.stderr


def test_two_plain_answers_files_are_two_models_and_annotators_read_relation_labels(tmp_path, dataset):
    """`--answers NAME=FILE` names the model of a plain file; a citation written with a PID
    (`P106: painter`) reaches annotators as `occupation: painter`."""
    entry = next(e for e in read_jsonl(dataset, DatasetEntry) if e.id == "demo-gentileschi")
    text = "Artemisia Gentileschi was a painter [Q212657, P106: painter]. Her father was Orazio [Q212657, father: Orazio Gentileschi]."
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"entry_id": entry.id, "text": text}) + "\n")
    args = ["human", "sample", "--dataset", str(dataset), "--answers", f"model-a={tmp_path / 'a.jsonl'}", "--answers", f"model-b={tmp_path / 'b.jsonl'}"]
    res = _run([*args, "-o", str(tmp_path / "s.jsonl")])
    assert res.exit_code == 0, res.output
    assert "model-a: 2 of 2 pairs, model-b: 2 of 2 pairs" in res.stdout
    assert sorted({u.model for u in Sample.read(tmp_path / "s.jsonl").units}) == ["model-a", "model-b"]
    assert _run(["human", "export", str(tmp_path / "s.jsonl"), "-o", str(tmp_path / "ann")]).exit_code == 0
    shown = {r["knowledge"] for r in csv.DictReader((tmp_path / "ann" / "annotate.csv").open(encoding="utf-8-sig"))}
    assert shown == {"Artemisia Gentileschi (Q212657), occupation: painter", "Artemisia Gentileschi (Q212657), father: Orazio Gentileschi"}
    res = _run(["human", "sample", "--dataset", str(dataset), "--answers", f"model-a={tmp_path / 'none.jsonl'}", "-o", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2 and f"no such file: '{tmp_path / 'none.jsonl'}'" in res.stderr


def test_human_score_takes_no_cache():
    res = _run(["human", "score", "--help"])
    assert res.exit_code == 0 and "--no-cache" in res.stdout
