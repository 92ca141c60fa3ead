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
        f"name them (--annotator {mine}#1=NAME --annotator {other}#1=OTHER), or export with e-mails (README); if one person, give her work once"
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
