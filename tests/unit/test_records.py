"""Records and JSONL I/O: validation, line-numbered errors, lenient reading, torn tails."""

from __future__ import annotations

import json

import pytest

from kalma.jsonl import JsonlWriter, RecordError, read_jsonl, write_jsonl
from kalma.schema import Answer, DatasetEntry, EntityGraph, KnowledgeGraph, Triple


def _triple(v: str = "Rome") -> Triple:
    return Triple(subject="Q212657", subject_label="Artemisia Gentileschi", relation="P19", relation_label="place of birth", value="Q220", value_label=v)


def test_triple_validation_names_the_bad_field():
    with pytest.raises(ValueError, match="subject"):
        Triple(subject="212657", relation="P19", relation_label="x", value="Q1", value_label="y")
    with pytest.raises(ValueError, match="relation"):
        Triple(subject="Q1", relation="19", relation_label="x", value="Q1", value_label="y")


def test_multi_valued_properties_are_kept():
    g = EntityGraph(
        qid="Q1",
        label="A",
        triples=[
            Triple(subject="Q1", relation="P106", relation_label="occupation", value="Q1028181", value_label="painter"),
            Triple(subject="Q1", relation="P106", relation_label="occupation", value="Q483501", value_label="artist"),
        ],
    )
    kg = KnowledgeGraph(entities=[g])
    assert len(kg.triples()) == 2 and {t.relation_label for t in kg.triples()} == {"occupation"}


def test_round_trip_with_header(tmp_path):
    path = tmp_path / "answers.jsonl"
    answers = [Answer(entry_id=f"e{i}", text=f"t{i}", model="template", seed=i) for i in range(3)]
    write_jsonl(path, answers, kind="answers", provenance={"seed": 1})
    res = read_jsonl(path, Answer, kind="answers")
    assert res.records == answers and res.header["provenance"]["seed"] == 1 and res.lines == [2, 3, 4]


def _bad_file(tmp_path):
    path = tmp_path / "answers.jsonl"
    good = [Answer(entry_id=f"e{i}", text="x", model="m").model_dump_json() for i in range(5)]
    lines = [json.dumps({"kalma": {"kind": "answers", "format_version": 1}})] + good[:2]
    lines += ['{"entry_id": "e9", "text": 7, "model": "m"}', '{"entry_id": "broken" ', good[2], good[3], good[4]]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_strict_reader_names_file_line_and_field(tmp_path):
    path = _bad_file(tmp_path)
    with pytest.raises(RecordError) as ei:
        read_jsonl(path, Answer)
    err = ei.value
    assert err.line == 4 and err.field == "text" and str(path) in str(err)
    assert f"{path}:4: field 'text'" in str(err)


def test_lenient_reader_keeps_every_good_line(tmp_path):
    res = read_jsonl(_bad_file(tmp_path), Answer, strict=False)
    assert [a.entry_id for a in res.records] == ["e0", "e1", "e2", "e3", "e4"]
    assert [(e.line, e.field) for e in res.errors] == [(4, "text"), (5, "")]
    assert "invalid JSON" in str(res.errors[1])


def test_wrong_kind_and_future_version_are_refused(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"kalma": {"kind": "dataset", "format_version": 1}}) + "\n")
    with pytest.raises(RecordError, match="expected an 'answers' file"):
        read_jsonl(p, Answer, kind="answers")
    p.write_text(json.dumps({"kalma": {"kind": "answers", "format_version": 99}}) + "\n")
    with pytest.raises(RecordError, match="format version"):
        read_jsonl(p, Answer, kind="answers")


def test_append_after_a_torn_line_keeps_rows(tmp_path):
    p = tmp_path / "a.jsonl"
    with JsonlWriter(p, "answers") as w:
        w.write(Answer(entry_id="e1", text="x", model="m"))
    with p.open("a") as fh:
        fh.write('{"entry_id": "e2", "te')  # a kill mid-write
    with JsonlWriter(p, "answers", append=True) as w:
        w.write(Answer(entry_id="e2", text="y", model="m"))
    assert [a.entry_id for a in read_jsonl(p, Answer)] == ["e1", "e2"]


def test_dataset_entry_without_minimum_set():
    e = DatasetEntry(id="x", general_question="g", specific_question="s")
    assert e.minimum_set is None and e.question("general") == "g"
