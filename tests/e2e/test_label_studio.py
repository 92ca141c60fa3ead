"""`kalma human import` on what a real Label Studio (1.23.2) writes: every export format of both
tasks, captured by `python -m tests.label_studio` into tests/fixtures/label_studio; and, where
Label Studio is installed, the same capture made live and read the same way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation.human.labels import LS_USER, read_annotations
from evaluation.human.units import Label, Sample
from kalma.cli import main
from tests import label_studio as ls

FIX = ls.FIXTURES
FORMATS = ["json", "min.json", "csv", "tsv", "emails.json", "emails.min.json", "emails.csv"]


def _expected(task: str, sample: Sample) -> dict[tuple[str, str], dict]:
    """What the capture script had each annotator post, by (annotator, unit)."""
    out = {}
    for who, per in (("a", ls.ALIGN_A if task == "align" else ls.DSET_A), ("b", ls.ALIGN_B if task == "align" else ls.DSET_B)):
        for unit, lab in zip(sample.units, per):
            if task == "align":
                out[(who, unit.unit_id)] = {"supported": lab}
            else:
                necessary, authentic, natural, significant = lab
                lines = [] if necessary in (None, ["none"]) else sorted(int(x) for x in necessary)
                out[(who, unit.unit_id)] = {"authenticity": int(authentic), "naturalness": natural, "significance": significant, "necessary": lines}
    return out


def _read(task: str, fmt: str, tmp_path: Path) -> list[Label]:
    src = FIX / f"{task}.{fmt}"
    if fmt == "tsv":  # Label Studio downloads its TSV export under a .csv name
        src = Path(shutil.copyfile(src, tmp_path / f"{task}-download.csv"))
    return read_annotations(Sample.read(FIX / f"{task}.sample.jsonl"), [src])


@pytest.mark.parametrize("task", ["align", "dset"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_export_format_reads_to_what_the_annotators_posted(task, fmt, tmp_path):
    labels = _read(task, fmt, tmp_path)
    by_email = fmt.startswith("emails")
    names = {"a": "a@example.org", "b": "b@example.org"} if by_email else {"a": LS_USER + "1", "b": LS_USER + "2"}
    got = {(who, lb.unit_id): lb.labels for lb in labels for who, name in names.items() if lb.annotator == name}
    assert len(got) == len(labels) == 12
    assert got == _expected(task, Sample.read(FIX / f"{task}.sample.jsonl"))
    assert all(lb.annotation for lb in labels) and len({lb.annotation for lb in labels}) == 12  # each annotation's id, read once
    assert {lb.user for lb in labels} == ({""} if by_email else {"1", "2"})  # a user id is never taken for an e-mail


def _import(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["human", "import", *args])
    return res.exit_code, res.stdout, res.stderr


def test_one_projects_json_and_json_min_together_are_refused_in_one_line(tmp_path):
    """Read as four annotators, they gave Fleiss' kappa 0.306 where the truth is Cohen's 0.250."""
    code, _, err = _import(str(FIX / "align.sample.jsonl"), str(FIX / "align.json"), str(FIX / "align.min.json"), "-o", str(tmp_path / "l.jsonl"))
    assert code == 1 and len(err.strip().splitlines()) == 1 and not (tmp_path / "l.jsonl").exists()
    assert err.startswith(f"kalma: {FIX / 'align.min.json'}: item 1: field 'annotation_id': Label Studio annotation 7 created 2026-")
    assert "was already read from" in err and "the same annotations in two exports (e.g. one project's JSON and JSON_MIN); give each export once" in err
    code, _, err = _import(str(FIX / "dset.sample.jsonl"), str(FIX / "dset.csv"), str(FIX / "dset.emails.json"), "-o", str(tmp_path / "l.jsonl"))
    assert code == 1 and "field 'annotation_id'" in err  # ids in one, e-mails in the other: still the same annotations


def test_two_servers_user_1_is_named_or_refused(tmp_path):
    sample, mine, other = str(FIX / "align.sample.jsonl"), str(FIX / "align.json"), str(FIX / "align.second-server.json")
    code, _, err = _import(sample, mine, other, "-o", str(tmp_path / "l.jsonl"))
    assert code == 1 and err.strip() == (
        f"kalma: {other}: Label Studio user 1 also has labels in {mine}, and user ids are numbers per server: if these are two people, "
        f"name them (--annotator {mine}#1=NAME --annotator {other}#1=OTHER), or export with e-mails (docs/human-evaluation.md); "
        "if one person, give her work once"
    )
    code, out, err = _import(sample, mine, other, "--annotator", f"{other}=carol", "--annotator", f"{mine}#1=alice", "-o", str(tmp_path / "l.jsonl"))
    assert code == 0, err
    assert "wrote 18 labels by 3 annotators (alice, carol, label-studio user 2)" in out
    code, _, err = _import(sample, mine, "--annotator", f"{mine}=alice", "-o", str(tmp_path / "x.jsonl"))
    assert code == 1 and f"--annotator {mine}=alice: the file holds 2 annotators (label-studio user 1, label-studio user 2): name each" in err
    code, _, err = _import(sample, mine, "--annotator", f"{mine}#9=zoe", "-o", str(tmp_path / "x.jsonl"))
    assert code == 1 and err.strip() == f"kalma: --annotator {mine}#9=…: no Label Studio user 9 in {mine} (its users: 1, 2)"


def test_scores_from_every_format_agree(tmp_path):
    """Cohen's kappa of the two annotators (by hand: agreement 4/6, chance 20/36, kappa 0.250), the
    same from each export."""
    kappas = set()
    for fmt in ("json", "min.json", "csv", "emails.csv"):
        out = tmp_path / fmt
        code, _, err = _import(str(FIX / "align.sample.jsonl"), str(FIX / f"align.{fmt}"), "-o", str(out / "l.jsonl"))
        assert code == 0, err
        res = CliRunner().invoke(main, ["human", "score", str(FIX / "align.sample.jsonl"), str(out / "l.jsonl"), "-o", str(out / "rep")])
        assert res.exit_code == 0, res.output
        report = json.loads((out / "rep" / "human.json").read_text())
        kappas.add(round(report["overall"]["annotators"]["cohen_kappa"], 3))
    assert kappas == {0.25}


def test_a_multi_choice_left_empty_means_no_line_and_none_is_a_choice(tmp_path):
    labels = {(lb.annotator, lb.unit_id): lb.labels["necessary"] for lb in _read("dset", "json", tmp_path)}
    units = Sample.read(FIX / "dset.sample.jsonl").units
    assert labels[(LS_USER + "2", units[1].unit_id)] == []  # ticked nothing: no `necessary` result at all
    assert labels[(LS_USER + "1", units[2].unit_id)] == []  # ticked "none"
    config = (FIX.parent.parent.parent / "evaluation" / "human" / "export.py").read_text()
    assert 'choice="multiple" value="$knowledge_options" required="true"' in config


@pytest.mark.skipif(ls.missing() is not None, reason=ls.missing() or "")
def test_a_live_label_studio_writes_what_the_fixtures_hold(tmp_path):
    """The capture again, against a server started now: every format reads to the same labels."""
    with ls.server(tmp_path) as client:
        ls.capture(client, tmp_path, tmp_path / "exports")
    for task in ("align", "dset"):
        sample = Sample.read(tmp_path / "exports" / f"{task}.sample.jsonl")
        assert sample.digest == Sample.read(FIX / f"{task}.sample.jsonl").digest
        for fmt in FORMATS:
            live = read_annotations(sample, [tmp_path / "exports" / f"{task}.{fmt}"])
            fixed = _read(task, fmt, tmp_path)
            assert sorted((lb.annotator, lb.unit_id, json.dumps(lb.labels)) for lb in live) == sorted(
                (lb.annotator, lb.unit_id, json.dumps(lb.labels)) for lb in fixed
            )


def _score(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["human", "score", *args])
    return res.exit_code, res.stdout, res.stderr


def test_score_refuses_labels_files_that_one_import_would_refuse(tmp_path):
    """Labels files imported one at a time are checked across, as one import checks its exports:
    the JSON and the e-mail export of one project (read as 4 annotators, Fleiss -0.000 where the
    truth is Cohen's 0.250), and two servers' user 1 (merged into one person)."""
    sample = str(FIX / "align.sample.jsonl")
    for name in ("json", "emails.json", "second-server.json"):
        code, _, err = _import(sample, str(FIX / f"align.{name}"), "-o", str(tmp_path / f"{name}.jsonl"))
        assert code == 0, err
    code, _, err = _score(sample, str(tmp_path / "json.jsonl"), str(tmp_path / "emails.json.jsonl"), "-o", str(tmp_path / "rep"))
    assert code == 1 and len(err.strip().splitlines()) == 1 and "field 'annotation_id'" in err and "import those exports again, together" in err
    code, _, err = _score(sample, str(tmp_path / "json.jsonl"), str(tmp_path / "second-server.json.jsonl"), "-o", str(tmp_path / "rep"))
    assert code == 1 and "Label Studio user 1 also has labels in" in err and "user ids are numbers per server" in err
    assert not (tmp_path / "rep").exists()
    # named at import, the two servers' people are told apart and scored
    code, _, err = _import(
        sample, str(FIX / "align.second-server.json"), "--annotator", f"{FIX / 'align.second-server.json'}=carol", "-o", str(tmp_path / "c.jsonl")
    )
    assert code == 0, err
    code, out, err = _score(sample, str(tmp_path / "json.jsonl"), str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "rep"))
    assert code == 0, err
    assert "3 annotators" in out


def test_naming_one_user_of_a_file_keeps_the_others_id_hint(tmp_path):
    sample, mine, other = str(FIX / "align.sample.jsonl"), str(FIX / "align.json"), str(FIX / "align.second-server.json")
    code, _, err = _import(sample, mine, other, "--annotator", f"{mine}#2=eve", "-o", str(tmp_path / "l.jsonl"))
    assert code == 1 and f"kalma: {other}: Label Studio user 1 also has labels in {mine}, and user ids are numbers per server" in err


def test_an_export_with_no_rows_and_a_row_added_by_hand_are_said_as_such(tmp_path):
    sample = str(FIX / "align.sample.jsonl")
    (tmp_path / "empty.csv").write_text('"id","knowledge","sample","sentence","unit_id"\n')
    code, _, err = _import(sample, str(tmp_path / "empty.csv"), "-o", str(tmp_path / "l.jsonl"))
    said = "no row below the header (a Label Studio export of tasks no one has annotated): label the tasks first, then export again"
    assert code == 1 and err.strip() == f"kalma: {tmp_path / 'empty.csv'}:1: {said}"
    lines = (FIX / "align.csv").read_text().splitlines()
    unit = Sample.read(sample).units[0].unit_id
    added = f'99,"2","2026-11-25T17:00:00Z",9,"k","","","s","1","{unit}","2026-11-25T17:00:00Z"'
    (tmp_path / "added.csv").write_text("\n".join([*lines, added]) + "\n")
    code, _, err = _import(sample, str(tmp_path / "added.csv"), "-o", str(tmp_path / "l.jsonl"))
    assert code == 1 and f"added.csv:{len(lines) + 1}: field 'sample': empty: every exported row carries the sample's digest" in err
    assert "another sample's digest" not in err
