"""One dataset, the same knowledge, in three languages: a generated dump of people, organizations
and cities with en, fr and de labels imported with `--languages en,fr,de`; a dataset built in
English and localized to French and German (the same entry ids and minimum sets, questions with no
English word); each answered by `template` in its language, evaluated, and English compared with
French entry by entry. Then bad input: a tag that is none, a language the store does not hold, an
entity with no label in the language."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_builder.from_kg import paragraph_prompt
from kalma.cli import main
from kalma.jsonl import read_header, read_jsonl
from kalma.schema import DatasetEntry, Triple
from perf.dumpgen import write_dump
from perf.random_models import build_causal

pytest.importorskip("duckdb")
LANGS = ("en", "fr", "de")
# English words the suite's templates and prompts write, written here apart from them (not "was": German writes it): none may be
# left in a French or German question (names of entities are the KG's, in every language)
ENGLISH = {"what", "who", "which", "were", "is", "are", "connects", "known", "about", "the", "and", "of", "city", "organization", "person"}


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.output


def _entries(path: Path) -> dict[str, DatasetEntry]:
    return {e.id: e for e in read_jsonl(path, DatasetEntry, kind="dataset")}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dump and its store, an English dataset built from it, and its French and German localizations."""
    work = tmp_path_factory.mktemp("languages")
    write_dump(work / "truthy.nt", 30, "nt", seed=3, with_release=False, named_only=True, organizations=60, cities=60, languages=LANGS)
    _ok(["kg", "import", str(work / "truthy.nt"), "-o", str(work / "store"), "--languages", "en,fr,de", "--threads", "2"])
    store = f"wikidata-local:{work / 'store'}"
    _ok(["records", "from-kg", "--kg", store, "--classes", "Q43229,Q515", "-n", "10", "--seed", "1", "-o", str(work / "records.jsonl")])
    lm = "hf:" + str(build_causal(work / "lm"))
    _ok(["build", "--records", str(work / "records.jsonl"), "--kg", store, "--llm", "template", "--lm", lm, "--rounds", "3", "-o", str(work / "en.jsonl")])
    for lang in ("fr", "de"):
        _ok(["dataset", "localize", str(work / "en.jsonl"), "--language", lang, "--kg", store, "-o", str(work / f"{lang}.jsonl")])
    return work


def test_localizations_keep_each_entrys_id_and_minimum_set(world: Path):
    en = _entries(world / "en.jsonl")
    assert len(en) >= 8
    for lang in ("fr", "de"):
        local = _entries(world / f"{lang}.jsonl")
        header = read_header(world / f"{lang}.jsonl", "dataset")["provenance"]
        left = {x["id"] for x in header["localization"]["left_out"]}
        assert set(local) | left == set(en) and not set(local) & left and len(local) >= len(en) // 2  # every entry written or listed
        assert header["language"] == lang and header["source_dataset"]["path"] == str(world / "en.jsonl")
        assert header["source_dataset"]["digest"].startswith("sha256:") and header["kg_version"]["languages"] == list(LANGS)
        for eid, e in local.items():
            facts = [(t.subject, t.relation, t.value) for t in e.minimum_set or ()]
            assert facts == [(t.subject, t.relation, t.value) for t in en[eid].minimum_set or ()], eid
            assert e.people == en[eid].people and e.meta["language"] == lang
            labels = {t.relation_label for t in e.minimum_set or ()}
            assert not labels & {t.relation_label for t in en[eid].minimum_set or ()} - {"Commons category"}  # the language's own property labels
            for q in (e.general_question, e.specific_question):
                assert not re.search(r"\bQ[0-9]+\b", q), (lang, q)  # no entity named by its id
                assert not {w.lower() for w in re.findall(r"[A-Za-z]+", q)} & ENGLISH - _names(e), (lang, q)


def _names(e: DatasetEntry) -> set[str]:
    """The words of the entry's own names and values (the KG's labels): not template words."""
    words = {g.label for g in e.knowledge_pool.entities} | {t.value_label for t in e.minimum_set or ()}
    return {w.lower() for name in words for w in re.findall(r"[A-Za-z]+", name)}


@pytest.fixture(scope="module")
def evaluated(world: Path) -> Path:
    """Each language's dataset answered by `template` (in its language) and evaluated."""
    for lang in LANGS:
        _ok(["answer", "--dataset", str(world / f"{lang}.jsonl"), "--llm", "template", "--retrieval", "gold", "-o", str(world / f"ans-{lang}.jsonl")])
        _ok(
            [
                "evaluate",
                "--dataset",
                str(world / f"{lang}.jsonl"),
                "--answers",
                str(world / f"ans-{lang}.jsonl"),
                "--resamples",
                "200",
                "-o",
                str(world / f"ev-{lang}"),
            ]
        )
    return world


def test_each_language_answered_evaluated_and_compared_entry_by_entry(evaluated: Path):
    world = evaluated
    for lang in LANGS:
        answers = [json.loads(x) for x in (world / f"ans-{lang}.jsonl").read_text().splitlines()]
        assert answers[0]["kalma"]["provenance"]["language"] == lang
        if lang != "en":  # the prompt and template's sentences in the language: no English possessive
            assert answers[1:] and not any("'s " in a["text"] for a in answers[1:]), answers[1]["text"]
        summary = json.loads((world / f"ev-{lang}" / "summary.json").read_text())
        assert summary["finished"] and summary["language"] == lang
        for metric in ("citation", "alignment", "na"):  # every figure the offline run computes, each with its interval
            figures = {k: v for k, v in summary["metrics"][metric].items() if v is not None}
            assert figures, (lang, metric, summary["unavailable"].get(metric))
            assert all(summary["intervals"][metric][k]["low"] is not None for k in figures), (lang, metric)
            assert all(k in summary["unavailable"][metric] for k, v in summary["metrics"][metric].items() if v is None), (lang, metric)  # n/a, and why
    out = _ok(["compare", str(world / "ev-en"), str(world / "ev-fr"), "--resamples", "200"])
    assert "the languages differ: A is in en, B in fr" in out and "measures the language alone" in out
    fr = len(_entries(world / "fr.jsonl"))
    assert f"Over {fr:,} entries" in out  # paired over the entries French kept


def test_compare_still_refuses_two_datasets_that_are_not_localizations_of_one_another(evaluated: Path, tmp_path: Path):
    world = evaluated
    other = tmp_path / "other.jsonl"
    lines = (world / "fr.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines[1:]]
    rows[0]["minimum_set"] = rows[0]["minimum_set"][:1] + rows[0]["minimum_set"][2:] or rows[0]["minimum_set"]
    rows[0]["minimum_set"][0]["value"] = "Q1"  # another fact
    other.write_text("\n".join([lines[0], *(json.dumps(r, ensure_ascii=False) for r in rows)]) + "\n")
    _ok(["answer", "--dataset", str(other), "--llm", "template", "--retrieval", "gold", "-o", str(tmp_path / "ans.jsonl")])
    _ok(["evaluate", "--dataset", str(other), "--answers", str(tmp_path / "ans.jsonl"), "--resamples", "0", "-o", str(tmp_path / "ev")])
    res = CliRunner().invoke(main, ["compare", str(world / "ev-en"), str(tmp_path / "ev"), "--resamples", "100"])
    assert res.exit_code != 0 and "has another minimum set on each side" in res.output and "Traceback" not in res.output


def test_evaluations_made_with_relative_paths_are_compared_from_another_folder(evaluated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The dataset an evaluation scored is recorded whole, so `kalma compare` run elsewhere reads it
    back and finds two localizations; a dataset it cannot read is named, not called another one."""
    monkeypatch.chdir(evaluated)
    for lang in ("en", "fr"):
        _ok(["evaluate", "--dataset", f"{lang}.jsonl", "--answers", f"ans-{lang}.jsonl", "--resamples", "0", "-o", str(tmp_path / lang)])
    monkeypatch.chdir(tmp_path)
    assert "the languages differ: A is in en, B in fr" in _ok(["compare", "en", "fr", "--resamples", "100"])
    scores = tmp_path / "fr" / "scores.jsonl"
    lines = scores.read_text().splitlines(keepends=True)
    scores.write_text(lines[0].replace(json.dumps(str(evaluated / "fr.jsonl"))[1:-1], "moved/fr.jsonl") + "".join(lines[1:]))
    res = CliRunner().invoke(main, ["compare", "en", "fr", "--resamples", "100"])
    assert res.exit_code != 0 and "moved/fr.jsonl cannot be read from here" in res.output, res.output


def test_answers_in_another_language_than_the_dataset_are_refused_lenient_or_not(evaluated: Path, tmp_path: Path):
    """English answers on the French dataset share its entry ids: refused in one line naming both
    languages, not scored by French rules, with --lenient too."""
    for lenient in ([], ["--lenient"]):
        args = ["evaluate", "--dataset", str(evaluated / "fr.jsonl"), "--answers", str(evaluated / "ans-en.jsonl"), *lenient, "-o", str(tmp_path / "ev")]
        _fails(args, "ans-en.jsonl is in en (its header's language)", "fr.jsonl in fr")
        assert not (tmp_path / "ev").exists()
    head, *rows = (evaluated / "ans-fr.jsonl").read_text().splitlines(keepends=True)
    header = json.loads(head)
    header["kalma"]["provenance"]["language"] = "FR"  # the same language, spelled otherwise: scored
    (tmp_path / "fr-upper.jsonl").write_text(json.dumps(header) + "\n" + "".join(rows))
    _ok(["evaluate", "--dataset", str(evaluated / "fr.jsonl"), "--answers", str(tmp_path / "fr-upper.jsonl"), "--resamples", "0", "-o", str(tmp_path / "ev")])


def test_the_board_gives_each_language_its_table_and_each_row_its_language(evaluated: Path, tmp_path: Path):
    """Submissions on the localizations of one dataset: a table per language, titled with it, and a
    language column in the CSV, so a reader filters the rows of one language without parsing titles."""
    world, board = evaluated, tmp_path / "board"
    for lang in LANGS:
        args = ["bench", "submit", str(world / f"ans-{lang}.jsonl"), "--dataset", str(world / f"{lang}.jsonl"), "--leaderboard", str(board)]
        _ok([*args, "--name", f"template-{lang}", "--model", "template", "--metrics", "citation"])
    _ok(["leaderboard", str(board), "-o", str(tmp_path / "site")])
    rows = {r["submission"]: r for r in csv.DictReader((tmp_path / "site" / "leaderboard.csv").open(encoding="utf-8"))}
    assert {lang: rows[f"template-{lang}"]["language"] for lang in LANGS} == {lang: lang for lang in LANGS}
    assert len({rows[f"template-{lang}"]["dataset"] for lang in LANGS}) == 3  # never ranked against another language's questions
    titles = [x for x in (tmp_path / "site" / "leaderboard.md").read_text().splitlines() if x.startswith("## ") and "questions" in x]
    assert sorted(t.split("(")[1].split(",")[0] for t in titles if "(in " in t) == ["in de", "in fr"] and not any("(in en" in t for t in titles)


def _fails(args: list[str], *said: str) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code != 0, res.output
    assert len(res.output.strip().splitlines()) == 1 and all(s in res.output for s in said), res.output


def test_bad_input_is_one_line_and_writes_nothing(world: Path, tmp_path: Path):
    store = f"wikidata-local:{world / 'store'}"
    out = tmp_path / "x.jsonl"
    _fails(["dataset", "localize", str(world / "en.jsonl"), "--language", "fr!", "--kg", store, "-o", str(out)], "'fr!' is not a language tag", "--language")
    _fails(["build", "--records", str(world / "records.jsonl"), "--kg", store, "--language", "français", "-o", str(out)], "is not a language tag")
    _fails(
        ["dataset", "localize", str(world / "en.jsonl"), "--language", "es", "--kg", store, "-o", str(out)],
        str(world / "store"),
        "holds labels in en, fr, de, not es",
    )
    _fails(["records", "from-kg", "--kg", store, "--classes", "Q515", "--language", "es", "-o", str(out)], "not es", "--languages en,fr,de,es")
    _fails(["dataset", "localize", str(world / "fr.jsonl"), "--language", "fr", "--kg", store, "-o", str(out)], "already in fr")
    assert not out.exists() and not list(tmp_path.iterdir())
    lines = (world / "fr.jsonl").read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0].replace('"language": "fr"', '"language": "fr_!!"', 1) + "".join(lines[1:]))
    for command in (
        ["answer", "--dataset", str(bad), "--llm", "template", "-o", str(out)],
        ["evaluate", "--dataset", str(bad), "--answers", str(world / "fr.jsonl"), "-o", str(out)],
        ["dataset", "check", str(bad), "--kg", store],
    ):
        _fails(command, f"{bad}:1: field 'language': 'fr_!!' is not a language tag")  # the file named, not an option never given
    assert not out.exists()


def test_an_entity_without_a_label_in_the_language_is_named_and_its_entry_left_out(world: Path, tmp_path: Path):
    header = read_header(world / "de.jsonl", "dataset")["provenance"]
    res = CliRunner().invoke(
        main,
        ["dataset", "localize", str(world / "en.jsonl"), "--language", "de", "--kg", f"wikidata-local:{world / 'store'}", "-o", str(tmp_path / "de.jsonl")],
    )
    said = [line for line in res.stderr.splitlines() if line.startswith("left out ")]
    gone = header["localization"]["left_out"]
    assert gone, "the dump leaves some entities without a German label"
    assert all(re.search(r"Q[0-9]+( \(named by the questions\))? has no label in de or mul \(--label-fallback en allows English\)", x["reason"]) for x in gone)
    assert len(said) == len(gone) and all(f"left out {x['id']}: {x['reason']}" in said for x in gone)
    allowed = tmp_path / "de-en.jsonl"
    _ok(
        [
            "dataset",
            "localize",
            str(world / "en.jsonl"),
            "--language",
            "de",
            "--label-fallback",
            "en",
            "--kg",
            f"wikidata-local:{world / 'store'}",
            "-o",
            str(allowed),
        ]
    )
    made = read_header(allowed, "dataset")["provenance"]
    assert made["label_fallback"] == "en" and made["labels_from_fallback"] > 0 and len(_entries(allowed)) > len(_entries(world / "de.jsonl"))


def test_records_from_kg_writes_its_paragraphs_in_the_language(world: Path, tmp_path: Path):
    store = f"wikidata-local:{world / 'store'}"
    _ok(["records", "from-kg", "--kg", store, "--classes", "Q43229,Q515", "-n", "6", "--seed", "1", "--language", "fr", "-o", str(tmp_path / "fr.jsonl")])
    paragraphs = [json.loads(line)["paragraph"] for line in (tmp_path / "fr.jsonl").read_text(encoding="utf-8").splitlines()[1:]]
    assert len(paragraphs) == 6
    for text in paragraphs:
        assert not {w.lower() for w in re.findall(r"[^\W\d_]+", text)} & ENGLISH, text
    assert any(" est " in p or " a " in p for p in paragraphs), paragraphs  # French sentences, not only French labels
    # English asks as it always did (the prompt's bytes are the fingerprint of every English record)
    t = Triple(subject="Q1", subject_label="A", relation="P17", relation_label="country", value="Q2", value_label="B")
    assert paragraph_prompt([t])[0]["content"] == (
        "Task: records-paragraph\nWrite a short encyclopedic paragraph that states every fact listed (QID | entity | relation | value), "
        "and nothing else. Reply with the paragraph only.\n\nFacts:\nQ1 | A | country | B\n\nParagraph:"
    )


def test_a_localized_dataset_is_checked_and_refreshed_in_its_own_language(world: Path, tmp_path: Path):
    """Against the store it was localized from, every entry of fr.jsonl holds (its labels compared
    with French labels, not English ones) and a refresh writes it unchanged, though it has no build
    settings; a store without French is refused in one line."""
    store = f"wikidata-local:{world / 'store'}"
    for lang in ("fr", "de"):
        res = CliRunner().invoke(main, ["dataset", "check", str(world / f"{lang}.jsonl"), "--kg", store])
        assert res.exit_code == 0 and "0 stale" in res.output and "0 broken" in res.output, res.output
        out = tmp_path / f"{lang}-refreshed.jsonl"
        _ok(["dataset", "refresh", str(world / f"{lang}.jsonl"), "--kg", store, "-o", str(out)])
        assert out.read_bytes() == (world / f"{lang}.jsonl").read_bytes()
    # a name as an older dump had it: the entry is stale, and a localization has no build settings
    # to rebuild it with: one line naming the dataset to refresh and localize again
    head, *rows = (world / "fr.jsonl").read_text().splitlines(keepends=True)
    entry = json.loads(rows[0])
    person = next(g for g in entry["knowledge_pool"]["entities"] if g["qid"] == entry["people"][0])
    person["label"] += " (ancien)"
    (tmp_path / "older.jsonl").write_text(head + json.dumps(entry, ensure_ascii=False) + "\n" + "".join(rows[1:]))
    _fails(
        ["dataset", "refresh", str(tmp_path / "older.jsonl"), "--kg", store, "-o", str(tmp_path / "never.jsonl")],
        f"{tmp_path / 'older.jsonl'}:1: field 'config': the header records no build settings, so its 1 stale entries cannot be rebuilt",
        f"refresh {world / 'en.jsonl'}, which it was localized from, and localize that again",
    )
    assert not (tmp_path / "never.jsonl").exists()
    _ok(["kg", "import", str(world / "truthy.nt"), "-o", str(tmp_path / "en-only"), "--languages", "en", "--threads", "2"])
    _fails(["dataset", "check", str(world / "fr.jsonl"), "--kg", f"wikidata-local:{tmp_path / 'en-only'}"], "holds labels in en, not fr")
