"""`kalma human` through the CLI: sample from two answers files, export for annotators (CSV and
Label Studio), read three annotators' work back, score against hand-computed figures, feed the
majority back as `table:` entailment; and every bad input in one line, nothing written."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from evaluation.human.units import Sample
from kalma.cli import main
from kalma.jsonl import write_jsonl
from kalma.kg import open_source

# Hand-labelled units 1-4 (model A) and 5-8 (model B); figures in tests/unit/test_human_agreement.py
ALICE, BOB, CAROL = [1, 1, 1, 1, 0, 0, 1, 0], [1, 1, 1, 0, 0, 0, 1, 1], [1, 1, 0, 1, 0, 1, 1, 0]


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """A dataset; model A's answers (the template filler: every sentence states what it cites);
    model B's, a plain file of entry_id, text and model whose four cited sentences say nothing of
    what they cite, and whose other answers cite nothing."""
    root = tmp_path_factory.mktemp("human")
    entries = demo_entries(open_source("demo"))
    write_jsonl(root / "dataset.jsonl", entries, "dataset")
    _ok(["answer", "--dataset", str(root / "dataset.jsonl"), "--retrieval", "gold", "-o", str(root / "a.jsonl")])
    lines = []
    for i, e in enumerate(entries):
        t1, t2 = e.knowledge_pool.entities[0].triples[:2]
        text = f"He liked music [{t1.subject}, {t1.relation_label}: {t1.value_label}]. It rained [{t2.subject}, {t2.relation_label}: {t2.value_label}]."
        lines.append({"entry_id": e.id, "text": text if i < 2 else "I cannot say.", "model": "writer-b"})
    (root / "b.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def _annotate(root: Path, sample: Sample) -> dict[str, int]:
    """Alice and Bob fill the CSV (Bob leaves `annotator` empty: the file's name is taken);
    Carol works in Label Studio. Units are labelled by model, then unit id."""
    order = sorted(sample.units, key=lambda u: (u.model != "template", u.unit_id))
    position = {u.unit_id: i for i, u in enumerate(order)}
    rows = list(csv.DictReader((root / "ann" / "annotate.csv").open(encoding="utf-8-sig")))
    for who, labels, name in (("alice", ALICE, "alice"), ("bob", BOB, "")):
        with (root / f"{who}.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows({**r, "supported": labels[position[r["unit_id"]]], "annotator": name} for r in rows)
    tasks = json.loads((root / "ann" / "label-studio-tasks.json").read_text())
    export = [
        {
            "id": n,
            "data": t["data"],
            "annotations": [
                {
                    "id": n,
                    "completed_by": {"id": 3, "email": "carol@example.org"},
                    "was_cancelled": False,
                    "result": [
                        {"from_name": "supported", "to_name": "sentence", "type": "choices", "value": {"choices": [str(CAROL[position[t["data"]["unit_id"]]])]}}
                    ],
                }
            ],
        }
        for n, t in enumerate(tasks, start=1)
    ]
    (root / "carol.json").write_text(json.dumps(export))
    return position


@pytest.fixture(scope="module")
def annotated(made) -> Path:
    """Sampled from both answers files, exported, labelled by three annotators, imported."""
    root = made
    out = _ok(["human", "sample", "--dataset", str(root / "dataset.jsonl"), "--answers", str(root / "a.jsonl"), "--answers", str(root / "b.jsonl")]
              + ["-n", "4", "--seed", "3", "-o", str(root / "sample.jsonl")])  # fmt: skip
    assert "template: 4 of 35 pairs, writer-b: 4 of 4 pairs" in out
    sample = Sample.read(root / "sample.jsonl")
    assert len(sample.units) == 8 and {u.model for u in sample.units} == {"template", "writer-b"}

    _ok(["human", "export", str(root / "sample.jsonl"), "-o", str(root / "ann")])
    exported = (root / "ann" / "annotate.csv").read_text(encoding="utf-8-sig") + (root / "ann" / "label-studio-tasks.json").read_text()
    assert "template" not in exported and "writer-b" not in exported and "He liked music." in exported  # blinded, sentences shown
    assert 'name="supported"' in (root / "ann" / "label-studio-config.xml").read_text()

    _annotate(root, sample)
    said = _ok(["human", "import", str(root / "sample.jsonl"), str(root / "alice.csv"), str(root / "bob.csv"), str(root / "carol.json")]
               + ["-o", str(root / "labels.jsonl")])  # fmt: skip
    assert "wrote 24 labels by 3 annotators (alice, bob, carol@example.org)" in said
    return root


def test_sample_export_import_score_and_feed_back_as_table_entailment(annotated):
    root = annotated
    table = _ok(["human", "score", str(root / "sample.jsonl"), str(root / "labels.jsonl"), "--nli", "lexical", "-o", str(root / "report")])
    report = json.loads((root / "report" / "human.json").read_text())
    a, b = report["models"]["template"], report["models"]["writer-b"]
    assert a["auto_sampled"] == 1.0 and b["auto_sampled"] == 0.0  # lexical: the template states what it cites, B never does
    assert a["human"] == pytest.approx(0.833, abs=5e-4) and b["human"] == pytest.approx(0.417, abs=5e-4)
    assert a["gap"] == pytest.approx(0.167, abs=5e-4) and b["gap"] == pytest.approx(-0.417, abs=5e-4)
    assert a["human_majority"] == 1.0 and b["human_majority"] == 0.25 and a["ties"] == b["ties"] == 0
    assert a["gap_ci"][0] <= a["gap"] <= a["gap_ci"][1] and a["auto_all_pairs"] == 35 and a["auto_all"] == 1.0
    overall = report["overall"]
    assert overall["annotators"]["fleiss_kappa"] == pytest.approx(0.289, abs=5e-4)
    assert overall["annotators"]["krippendorff_alpha"] == pytest.approx(0.319, abs=5e-4)
    v = overall["auto_vs_majority"]
    assert v["accuracy"] == 0.875 and v["cohen_kappa"] == pytest.approx(0.75, abs=5e-4)
    assert v["confusion"] == {"both_yes": 4, "both_no": 3, "human_yes_auto_no": 1, "human_no_auto_yes": 0}
    assert "| *ChatGPT (0.5), paper* |" in table and "Fleiss' kappa 0.289 (8 units)" in table

    # two annotators: Cohen's kappa
    _ok(["human", "import", str(root / "sample.jsonl"), str(root / "alice.csv"), str(root / "bob.csv"), "-o", str(root / "two.jsonl")])
    _ok(["human", "score", str(root / "sample.jsonl"), str(root / "two.jsonl"), "-o", str(root / "report2")])
    two = json.loads((root / "report2" / "human.json").read_text())["overall"]["annotators"]
    assert two["cohen_kappa"] == pytest.approx(0.467, abs=5e-4) and two["percent"] == 0.75

    # people as the judge: model B's four pairs are all in the table; majorities 0, 0, 1, 0
    majority = root / "report" / "majority.jsonl"
    _ok(["evaluate", "--dataset", str(root / "dataset.jsonl"), "--answers", str(root / "b.jsonl"), "--metrics", "alignment"]
        + ["--nli", f"table:{majority}", "-o", str(root / "ev")])  # fmt: skip
    summary = json.loads((root / "ev" / "summary.json").read_text())
    assert summary["metrics"]["alignment"]["alignment_micro"] == 0.25 and summary["models"]["alignment"] == f"table:{majority}"

    # and a report says how the backend fared against them
    _ok(["evaluate", "--dataset", str(root / "dataset.jsonl"), "--answers", str(root / "a.jsonl")]
        + ["--metric", f"alignment:human={root / 'report' / 'human.json'}", "-o", str(root / "ev-checked")])  # fmt: skip
    caveats = json.loads((root / "ev-checked" / "summary.json").read_text())["caveats"]
    assert "Alignment checked against 24 human labels on 8 pairs (3 annotators, inter-annotator kappa 0.289): lexical" in " ".join(caveats)
    assert "agrees with the human majority on 87.5% (kappa 0.750)" in " ".join(caveats)


def test_dataset_quality_table_2(made, tmp_path):
    root = made
    _ok(["human", "sample", "--dataset", str(root / "dataset.jsonl"), "-n", "2", "-o", str(tmp_path / "s.jsonl")])
    sample = Sample.read(tmp_path / "s.jsonl")
    assert sample.task == "dataset" and len(sample.units) == 4
    _ok(["human", "export", str(tmp_path / "s.jsonl"), "-o", str(tmp_path / "ann")])
    rows = list(csv.DictReader((tmp_path / "ann" / "annotate.csv").open(encoding="utf-8-sig")))
    sizes = {u.unit_id: len(u.shown["knowledge"]) for u in sample.units}
    with (tmp_path / "dana.csv").open("w", newline="") as fh:  # authenticity 1, naturalness 4, significance 3, one line needed
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({**r, "authenticity": "1", "naturalness": "4", "significance": "3", "necessary": "1"} for r in rows)
    tasks = json.loads((tmp_path / "ann" / "label-studio-tasks.json").read_text())
    erin = [  # Label Studio: authenticity 0 on the first task only, naturalness 5, significance 1, every line ticked
        {
            "data": t["data"],
            "annotations": [
                {
                    "completed_by": 7,
                    "result": [
                        {"from_name": "authenticity", "value": {"choices": ["0" if n == 0 else "1"]}},
                        {"from_name": "naturalness", "value": {"rating": 5}},
                        {"from_name": "significance", "value": {"rating": 1}},
                        {"from_name": "necessary", "value": {"choices": [o["value"] for o in t["data"]["knowledge_options"] if o["value"] != "none"]}},
                    ],
                }
            ],
        }
        for n, t in enumerate(tasks)
    ]
    (tmp_path / "erin.json").write_text(json.dumps(erin))
    _ok(["human", "import", str(tmp_path / "s.jsonl"), str(tmp_path / "dana.csv"), str(tmp_path / "erin.json"), "-o", str(tmp_path / "l.jsonl")])
    table = _ok(["human", "score", str(tmp_path / "s.jsonl"), str(tmp_path / "l.jsonl"), "-o", str(tmp_path / "rep")])
    report = json.loads((tmp_path / "rep" / "human.json").read_text())["settings"]
    first = tasks[0]["data"]["unit_id"]
    for setting, r in report.items():
        mine = [u.unit_id for u in sample.units if u.setting == setting]
        assert r["labelled"] == 2
        assert r["authenticity"]["mean"] == pytest.approx(0.75 if first in mine else 1.0)
        assert r["naturalness"]["mean"] == 4.5 and r["significance"]["mean"] == 2.0
        assert r["relevance"]["mean"] == pytest.approx(sum((1 / sizes[u] + 1) / 2 for u in mine) / 2)
        assert r["agreement"]["naturalness"]["percent"] == 1.0 and r["agreement"]["significance"]["percent"] == 0.0  # within 1
        assert r["agreement"]["authenticity"]["annotators"] == ["dana", "label-studio user 7"]
    assert "| naturalness (5) | 4.50 |" in table and "| 4.38 |" in table  # the paper's figure beside ours


def _fails(args: list[str], *expected: str) -> str:
    """Run the CLI as a user does: one line on stderr, exit 1, no traceback."""
    res = subprocess.run([sys.executable, "-m", "kalma.cli", *args], capture_output=True, text=True, timeout=120)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1 and lines[0].startswith("kalma: "), res.stderr
    for e in expected:
        assert e in lines[0], lines[0]
    return lines[0]


def test_bad_annotation_files_fail_in_one_line_naming_file_line_and_field(annotated, tmp_path):
    root = annotated
    sample, out = str(root / "sample.jsonl"), tmp_path / "labels.jsonl"
    rows = list(csv.DictReader((root / "alice.csv").open(encoding="utf-8")))

    def variant(name: str, **second_row: str) -> str:
        """alice.csv with its second unit (line 3) changed."""
        with (tmp_path / name).open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows({**r, **(second_row if i == 1 else {})} for i, r in enumerate(rows))
        return str(tmp_path / name)

    seven = variant("seven.csv", supported="7")
    _fails(["human", "import", sample, seven, "-o", str(out)], f"{seven}:3: field 'supported': '7' is not one of 0/1")
    stray = variant("stray.csv", unit_id="u00000000000")
    _fails(["human", "import", sample, stray, "-o", str(out)], f"{stray}:3: field 'unit_id': 'u00000000000' was never sampled")
    other = variant("other.csv", sample="0123456789ab")
    _fails(["human", "import", sample, other, "-o", str(out)], f"{other}:3: field 'sample': '0123456789ab' is another sample's digest")
    again = shutil.copy(root / "alice.csv", tmp_path / "alice-again.csv")
    _fails(["human", "import", sample, str(root / "alice.csv"), str(again), "-o", str(out)], "annotator 'alice' also has labels in")
    empty = str(tmp_path / "empty.csv")
    Path(empty).write_text("")
    _fails(["human", "import", sample, empty, "-o", str(out)], f"{empty}:1: empty file")
    assert not out.exists() and not list(tmp_path.glob(".labels*"))  # nothing written, not even half

    # the dataset task: a unit labelled in part
    _ok(["human", "sample", "--dataset", str(root / "dataset.jsonl"), "-n", "1", "-o", str(tmp_path / "d.jsonl")])
    _ok(["human", "export", str(tmp_path / "d.jsonl"), "-o", str(tmp_path / "dann")])
    rows = (tmp_path / "dann" / "annotate.csv").read_text(encoding="utf-8-sig").splitlines(keepends=True)
    head = rows[0].strip().split(",")
    unit = next(iter(csv.DictReader(rows)))
    part = {**unit, "authenticity": "1", "naturalness": "4"}
    with (tmp_path / "part.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=head)
        w.writeheader()
        w.writerow(part)
    _fails(["human", "import", str(tmp_path / "d.jsonl"), str(tmp_path / "part.csv"), "-o", str(out)], "part.csv:2: field 'significance': empty")
    # labels of another sample given to score
    _fails(["human", "score", str(tmp_path / "d.jsonl"), str(root / "labels.jsonl"), "-o", str(tmp_path / "r")], "is not in", "labels of another sample")


def test_an_unlabelled_unit_is_reported_never_dropped(annotated, tmp_path):
    root = annotated
    rows = list(csv.DictReader((root / "alice.csv").open(encoding="utf-8")))
    first = rows[0]["unit_id"]
    with (tmp_path / "alice.csv").open("w", newline="", encoding="utf-8") as fh:  # the first unit left empty
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({**r, "supported": "" if i == 0 else r["supported"]} for i, r in enumerate(rows))
    res = CliRunner().invoke(main, ["human", "import", str(root / "sample.jsonl"), str(tmp_path / "alice.csv"), "-o", str(tmp_path / "l.jsonl")])
    assert res.exit_code == 0 and f"note: 1 of 8 units have no label from anyone (first: {first})" in res.stderr
    table = _ok(["human", "score", str(root / "sample.jsonl"), str(tmp_path / "l.jsonl"), "-o", str(tmp_path / "r")])
    assert f"Read first: 1 of 8 units have no label from anyone ({first})" in table


def test_a_sample_does_not_depend_on_the_order_answers_arrived(made, tmp_path):
    """`kalma answer` writes answers as they arrive: the same answers in another order are the same sample."""
    lines = (made / "a.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "shuffled.jsonl").write_text(lines[0] + "".join(reversed(lines[1:])))
    digests = []
    for name, path in (("in-order", made / "a.jsonl"), ("reversed", tmp_path / "shuffled.jsonl")):
        _ok(["human", "sample", "--dataset", str(made / "dataset.jsonl"), "--answers", str(path), "-n", "5", "-o", str(tmp_path / f"{name}.jsonl")])
        digests.append(Sample.read(tmp_path / f"{name}.jsonl").digest)
    assert digests[0] == digests[1]


def test_a_sample_finds_its_files_from_any_folder(annotated, tmp_path, monkeypatch):
    """Sampled with relative paths, scored from another folder: the automatic column over all
    pairs is still computed, not n/a."""
    root = annotated
    monkeypatch.chdir(root)
    _ok(["human", "sample", "--dataset", "dataset.jsonl", "--answers", "a.jsonl", "--answers", "b.jsonl", "-n", "4", "--seed", "3", "-o", "rel.jsonl"])
    assert Sample.read(root / "rel.jsonl").digest == Sample.read(root / "sample.jsonl").digest
    monkeypatch.chdir(tmp_path)
    _ok(["human", "score", str(root / "rel.jsonl"), str(root / "labels.jsonl"), "-o", "rep"])
    report = json.loads((tmp_path / "rep" / "human.json").read_text())
    assert report["all_pairs_note"] is None and report["models"]["template"]["auto_all"] == 1.0


def test_one_model_name_for_two_files_is_refused(made, tmp_path):
    root = made
    res = CliRunner().invoke(main, ["human", "sample", "--dataset", str(root / "dataset.jsonl"), "--answers", f"a={root / 'a.jsonl'}"]
                             + ["--answers", f"a={root / 'b.jsonl'}", "-o", str(tmp_path / "s.jsonl")])  # fmt: skip
    assert res.exit_code == 2 and "'a' names two files" in res.output and not (tmp_path / "s.jsonl").exists()


def test_the_recipes_last_step_runs_as_written(annotated, tmp_path):
    """docs/human-evaluation.md ends its recipe with an evaluation judged by people; on answers with
    more pairs than were sampled, it scores the judged ones and counts the rest, as written."""
    import shlex

    from evaluation.human.sample import alignment_pairs, load_entries
    from kalma.schema import normalize_text
    from tests.conftest import ROOT

    recipe = (ROOT / "docs" / "human-evaluation.md").read_text().split("```bash")[1].split("```")[0]
    step = next(line for line in recipe.splitlines() if line.startswith("kalma evaluate"))
    root = annotated
    _ok(["human", "score", str(root / "sample.jsonl"), str(root / "labels.jsonl"), "-o", str(root / "report-recipe")])
    for written, here in (
        (" D ", f" {root / 'dataset.jsonl'} "),
        ("model-b.jsonl", str(root / "a.jsonl")),  # the template's 35 pairs, of which people judged 4
        ("runs/human/report/", f"{root / 'report-recipe'}/"),
        ("runs/human/eval-by-people", str(tmp_path / "ev")),
    ):
        assert written in step, step
        step = step.replace(written, here)
    out = _ok(shlex.split(step)[1:])
    # the truth: the template's pairs whose (premise, hypothesis) the people's table holds
    table = {(r["premise"], r["hypothesis"]) for r in map(json.loads, (root / "report-recipe" / "majority.jsonl").read_text().splitlines())}
    pairs = list(alignment_pairs(root / "a.jsonl", load_entries(root / "dataset.jsonl")))
    judged = sum((normalize_text(p.premise), normalize_text(p.hypothesis)) in table for p in pairs)
    assert len(pairs) == 35 and 4 <= judged < 35
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert summary["support"]["alignment"]["alignment_micro"] == judged and summary["metrics"]["alignment"]["alignment_micro"] == 1.0
    rows = [json.loads(x) for x in (tmp_path / "ev" / "scores.jsonl").read_text().splitlines()[1:]]
    assert sum(r["counts"]["alignment"].get("unjudged_pairs", 0) for r in rows) == 35 - judged
    assert "pairs without a judgement are left out" in out
    # an abstaining table is refused by a metric that counts every pair
    res = CliRunner().invoke(main, [*shlex.split(step)[1:-2], "--metrics", "alignment,na", "-o", str(tmp_path / "na")])
    assert res.exit_code == 1 and "only the alignment metric leaves out" in res.stderr
