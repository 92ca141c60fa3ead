"""Datasets over time (docs/time.md): a dataset built on an OLD snapshot, checked against a NEW one
(hand-made from it, so the test knows each change), refreshed, and refreshed again."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kalma.cli import main
from kalma.jsonl import read_jsonl
from kalma.kg import demo_snapshot_path
from kalma.kg.base import render_date
from kalma.resume import path_digest
from kalma.schema import DatasetEntry
from perf.dumpgen import write_dump
from perf.evolve import evolve, read_changes
from perf.random_models import build_causal

QID = re.compile(r"Q[0-9]+")

RECORDS = Path(__file__).resolve().parents[2] / "dataset_builder" / "data" / "demo_records.jsonl"
# what NEW changes of OLD: a label, a value, a fact removed; NEW_DELETED also deletes an entity
RENAMED = {"Q220": ("Rome", "Roma")}
CHANGED = {("Q6439494", "P19"): ("Madrid", "Naples")}
REMOVED = {("Q85907", "P106"): "biologist"}
DELETED = "Q68753"  # Oscar Hertwig: every line of his gone
EDITS = (
    ('wd:Q220 rdfs:label "Rome"@en', 'wd:Q220 rdfs:label "Roma"@en'),
    ("wdt:P19 wd:Q2807 ; wdt:P413 v:forward .", "wdt:P19 wd:Q2634 ; wdt:P413 v:forward ."),
    ("wdt:P106 v:biologist ; wdt:P185 v:prowazek ;", "wdt:P185 v:prowazek ;"),
)


def _new_snapshot(old: Path, new: Path, delete: bool = False) -> None:
    text = old.read_text()
    for before, after in EDITS:
        assert text.count(before) == 1
        text = text.replace(before, after)
    if delete:
        start = text.index(f"wd:{DELETED} rdfs:label")
        text = text[:start] + text[text.index(" .\n", start) + 3 :]
        assert f"wd:{DELETED} rdfs:label" not in text and f"wd:{DELETED} ." in text  # facts naming him as a value remain
    new.write_text(text)


def expected(entry: DatasetEntry, deleted: bool = False) -> str:
    """The rule of docs/time.md, from the changes above: broken, stale or valid."""
    named = set(entry.people) | {t.subject for t in entry.minimum_set or []} | {t.value for t in entry.minimum_set or []}
    facts = {(t.subject, t.relation, t.value_label) for t in entry.minimum_set or []}
    if DELETED in named and deleted or any((s, p) in REMOVED for s, p, _ in facts):
        return "broken"
    if named & set(RENAMED) or any((s, p, old) in facts for (s, p), (old, _) in CHANGED.items()):
        return "stale"
    return "valid"


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random causal LM, the builder's scorer: one for the module."""
    return "hf:" + str(build_causal(tmp_path_factory.mktemp("lm")))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, tiny_lm: str) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("freshness")
    old, new = work / "old.ttl", work / "new.ttl"
    shutil.copy(demo_snapshot_path(), old)
    _new_snapshot(old, new)
    _new_snapshot(old, work / "new-deleted.ttl", delete=True)
    ds = work / "ds.jsonl"
    res = CliRunner().invoke(main, ["build", "--records", str(RECORDS), "--kg", str(old), "--lm", tiny_lm, "--rounds", "1", "-o", str(ds)])
    assert res.exit_code == 0, res.output
    return {"old": old, "new": new, "deleted": work / "new-deleted.ttl", "ds": ds, "work": work}


def _check(ds: Path, kg: Path | str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(main, ["dataset", "check", str(ds), "--kg", str(kg), "--json"])
    return res.exit_code, json.loads(res.output)


def test_check_names_exactly_the_entries_the_changes_touched(world: dict[str, Any]) -> None:
    entries = list(read_jsonl(world["ds"], DatasetEntry, kind="dataset"))
    header = json.loads(world["ds"].read_text().splitlines()[0])["kalma"]["provenance"]
    assert header["kg_version"]["digest"].startswith("sha256:") and header["kg_version"]["kind"] == "rdflib"
    code, found = _check(world["ds"], world["new"])
    want = {e.id: expected(e) for e in entries}
    assert {e["id"]: e["status"] for e in found["entries"]} == want
    assert set(want.values()) == {"valid", "stale", "broken"} and code == 1  # every status is exercised
    assert found["summary"] == {"entries": len(entries), **{s: list(want.values()).count(s) for s in ("valid", "stale", "broken")}}
    kinds = {(f["kind"], f["entity"], f["pid"], f["old"], f["new"]) for e in found["entries"] for f in e["findings"]}
    for (s, p), (old, new) in CHANGED.items():
        if any(t.subject == s and t.relation == p for e in entries for t in e.minimum_set or []):
            assert ("value changed", s, p, old, new) in kinds  # a value changed: not a removal plus an addition
    assert ("label changed", "Q220", None, "Rome", "Roma") in kinds
    # an entity gone: every entry naming it broken, the finding naming it
    code, gone = _check(world["ds"], world["deleted"])
    assert {e["id"]: e["status"] for e in gone["entries"]} == {e.id: expected(e, deleted=True) for e in entries}
    assert any(f["kind"] == "deleted" and f["entity"] == DELETED for e in gone["entries"] for f in e["findings"])
    # against the KG it was built on, every entry holds
    code, same = _check(world["ds"], world["old"])
    assert code == 0 and same["summary"]["valid"] == len(entries)
    text = CliRunner().invoke(main, ["dataset", "check", str(world["ds"]), "--kg", str(world["new"])]).output
    assert re.search(r"\d+ entries: \d+ fully valid, \d+ stale .*, \d+ broken", text) and "| finding | entity | property | old | new |" in text


@pytest.fixture(scope="module")
def refreshed(world: dict[str, Any]) -> Path:
    out = world["work"] / "refreshed.jsonl"
    res = CliRunner().invoke(main, ["dataset", "refresh", str(world["ds"]), "--kg", str(world["new"]), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_refresh_keeps_valid_entries_byte_for_byte_and_a_second_refresh_changes_nothing(world: dict[str, Any], refreshed: Path) -> None:
    ds, new, work, out = world["ds"], world["new"], world["work"], refreshed
    again = work / "again.jsonl"
    old_lines = ds.read_bytes().splitlines(keepends=True)[1:]
    entries = list(read_jsonl(ds, DatasetEntry, kind="dataset"))
    status = {e.id: expected(e) for e in entries}
    got = {json.loads(line)["id"]: line for line in out.read_bytes().splitlines(keepends=True)[1:]}
    for e, line in zip(entries, old_lines):
        if status[e.id] == "valid":
            assert got[e.id] == line  # byte for byte
        elif status[e.id] == "broken":
            assert e.id not in got
    rebuilt = [e for e in entries if status[e.id] == "stale"]
    assert rebuilt and all(e.id in got and got[e.id] != line for e, line in zip(entries, old_lines) if status[e.id] == "stale")
    assert [json.loads(x)["id"] for x in out.read_bytes().splitlines()[1:]] == [e.id for e in entries if status[e.id] != "broken"]  # same ids, same order
    header = json.loads(out.read_text().splitlines()[0])["kalma"]["provenance"]
    assert header["refreshed"]["from"]["spec"] == str(world["old"]) and header["refreshed"]["kg_version"]["spec"] == str(new)
    assert "diff" not in header["refreshed"]  # made without one
    log = [json.loads(x) for x in (work / "refreshed.changelog.jsonl").read_text().splitlines()]
    assert {x["id"]: x["action"] for x in log[1:]} == {i: {"valid": "kept", "stale": "rebuilt", "broken": "dropped"}[s] for i, s in status.items()}
    assert all(x["why"].startswith("broken (") for x in log[1:] if x["action"] == "dropped")
    code, checked = _check(out, new)
    assert code == 0, checked  # the refreshed dataset holds in NEW
    res = CliRunner().invoke(main, ["dataset", "refresh", str(out), "--kg", str(new), "-o", str(again)])
    assert res.exit_code == 0 and again.read_bytes() == out.read_bytes()


def _mentions(sentence: str, value: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", sentence.lower()) is not None


def test_answers_from_the_old_kg_count_their_outdated_claims_exactly(world: dict[str, Any], refreshed: Path, tmp_path: Path) -> None:
    """Each answer states its entry's OLD minimum set twice, cited then uncited, and once more
    marked [NA]: every sentence stating what OLD held and the refreshed entry's knowledge does not
    is an outdated claim, cited or not; the [NA] one is not."""
    old_entries = {e.id: e for e in read_jsonl(world["ds"], DatasetEntry, kind="dataset")}
    new_entries = list(read_jsonl(refreshed, DatasetEntry, kind="dataset"))
    answers, want = [], {}
    for e in new_entries:
        sentences = []
        for t in old_entries[e.id].minimum_set or []:
            cited = f"{t.subject_label}'s {t.relation_label} is {t.value_label} [{t.subject}, {t.relation_label}: {t.value_label}]."
            sentences += [cited, f"Indeed, {t.value_label}.", f"Or {t.value_label} [NA]."]
        olds = {old for (s, p), old in {**{k: v[0] for k, v in CHANGED.items()}, **REMOVED}.items() if s in e.people}
        answers.append({"entry_id": e.id, "text": " ".join(sentences), "model": "old-memory"})
        want[e.id] = sum(any(_mentions(x, v) for v in olds) for x in sentences if not x.endswith("[NA]."))
    assert sum(want.values()) >= 2, want  # the changed value is stated, cited and uncited
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    out = tmp_path / "eval"
    args = ["evaluate", "--dataset", str(refreshed), "--answers", str(path), "--previous-kg", str(world["old"]), "--resamples", "200", "-o", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()[1:]]
    assert {r["entry_id"]: r["counts"]["outdated"]["outdated"] for r in rows} == want
    summary = json.loads((out / "summary.json").read_text())
    assert "splits" not in summary  # a dataset without splits: its summary as before them
    # the figures name the KG their dataset holds true for: its refresh's, not its build's
    assert summary["provenance"]["config"]["dataset_kg"]["spec"] == str(world["new"])
    assert f"Dataset: {refreshed} (sha256:" in (out / "summary.md").read_text() and f"true of {world['new']} (" in (out / "summary.md").read_text()
    assert summary["metrics"]["outdated"]["outdated_claims"] == sum(want.values())
    assert summary["metrics"]["outdated"]["outdated_cited_rate"] == 0.5  # each cited once and stated once uncited
    bounds = summary["intervals"]["outdated"]["outdated_per_answer"]
    assert bounds["low"] <= summary["metrics"]["outdated"]["outdated_per_answer"] <= bounds["high"]
    page = (out / "verdicts.html").read_text()
    assert f"Outdated claims: {sum(want.values())} sentences" in page and page.count('<li class="k-outdated">') == sum(want.values())


def test_bad_input_ends_in_one_line(world: dict[str, Any], tmp_path: Path) -> None:
    lines = world["ds"].read_text().splitlines(keepends=True)
    head = json.loads(lines[0])
    del head["kalma"]["provenance"]["kg_version"]
    before = tmp_path / "before.jsonl"
    before.write_text(json.dumps(head) + "\n" + "".join(lines[1:]))
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(main, ["dataset", "refresh", str(before), "--kg", str(world["new"]), "-o", str(out)], standalone_mode=True)
    assert res.exit_code != 0 and "names no KG version" in res.output and "--old-kg SPEC" in res.output and not out.exists()
    res = CliRunner().invoke(main, ["dataset", "check", str(before), "--kg", str(world["old"]), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["built_on"] is None  # a check needs no version: the entries carry their facts
    res = CliRunner().invoke(main, ["dataset", "refresh", str(before), "--kg", str(world["old"]), "--old-kg", str(world["old"]), "-o", str(out)])
    assert res.exit_code == 0, res.output  # told the KG it was built on, it goes on
    assert json.loads(out.read_text().splitlines()[0])["kalma"]["provenance"]["refreshed"]["from"]["spec"] == str(world["old"])
    res = CliRunner().invoke(main, ["dataset", "check", str(world["ds"]), "--kg", f"rdflib:{world['new']},lang=fr"])
    assert res.exit_code != 0 and "labels are in en" in res.output and len(res.output.strip().splitlines()) == 1
    for command in (["dataset", "check", str(world["ds"])], ["dataset", "refresh", str(world["ds"]), "-o", str(tmp_path / "never.jsonl")]):
        res = CliRunner().invoke(main, [*command, "--kg", f"wikidata-local:{tmp_path / 'nosuch'}"])
        assert res.exit_code != 0 and res.output.strip() == f"kalma: {tmp_path / 'nosuch'}: not a local Wikidata store (no meta.json): " + (
            f"build one with `kalma kg import DUMP -o {tmp_path / 'nosuch'}`"
        ), res.output
    assert not (tmp_path / "never.jsonl").exists()
    other = tmp_path / "other.ttl"  # a KG that names none of the dataset's entities
    other.write_text('@prefix wd: <http://www.wikidata.org/entity/> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\nwd:Q1 rdfs:label "x"@en .\n')
    res = CliRunner().invoke(main, ["dataset", "refresh", str(world["ds"]), "--kg", str(other), "-o", str(tmp_path / "empty.jsonl")])
    assert res.exit_code == 0 and f"note: every entry was dropped: is {other} a later version of the KG {world['ds']} was built on?" in res.output, res.output


# ---------------------------------------------------------------- the must-show on two generated dumps


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory, tiny_lm: str) -> dict[str, Any]:
    """A dump of 60 people and a second evolved from it (15 % of its facts: enough to touch a
    dataset of 16 entries in every way), both imported; a dataset built on the first."""
    work = tmp_path_factory.mktemp("dumps")
    first, second = work / "wikidata-20260101-truthy.nt", work / "wikidata-20260201-truthy.nt"
    write_dump(first, 60, "nt", seed=4, with_release=False, named_only=True)
    evolve(first, second, 0.15, seed=3)
    for dump, store in ((first, "old"), (second, "new")):
        res = CliRunner().invoke(main, ["kg", "import", str(dump), "-o", str(work / store), "--threads", "2"])
        assert res.exit_code == 0, res.output
    old, new = f"wikidata-local:{work / 'old'}", f"wikidata-local:{work / 'new'}"
    records, ds = work / "records.jsonl", work / "ds.jsonl"
    res = CliRunner().invoke(main, ["records", "from-kg", "--kg", old, "--classes", "Q5", "-n", "16", "--seed", "1", "-o", str(records)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["build", "--records", str(records), "--kg", old, "--lm", tiny_lm, "--rounds", "1", "-o", str(ds)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["dataset", "refresh", str(ds), "--kg", new, "-o", str(work / "refreshed.jsonl")])
    assert res.exit_code == 0, res.output
    return {"work": work, "old": old, "new": new, "ds": ds, "lm": tiny_lm, "changes": read_changes(second)[1], "refreshed": work / "refreshed.jsonl"}


def listed_status(entry: DatasetEntry, changes: list[dict[str, Any]]) -> str:
    """What the generator's own list of changes makes of an entry (docs/time.md's rule)."""
    facts = {(t.subject, t.relation, t.value) for t in entry.minimum_set or []}
    named = set(entry.people) | {s for s, _, _ in facts} | {v for _, _, v in facts if QID.fullmatch(v)}
    kinds = set()
    for row in changes:
        olds = {render_date(v) for v in row["old"]}
        if row["kind"] in ("merged", "deleted") and row["subject"] in named:
            kinds.add("broken")
        elif row["kind"] in ("changed", "removed") and any((s, p) == (row["subject"], row["pid"]) and v in olds for s, p, v in facts):
            kinds.add("broken" if row["kind"] == "removed" else "stale")
        elif row["kind"] == "label" and row["lang"] == "en" and row["subject"] in named:
            kinds.add("stale")
    return "broken" if "broken" in kinds else "stale" if kinds else "valid"


def test_on_two_generated_dumps_check_names_the_touched_entries_and_refresh_keeps_the_others(dumps: dict[str, Any]) -> None:
    entries = list(read_jsonl(dumps["ds"], DatasetEntry, kind="dataset"))
    want = {e.id: listed_status(e, dumps["changes"]) for e in entries}
    assert set(want.values()) == {"valid", "stale", "broken"}, want
    code, found = _check(dumps["ds"], dumps["new"])
    assert code == 1 and {e["id"]: e["status"] for e in found["entries"]} == want
    assert found["built_on"]["dump_date"] == "2026-01-01" and found["kg"]["dump_date"] == "2026-02-01"
    merged = {r["subject"]: r["new"][0] for r in dumps["changes"] if r["kind"] == "merged"}
    said = [(f["entity"], f["new"]) for e in found["entries"] for f in e["findings"] if f["kind"] == "merged"]
    assert said and all(merged[q] == into for q, into in said)  # a merged item names the item it went into
    out, again = dumps["refreshed"], dumps["work"] / "again.jsonl"
    res = CliRunner().invoke(main, ["dataset", "refresh", str(out), "--kg", dumps["new"], "-o", str(again)])
    assert res.exit_code == 0, res.output
    lines = dict(zip([e.id for e in entries], dumps["ds"].read_bytes().splitlines(keepends=True)[1:]))
    got = {json.loads(x)["id"]: x for x in out.read_bytes().splitlines(keepends=True)[1:]}
    assert {i: got[i] for i, s in want.items() if s == "valid"} == {i: lines[i] for i, s in want.items() if s == "valid"}
    assert set(got) == {i for i, s in want.items() if s != "broken"} and all(got[i] != lines[i] for i, s in want.items() if s == "stale")
    assert again.read_bytes() == out.read_bytes()
    header = json.loads(out.read_text().splitlines()[0])["kalma"]["provenance"]["refreshed"]
    assert (header["from"]["dump_date"], header["kg_version"]["dump_date"]) == ("2026-01-01", "2026-02-01")
    assert header["from"]["digest"] != header["kg_version"]["digest"]


def test_changed_since_records_only_new_or_changed_links_and_figures_come_per_split(dumps: dict[str, Any], tmp_path: Path) -> None:
    from kalma.kg import open_source

    new_links = {(r["subject"], r["pid"], v) for r in dumps["changes"] if r["kind"] in ("changed", "added") for v in r["new"]}
    records = tmp_path / "fresh.jsonl"
    args = ["records", "from-kg", "--kg", dumps["new"], "--classes", "Q5", "-n", "6", "--unchanged", "4", "--changed-since", dumps["old"], "-o", str(records)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in records.read_text().splitlines()]
    assert lines[0]["kalma"]["provenance"]["changed_since"]["dump_date"] == "2026-01-01"
    drawn = lines[1:]
    qid = {n: q[0] for n, q in open_source(dumps["new"]).lookup({r[k] for r in drawn for k in ("person_a", "person_b")}, ["Q5"]).items()}
    for r in drawn:
        link = (qid[r["person_a"]], r["relation"], qid[r["person_b"]])
        assert (link in new_links) == (r["split"] == "changed"), (r, link)
    assert [r["split"] for r in drawn].count("changed") >= 1 and [r["split"] for r in drawn].count("unchanged") == 4
    ds = tmp_path / "fresh-ds.jsonl"
    res = CliRunner().invoke(main, ["build", "--records", str(records), "--kg", dumps["new"], "--lm", dumps["lm"], "--rounds", "1", "-o", str(ds)])
    assert res.exit_code == 0, res.output
    entries = list(read_jsonl(ds, DatasetEntry, kind="dataset"))
    split_of_line = {i: r["split"] for i, r in enumerate(drawn, start=2)}
    assert entries and all(e.meta["split"] == split_of_line[e.seed.source_line] for e in entries if e.seed and e.seed.source_line)
    answers = tmp_path / "answers.jsonl"
    text = {
        e.id: " ".join(
            f"{t.subject_label}'s {t.relation_label} is {t.value_label} [{t.subject}, {t.relation_label}: {t.value_label}]." for t in e.minimum_set or []
        )
        for e in entries
    }
    answers.write_text("".join(json.dumps({"entry_id": e.id, "text": text[e.id] if i % 2 else "Nothing."}) + "\n" for i, e in enumerate(entries)))
    res = CliRunner().invoke(main, ["evaluate", "--dataset", str(ds), "--answers", str(answers), "--resamples", "200", "-o", str(tmp_path / "eval")])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    splits = {e.meta["split"] for e in entries}
    assert set(summary["splits"]) == splits
    head, *rows = ds.read_text().splitlines(keepends=True)
    for split, found in summary["splits"].items():
        # the split's figures are those of an evaluation of its entries alone, intervals included
        mine = {e.id for e in entries if e.meta["split"] == split}
        (tmp_path / split).mkdir()
        (tmp_path / split / "ds.jsonl").write_text(head + "".join(r for r, e in zip(rows, entries) if e.id in mine))
        (tmp_path / split / "answers.jsonl").write_text("".join(x for x in answers.read_text().splitlines(keepends=True) if json.loads(x)["entry_id"] in mine))
        args = ["evaluate", "--dataset", str(tmp_path / split / "ds.jsonl"), "--answers", str(tmp_path / split / "answers.jsonl"), "--resamples", "200"]
        res = CliRunner().invoke(main, [*args, "-o", str(tmp_path / split / "eval")])
        assert res.exit_code == 0, res.output
        alone = json.loads((tmp_path / split / "eval" / "summary.json").read_text())
        assert found["entries"] == len(mine) and found["metrics"] == alone["metrics"] and found["intervals"] == alone["intervals"]
        assert set(alone["splits"]) == {split}
    # the dataset, then its evaluation, name the older KG the `changed` split is new since
    assert json.loads(head)["kalma"]["provenance"]["changed_since"] == lines[0]["kalma"]["provenance"]["changed_since"]
    older = lines[0]["kalma"]["provenance"]["changed_since"]
    assert (
        f"`changed`: knowledge new or changed since {older['spec']} (dump 2026-01-01, {older['digest'][:19]});"
        in (tmp_path / "eval" / "summary.md").read_text()
    )


def test_on_two_generated_dumps_answers_from_the_first_count_their_outdated_claims_exactly(dumps: dict[str, Any], tmp_path: Path) -> None:
    """Answers state each entry's minimum set as the first dump held it (cited, then uncited);
    evaluated against the refreshed dataset with --previous-kg, the outdated claims are the
    sentences naming a value the generator's list says changed, was removed, or lost its item."""
    from kalma.kg import open_source

    old_entries = {e.id: e for e in read_jsonl(dumps["ds"], DatasetEntry, kind="dataset")}
    refreshed = list(read_jsonl(dumps["refreshed"], DatasetEntry, kind="dataset"))
    rows = dumps["changes"]
    gone_items = {r["subject"] for r in rows if r["kind"] in ("merged", "deleted")}
    old = open_source(dumps["old"])
    people = sorted({q for e in refreshed for q in e.people})
    graphs = old.subgraphs(people)
    answers, want = [], {}
    for e in refreshed:
        rebuilt = e.model_dump_json() != old_entries[e.id].model_dump_json()
        stale_values = {
            (r["subject"], r["pid"], render_date(v)) for r in rows if r["kind"] in ("changed", "removed") and r["subject"] in e.people for v in r["old"]
        }
        labels = {t.value_label for q in e.people for t in graphs[q].triples if (q, t.relation, t.value) in stale_values or t.value in gone_items}
        sentences = []
        for t in old_entries[e.id].minimum_set or []:
            sentences += [
                f"{t.subject_label}'s {t.relation_label} is {t.value_label} [{t.subject}, {t.relation_label}: {t.value_label}].",
                f"Indeed, {t.value_label}.",
            ]
        answers.append({"entry_id": e.id, "text": " ".join(sentences)})
        want[e.id] = sum(any(_mentions(x, v) for v in labels) for x in sentences) if rebuilt else 0
    assert sum(want.values()) >= 2, want
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    args = ["evaluate", "--dataset", str(dumps["refreshed"]), "--answers", str(path), "--previous-kg", dumps["old"], "--resamples", "200"]
    res = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "eval")])
    assert res.exit_code == 0, res.output
    scored = [json.loads(x) for x in (tmp_path / "eval" / "scores.jsonl").read_text().splitlines()[1:]]
    assert {r["entry_id"]: r["counts"]["outdated"]["outdated"] for r in scored} == want


def test_check_and_refresh_with_the_diff_between_the_two_dumps_say_what_they_say_without_it(dumps: dict[str, Any], tmp_path: Path) -> None:
    """--diff: the entries the diff does not touch are valid by it; the others are asked about. The
    check's answer is the one without --diff, the refresh's output too; a diff between other KGs
    is refused in one line naming both."""
    work = dumps["work"]
    for old, new, out in (("old", "new", "diff"), ("new", "old", "back")):
        res = CliRunner().invoke(main, ["kg", "diff", str(work / old), str(work / new), "-o", str(tmp_path / out)])
        assert res.exit_code == 0, res.output
    args = ["dataset", "check", str(dumps["ds"]), "--kg", dumps["new"], "--json"]
    plain, by_diff = CliRunner().invoke(main, args), CliRunner().invoke(main, [*args, "--diff", str(tmp_path / "diff")])
    assert by_diff.exit_code == plain.exit_code == 1 and by_diff.output == plain.output
    out = tmp_path / "refreshed.jsonl"
    res = CliRunner().invoke(main, ["dataset", "refresh", str(dumps["ds"]), "--kg", dumps["new"], "--diff", str(tmp_path / "diff"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text().splitlines()[1:] == dumps["refreshed"].read_text().splitlines()[1:]  # the entries of the refresh without --diff
    used = {"path": str((tmp_path / "diff").resolve()), "digest": path_digest(tmp_path / "diff")}  # the header and the changelog say which diff
    assert json.loads(out.read_text().splitlines()[0])["kalma"]["provenance"]["refreshed"]["diff"] == used
    assert json.loads((tmp_path / "refreshed.changelog.jsonl").read_text().splitlines()[0])["kalma"]["diff"] == used
    # the diff back from NEW to OLD: its OLD is not the dataset's KG (and its NEW not --kg's)
    for cmd in (args, ["dataset", "refresh", str(dumps["ds"]), "--kg", dumps["new"], "-o", str(tmp_path / "no.jsonl")]):
        res = CliRunner().invoke(main, [*cmd, "--diff", str(tmp_path / "back")])
        assert res.exit_code != 0 and len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output, res.output
        assert "a diff whose OLD is wikidata-local:" in res.output and "the dataset is built on wikidata-local:" in res.output
    assert not (tmp_path / "no.jsonl").exists()
    # a dataset built on OLD checked against OLD itself with the OLD-to-NEW diff: its NEW is not --kg
    res = CliRunner().invoke(main, ["dataset", "check", str(dumps["ds"]), "--kg", dumps["old"], "--diff", str(tmp_path / "diff")])
    assert res.exit_code != 0 and "a diff whose NEW is" in res.output and "--kg is" in res.output and len(res.output.strip().splitlines()) == 1


def test_the_check_of_a_refreshed_dataset_says_what_it_was_refreshed_for_and_from(world: dict[str, Any], refreshed: Path) -> None:
    """Not `built on NEW`: it was built on OLD, and refreshed for NEW."""
    res = CliRunner().invoke(main, ["dataset", "check", str(refreshed), "--kg", str(world["new"])])
    first = res.output.splitlines()[0]
    assert res.exit_code == 0 and f": refreshed for {world['new']} (" in first and f") from {world['old']} (" in first, first
    first = CliRunner().invoke(main, ["dataset", "check", str(world["ds"]), "--kg", str(world["new"])]).output.splitlines()[0]
    assert f": built on {world['old']} (" in first and "refreshed" not in first, first


def test_a_merged_entity_is_shown_with_the_label_of_the_item_it_went_into(dumps: dict[str, Any]) -> None:
    """`| merged | Q… |  | Otto | Q… (Karl) |`: a bare id tells a reader nothing."""
    from kalma.kg import open_source

    merged = {r["subject"]: r["new"][0] for r in dumps["changes"] if r["kind"] == "merged"}
    names = open_source(dumps["new"]).labels(sorted(set(merged.values())))
    text = CliRunner().invoke(main, ["dataset", "check", str(dumps["ds"]), "--kg", dumps["new"]]).output
    shown = re.findall(r"^\| merged \| (Q\d+) \|  \| [^|]* \| (Q\d+) \(([^|]*)\) \|$", text, re.M)
    assert shown and all(merged[q] == into and names[into] == label for q, into, label in shown), text


def test_the_outdated_metric_names_the_previous_kg_by_its_dump_date_and_digest(dumps: dict[str, Any], tmp_path: Path) -> None:
    """`previous KG wikidata-local:old` alone names a folder, not which dump it held."""
    first = list(read_jsonl(dumps["refreshed"], DatasetEntry, kind="dataset"))[0]
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"entry_id": first.id, "text": "Nothing."}) + "\n")
    args = ["evaluate", "--dataset", str(dumps["refreshed"]), "--answers", str(answers), "--previous-kg", dumps["old"], "--resamples", "20"]
    res = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "eval")])
    assert res.exit_code == 0, res.output
    assert f"outdated: previous KG {dumps['old']} (dump 2026-01-01, sha256:" in (tmp_path / "eval" / "summary.md").read_text()


def test_a_refreshed_dataset_is_answered_from_the_kg_it_was_refreshed_for(world: dict[str, Any], refreshed: Path, tmp_path: Path) -> None:
    """No --kg: the baseline retrieves from the KG the header says the dataset holds true for, its
    newest refresh's, not its build's (whose changed value the rebuilt entry no longer states)."""
    out = tmp_path / "a.jsonl"
    res = CliRunner().invoke(main, ["answer", "--dataset", str(refreshed), "--llm", "template", "--retrieval", "ner", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text().splitlines()[0])["kalma"]["provenance"]["config"]["kg"] == str(world["new"])
    texts = " ".join(json.loads(x)["text"] for x in out.read_text().splitlines()[1:])
    ((old, now),) = CHANGED.values()
    assert now in texts and old not in texts, texts


def test_a_dataset_built_with_relative_paths_is_refreshed_and_answered_from_another_folder(
    world: dict[str, Any], tiny_lm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kalma build --kg old.ttl --lm hf:lm` in one folder: its header names both whole, so an answer
    run elsewhere retrieves from old.ttl, a refresh run elsewhere rebuilds its stale entries, and an
    answer to the refreshed dataset retrieves from the KG it was refreshed for."""
    import os

    here = tmp_path / "here"
    here.mkdir()
    shutil.copy(world["old"], here / "old.ttl")
    monkeypatch.chdir(here)
    lm = "hf:" + os.path.relpath(tiny_lm.removeprefix("hf:"), here)
    res = CliRunner().invoke(main, ["build", "--records", str(RECORDS), "--kg", "old.ttl", "--lm", lm, "--rounds", "1", "-o", "ds.jsonl"])
    assert res.exit_code == 0, res.output
    config = json.loads((here / "ds.jsonl").read_text().splitlines()[0])["kalma"]["provenance"]["config"]
    assert config["kg"] == str(here / "old.ttl") and config["lm"] == tiny_lm and config["records"] == str(RECORDS)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["answer", "--dataset", "here/ds.jsonl", "--llm", "template", "--retrieval", "ner", "-o", "built.jsonl"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "built.jsonl").read_text().splitlines()[0])["kalma"]["provenance"]["config"]["kg"] == str(here / "old.ttl")
    res = CliRunner().invoke(main, ["dataset", "refresh", "here/ds.jsonl", "--kg", str(world["new"]), "-o", "refreshed.jsonl"])
    assert res.exit_code == 0 and " 0 rebuilt" not in res.output, res.output
    res = CliRunner().invoke(main, ["answer", "--dataset", "refreshed.jsonl", "--llm", "template", "--retrieval", "ner", "-o", "a.jsonl"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])["kalma"]["provenance"]["config"]["kg"] == str(world["new"])


@pytest.mark.parametrize("where", ["check", "rebuild"])
def test_ctrl_c_on_a_refresh_says_nothing_was_written_and_how_to_go_on(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Ctrl-C while the entries are checked, or while the stale ones are rebuilt (the builder's own
    message names its temporary folder): exit 130, one line saying nothing was written, no file."""
    from dataset_builder import freshness
    from kalma.errors import Interrupted

    def stopped(*_: object, **__: object) -> None:
        raise KeyboardInterrupt if where == "check" else Interrupted("interrupted: 0 of 2 entries are done; kept: /tmp/kalma-refresh-x/rebuilt.jsonl")

    monkeypatch.setattr(freshness, "check_entries" if where == "check" else "rebuild", stopped)
    out = tmp_path / "r.jsonl"
    res = CliRunner().invoke(main, ["dataset", "refresh", str(world["ds"]), "--kg", str(world["new"]), "-o", str(out)])
    assert res.exit_code == 130 and res.output.strip().splitlines() == [
        f"kalma: interrupted: nothing was written ({out} and its changelog are written whole, at the end): run the same command again"
    ], res.output
    assert not list(tmp_path.iterdir())
