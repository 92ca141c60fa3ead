"""Languages through the command line: English outputs the same bytes as before languages, a
written language's judge pairs in it, and `template` refusing a language it has no text in."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from click.testing import CliRunner

from kalma.cli import main

# The rows (less the header line) that `kalma dataset demo`, `kalma answer --llm template` and
# `kalma judge pairs` wrote on the demo at d85d7b1, before the suite had languages.
ENGLISH_DEMO = {
    "demo.jsonl": "b723d8aa6d0c7eaa9e4ac94772612a133cfcee4b826f67479b5162a1d3f4cddf",
    "answers.jsonl": "c702e7dbfed3fb27bdf49498cdf6c6ff3d72f04de8d34600c379856d45638c39",
    "pairs.jsonl": "28de97fc6504b31d313a16a5362e620020bfac9b6e60971645c63e1149fb4b77",
}


def _run(*args: str) -> None:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output


def _rows_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes().split(b"\n", 1)[1]).hexdigest()


def test_english_demo_dataset_answers_and_pairs_are_the_bytes_they_were(tmp_path, monkeypatch):
    monkeypatch.setenv("KALMA_CACHE", "off")
    demo = tmp_path / "demo.jsonl"
    _run("dataset", "demo", "-o", str(demo))
    _run("answer", "--dataset", str(demo), "--llm", "template", "-o", str(tmp_path / "answers.jsonl"))
    _run("judge", "pairs", "--dataset", str(demo), "-o", str(tmp_path / "pairs.jsonl"))
    assert {name: _rows_digest(tmp_path / name) for name in ENGLISH_DEMO} == ENGLISH_DEMO


def test_judge_pairs_in_french_and_the_template_refusing_an_unwritten_language(dataset, tmp_path):
    out = tmp_path / "fr.jsonl"
    _run("judge", "pairs", "--dataset", str(dataset), "--language", "fr", "--label-fallback", "en", "-o", str(out))
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["kalma"]["provenance"]["config"]["language"] == "fr"
    # the demo KG's labels are English (taken as --label-fallback en says); the sentence around them is French
    assert any(r["doc"].startswith("L'occupation d'Artemisia Gentileschi est ") for r in lines[1:]), [r["doc"] for r in lines[1:6]]
    bad = tmp_path / "pt.jsonl"
    res = CliRunner().invoke(main, ["judge", "pairs", "--dataset", str(dataset), "--language", "pt-BR", "--label-fallback", "en", "-o", str(bad)])
    assert res.exit_code != 0 and not bad.exists()
    message = res.output.strip().splitlines()
    assert message == [
        "kalma: the template backend has no sentences written in 'pt-br' (it writes en, fr, de, es): use a model backend (--llm), "
        "which is asked in English to write in pt-br"
    ]


def test_a_french_build_asks_and_answers_its_questions_in_french(tmp_path):
    """`kalma build --language fr` on a dump of organizations and cities with French labels: the
    builder's prompts, the template's questions and references in French, no English word left."""
    import pytest

    pytest.importorskip("duckdb")
    from kalma.jsonl import read_jsonl
    from kalma.schema import DatasetEntry
    from perf.dumpgen import write_dump
    from perf.random_models import build_causal
    from tests.unit.test_phrasing import english_in

    write_dump(tmp_path / "truthy.nt", 20, "nt", seed=3, with_release=False, named_only=True, organizations=40, cities=40, languages=("en", "fr"))
    _run("kg", "import", str(tmp_path / "truthy.nt"), "-o", str(tmp_path / "store"), "--languages", "en,fr", "--threads", "2")
    store = f"wikidata-local:{tmp_path / 'store'}"
    _run("records", "from-kg", "--kg", store, "--classes", "Q43229,Q515", "-n", "4", "--seed", "1", "-o", str(tmp_path / "records.jsonl"))
    lm = "hf:" + str(build_causal(tmp_path / "lm"))
    out = tmp_path / "fr.jsonl"
    records = str(tmp_path / "records.jsonl")
    _run("build", "--records", records, "--kg", store, "--language", "fr", "--llm", "template", "--lm", lm, "--rounds", "2", "-o", str(out))
    entries = list(read_jsonl(out, DatasetEntry, kind="dataset"))
    assert entries
    for e in entries:
        assert e.general_question.startswith(("Que sait-on ", "Qu'est-ce qui relie ")), e.general_question
        assert e.specific_question.startswith("Que sait-on ") and e.specific_question.endswith(" ?"), e.specific_question
        assert not english_in(e.general_question + " " + e.specific_question), (e.general_question, e.specific_question)
