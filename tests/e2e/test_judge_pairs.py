"""`kalma judge pairs`: every generated label checked against the KG by a check written apart from
the generator (its own reading of the KG, its own rule per kind), on the demo dataset and, with
../shared present, on the authors' release; and the bad inputs, one line each, nothing written."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from evaluation.judge_quality import _columns, markdown, measure, read_pairs
from kalma.cli import main
from kalma.kg import open_source
from kalma.schema import EntityGraph
from tests.servers import completion, reply, scripted_server

KINDS = ("supported", "partial", "contradictory", "irrelevant", "na")
# --vary's checks, written apart from the generator: months as each language writes them, and the
# words that deny a sentence in it
MONTHS = {
    "en": "January February March April May June July August September October November December",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
}
DENIALS = {"en": ("not",), "fr": ("pas", "faux"), "de": ("nicht", "kein", "keine"), "es": ("no", "falso")}


def generate(dataset: Path, out: Path, *extra: str) -> list[dict]:
    res = CliRunner().invoke(main, ["judge", "pairs", "--dataset", str(dataset), "-o", str(out), *extra])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert set(lines[0]) == {"kalma"} and lines[0]["kalma"]["kind"] == "judge-pairs"
    return lines[1:]


def _word(text: str, name: str) -> bool:
    return _whole(name).search(_spaced(text)) is not None


@functools.cache  # the release's rows ask for the same names thousands of times
def _whole(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(_spaced(name))}(?![\w])")


@functools.cache
def _spaced(text: str) -> str:
    return " ".join(text.lower().split())


class KG:
    """A KG opened once, each entity's graph read from it once, however many checks ask."""

    def __init__(self, spec: str) -> None:
        self.source = open_source(spec)
        self.read: dict[str, EntityGraph | None] = {}

    def subgraphs(self, qids: list[str]) -> dict[str, EntityGraph]:
        if new := [q for q in dict.fromkeys(qids) if q not in self.read]:
            found = self.source.subgraphs(new)
            self.read.update({q: found.get(q) for q in new})
        return {q: g for q in qids if (g := self.read[q]) is not None}


def dates(value: str) -> set[str]:
    """An ISO date as a person writes it, in any of the four languages ("6 November 1975")."""
    m = re.fullmatch(r"(\d{3,4})-(\d\d)-(\d\d)", value)
    if not m or not 1 <= int(m[2]) <= 12:
        return set()
    y, mo, d = int(m[1]), int(m[2]), int(m[3])
    return {f"{d} {MONTHS['en'].split()[mo - 1]} {y}", f"{'1er' if d == 1 else d} {MONTHS['fr'].split()[mo - 1]} {y}"} | {
        f"{d}. {MONTHS['de'].split()[mo - 1]} {y}",
        f"{d} de {MONTHS['es'].split()[mo - 1]} de {y}",
    }


def violations(rows: list[dict], kg: str | KG, dataset: Path, language: str = "en") -> list[str]:
    """Each row against its kind's rule, read from the KG itself (the graphs of every person of the
    dataset, where replacement values come from): what is true of a subject, what a value is
    called, and what the judge reads (`relation: value`)."""
    kg = KG(kg) if isinstance(kg, str) else kg
    people = {q for line in dataset.read_text().splitlines()[1:] for q in json.loads(line)["people"]}
    subjects = sorted(people | {s[0] for r in rows for s in r["stated"][:1]} | {c[0] for r in rows for c in r["cited"]})
    graphs = kg.subgraphs(subjects)
    truth = {(t.subject, t.relation or t.relation_label, t.value) for g in graphs.values() for t in g.triples}
    true_values: dict[tuple[str, str], set[str]] = {}  # (subject, property) -> its values, of the `truth` above
    for subject, prop, value in truth:
        true_values.setdefault((subject, prop), set()).add(value)
    true_labels: dict[tuple[str, str], set[str]] = {}
    names: dict[str, set[str]] = {}  # a value may have several labels ("General", "general")
    relation: dict[str, set[str]] = {}
    for g in graphs.values():
        for t in g.triples:
            true_labels.setdefault((t.subject, t.relation or t.relation_label), set()).add(" ".join(t.value_label.lower().split()))
            names.setdefault(t.value, set()).add(t.value_label)
            relation.setdefault(t.relation or t.relation_label, set()).add(t.relation_label)
    # a value may be written as one of its aliases, or as a date is written
    values = sorted({v for r in rows for _, _, v in r["stated"] + r.get("denied", []) if re.fullmatch(r"Q\d+", v)})
    for q, g in kg.subgraphs(values).items():
        names.setdefault(q, set()).update([g.label, *g.aliases])
    for v in list(names):
        names[v] |= {d for n in list(names[v]) for d in dates(n)}
    wrong = []
    for r in rows:
        cited, stated, judged = [tuple(x) for x in r["cited"]], [tuple(x) for x in r["stated"]], tuple(r["judged"])
        where = f"{r['kind']} {r['entry_id']}: {r['doc']!r} / {r['claim']!r}"
        said = {f"{rel}: {name}".lower() for _, p, v in stated for rel in relation[p] for name in names[v]}
        if r["claim"] not in {f"{rel}: {name}" for rel in relation[judged[1]] for name in names[judged[2]]} or judged not in cited:
            wrong.append(f"{where}: the claim is not the judged cited triple's hypothesis")
        if r["label"] != int(r["claim"].lower() in said):
            wrong.append(f"{where}: label {r['label']} is not whether the sentence states the claim")
        if not all(any(_word(r["doc"], name) for name in names[v]) for _, _, v in stated):
            wrong.append(f"{where}: a stated value is not in the sentence")
        if not all(c in truth for c in cited):
            wrong.append(f"{where}: cites a triple the KG does not hold")
        kind = r["kind"]
        if kind == "contradictory":
            ((s, p, v),) = stated
            if v in true_values.get((s, p), set()) or {" ".join(n.lower().split()) for n in names[v]} & true_labels.get((s, p), set()):
                wrong.append(f"{where}: the replacement value is true of the subject")
            if r["label"] != 0 or cited[0][:2] != (s, p):
                wrong.append(f"{where}: not the true triple of that property against a false value")
        elif kind == "supported" and (set(cited) != set(stated) or r["label"] != 1 or not set(stated) <= truth):
            wrong.append(f"{where}: does not cite exactly what it states, all true")
        elif kind == "partial" and not (set(cited) < set(stated) and len(stated) >= 2 and set(stated) <= truth):
            wrong.append(f"{where}: does not cite a strict subset of what it states")
        elif kind == "irrelevant" and (set(cited) & set(stated) or r["label"] != 0):
            wrong.append(f"{where}: cites something it states")
        elif kind == "na" and not set(stated) <= truth:
            wrong.append(f"{where}: states a removed triple the KG does not hold")
        elif kind == "negated":
            denied = [tuple(x) for x in r["denied"]]
            if stated or denied != cited or r["label"] != 0 or not set(denied) <= truth:
                wrong.append(f"{where}: does not deny the true triple it cites, labelled 0")
            if not any(_word(r["doc"], n) for _, _, v in denied for n in names[v]) or not any(_word(r["doc"], w) for w in DENIALS[language]):
                wrong.append(f"{where}: does not name the denied value, or does not deny it")
    return wrong


def shares(rows: list[dict]) -> dict[str, float]:
    n = Counter(r["kind"] for r in rows)
    return {k: n[k] / len(rows) for k in KINDS}


def test_every_label_on_the_demo_dataset_is_right_by_its_kinds_rule(dataset, tmp_path):
    rows = generate(dataset, tmp_path / "pairs.jsonl")
    assert violations(rows, "demo", dataset) == []
    assert min(shares(rows).values()) >= 0.1, shares(rows)
    assert {r["label"] for r in rows if r["kind"] == "na"} == {0, 1}
    assert all(r["model"] == "template" and r["seed"] == 0 for r in rows)
    # the same seed makes the same file; the rows read by `kalma judge evaluate` as they are, per kind
    assert generate(dataset, tmp_path / "again.jsonl") == rows
    res = CliRunner().invoke(main, ["judge", "evaluate", "--nli", "lexical", "--pairs", str(tmp_path / "pairs.jsonl"), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert all(f"| {k} |" in res.output for k in KINDS)
    pairs = read_pairs(tmp_path / "pairs.jsonl")  # the header line skipped; resampled by entry, not by sentence
    units, _ = _columns(pairs, list(range(len(pairs))), [0] * len(pairs), [pairs[0].dataset])
    assert len(pairs) == len(rows) and len(units) == len({r["entry_id"] for r in rows}) < len({r["doc"] for r in rows})


@pytest.mark.parametrize("language", ["en", "fr"])
def test_varied_pairs_keep_every_label_right_and_deny_in_the_negated_kind(dataset, tmp_path, language):
    # the KG is read in --language: the demo KG's labels are English, so French pairs take them
    # from English where French has none, as a user with that KG would (--label-fallback en)
    fallback = ["--label-fallback", "en"] if language != "en" else []
    verbatim = generate(dataset, tmp_path / "pairs.jsonl", "--language", language, *fallback)
    rows = generate(dataset, tmp_path / "varied.jsonl", "--vary", "--language", language, *fallback)
    assert violations(rows, "demo", dataset, language) == []
    kinds = Counter(r["kind"] for r in rows)
    assert set(kinds) == {*KINDS, "negated"} and kinds["negated"] == 6 and {r["label"] for r in rows if r["kind"] == "negated"} == {0}
    # the same pairs, said otherwise: most sentences differ from the verbatim set's
    assert [(r["kind"], r["claim"], r["label"]) for r in rows if r["kind"] != "negated"] == [(r["kind"], r["claim"], r["label"]) for r in verbatim]
    changed = sum(a["doc"] != b["doc"] for a, b in zip([r for r in rows if r["kind"] != "negated"], verbatim))
    assert changed >= len(verbatim) / 2, changed
    config = json.loads((tmp_path / "varied.jsonl").read_text().splitlines()[0])["kalma"]["provenance"]["config"]
    assert config["vary"] is True and config.get("labels", {}).get("label_fallback") == (fallback[1] if fallback else None)
    if fallback:  # the KG was opened in French: without the fallback, its English-only labels leave the values unnamed
        res = CliRunner().invoke(main, ["judge", "pairs", "--dataset", str(dataset), "-o", str(tmp_path / "no.jsonl"), "--language", language])
        assert res.exit_code != 0 and "the KG holds none of the" in res.output and not (tmp_path / "no.jsonl").exists(), res.output


def test_the_triple_as_document_labels_partial_pairs_unsupported(dataset, tmp_path):
    rows = generate(dataset, tmp_path / "pairs.jsonl", "--document", "triple")
    assert {r["label"] for r in rows if r["kind"] == "partial"} == {0}
    assert all(len(r["stated"]) == 1 for r in rows if r["kind"] == "supported")


def test_the_release_makes_thousands_of_right_pairs_of_every_kind(biokalma_dir, tmp_path):
    kg, data = tmp_path / "kg.nt", tmp_path / "dataset.jsonl"
    release = str(biokalma_dir / "complex_question_graph.json")
    for args in (["kg", "import-biokalma", release, "-o", str(kg)], ["dataset", "import-biokalma", release, "-o", str(data)]):
        assert CliRunner().invoke(main, args).exit_code == 0
    rows = generate(data, tmp_path / "pairs.jsonl", "--kg", f"oxigraph:{kg}")
    assert len(rows) >= 5000 and min(shares(rows).values()) >= 0.1, (len(rows), shares(rows))
    read = KG(f"oxigraph:{kg}")  # both checks read one KG: each graph once
    assert violations(rows, read, data) == []
    varied = generate(data, tmp_path / "varied.jsonl", "--kg", f"oxigraph:{kg}", "--vary")
    assert len(varied) >= 5000 and Counter(r["kind"] for r in varied)["negated"] >= 900
    assert violations(varied, read, data) == []


def _one_line(args: list[str], process: bool = False) -> str:
    """The command's stderr, which must be one line, and its exit: in a process of its own with
    `process` (what a shell sees), else in this one, the CLI's own exit and not an exception the
    runner caught (a process each was a second or more of importing kalma, openai and rdflib again)."""
    if process:
        run = subprocess.run([sys.executable, "-m", "kalma.cli", *args], capture_output=True, text=True, timeout=120)
        code, err = run.returncode, run.stderr
    else:
        res = CliRunner().invoke(main, args)
        assert isinstance(res.exception, SystemExit), repr(res.exception)
        code, err = res.exit_code, res.stderr
    assert code != 0 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_bad_inputs_end_in_one_line_and_write_nothing(dataset, tmp_path):
    out = tmp_path / "pairs.jsonl"
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"text": "not a dataset"}\n')
    assert "notes.jsonl" in _one_line(["judge", "pairs", "--dataset", str(notes), "-o", str(out)], process=True)
    empty = tmp_path / "other.nt"
    empty.write_text('<http://www.wikidata.org/entity/Q1> <http://www.w3.org/2000/01/rdf-schema#label> "universe"@en .\n')
    assert "none of the" in _one_line(["judge", "pairs", "--dataset", str(dataset), "--kg", f"rdflib:{empty}", "-o", str(out)])
    with scripted_server([reply(200, completion("Sure! Here you go."), {"Content-Type": "application/json"})]) as (url, _):
        said = _one_line(["judge", "pairs", "--dataset", str(dataset), "--llm", f"openai-compatible:{url}/v1:junk", "-o", str(out)])
    assert "no usable sentence" in said
    assert not list(tmp_path.glob("pairs*"))


def test_each_kinds_accuracy_has_its_interval_and_the_failed_kinds_come_first(tmp_path):
    # (premise, claim, label, dataset, kind, the judge's P): verdicts at 0.5 right on 1 of 3 `x`, 3 of 4 `y`
    rows = [
        ("She was born in Rome.", "place of birth: Rome", 1, "a", "x", 0.9),
        ("She was born in Rome.", "place of death: Rome", 0, "a", "x", 0.6),
        ("She died in Naples.", "place of death: Naples", 1, "a", "x", 0.3),
        ("He wrote a novel.", "occupation: writer", 1, "a", "y", 0.8),
        ("He was a painter.", "occupation: writer", 0, "b", "y", 0.2),
        ("He painted in Rome.", "occupation: painter", 1, "b", "y", 0.7),
        ("He lived in Pisa.", "place of birth: Pisa", 0, "b", "y", 0.55),
    ]
    pairs, table = tmp_path / "pairs.jsonl", tmp_path / "judge.jsonl"
    pairs.write_text("".join(json.dumps({"doc": p, "claim": h, "label": y, "dataset": d, "kind": k}) + "\n" for p, h, y, d, k, _ in rows))
    table.write_text("".join(json.dumps({"premise": p, "hypothesis": h, "probability": q}) + "\n" for p, h, _, _, _, q in rows))
    report = measure(f"table:{table}", read_pairs(pairs), 0.5, resamples=500, seed=1)
    x, y = report.kind_intervals["x"], report.kind_intervals["y"]
    assert (x.point, y.point) == (pytest.approx(1 / 3), pytest.approx(3 / 4))
    # x's units: the Rome sentence (1 of 2 right) and the Naples one (0 of 1): no resample exceeds 1/2
    assert x.low == 0.0 and x.high is not None and x.high <= 0.5 < report.intervals["overall"].point == pytest.approx((1 / 3 + 3 / 4) / 2)
    assert y.high == 1.0 and report.weakest() == ["x"]
    text = markdown(report)
    assert "Fails most on: x (33.3)" in text and text.index("| x | 33.3 |") < text.index("| y | 75.0 |")
    assert report.as_dict()["accuracy_by_kind"]["y"]["accuracy"]["point"] == pytest.approx(0.75)


def test_an_llm_writes_the_sentences_and_a_rerun_asks_it_nothing(dataset, tmp_path):
    """Through a real OpenAI-compatible server: the rows name its model, a reply missing a value is
    discarded and counted, and a second run is answered from the call cache."""
    from evaluation.judge_pairs import _template_state
    from tests.servers import answering

    def reply(prompt: str) -> str:  # one fact stated, even when asked for two
        return _template_state(prompt).split(", and ")[0].rstrip(".") + "."

    with scripted_server([answering(reply)], models=[{"id": "writer", "root": "/weights/writer"}]) as (url, log):  # listed: cacheable
        rows = generate(dataset, tmp_path / "a.jsonl", "--llm", f"openai-compatible:{url}/v1:writer")
        asked = len(log)
        again = generate(dataset, tmp_path / "b.jsonl", "--llm", f"openai-compatible:{url}/v1:writer")
    assert asked > 0 and len(log) == asked and again == rows
    assert violations(rows, "demo", dataset) == [] and {r["model"] for r in rows} <= {"writer", f"openai-compatible:{url}/v1:writer"}
    header = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])["kalma"]
    # every partial sentence states two values and got one: all 6 discarded, counted, none kept
    assert header["made"]["discarded_sentences"]["partial: a stated value not named"] == 6 and "partial" not in {r["kind"] for r in rows}
