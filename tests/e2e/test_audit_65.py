"""Issue 65 §1, through the CLI: behaviours of `kalma judge pairs`, `kalma compare`, the served
model's wait and `kalma records from-kg`, each on a case where the wrong computation gives another
answer (the mutations that break them are kept in tests/mutations/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kalma.cli import main
from tests.e2e.test_judge_pairs import generate


@pytest.fixture(scope="module")
def seeded(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[dict]]:
    """The demo dataset's pairs drawn under two seeds."""
    d = tmp_path_factory.mktemp("seeded")
    return {seed: generate(dataset, d / f"pairs-{seed}.jsonl", "--seed", str(seed)) for seed in (1, 2)}


def test_judge_pairs_seed_changes_every_kinds_draw(seeded):
    """Not only knowledge removal's `na` rows: the triples stated and cited for the other kinds
    follow --seed too, and each row records the seed it was drawn with."""
    drawn = {s: sorted((r["entry_id"], r["kind"], r["judged"], r["stated"]) for r in rows if r["kind"] != "na") for s, rows in seeded.items()}
    assert drawn[1] != drawn[2]
    assert all(r["seed"] == s for s, rows in seeded.items() for r in rows)


def test_judge_pairs_draw_from_the_entrys_minimum_set(seeded, dataset: Path):
    """Every demo entry has a minimum set smaller than its people's knowledge in the KG: every
    triple a supported, partial or na row states is in it (contradictory rows state a replacement,
    irrelevant rows may cite another entity)."""
    minimum = {}
    for line in dataset.read_text().splitlines()[1:]:
        e = json.loads(line)
        minimum[e["id"]] = {(t["subject"], t["relation"] or t["relation_label"], t["value"]) for t in e["minimum_set"]}
    for rows in seeded.values():
        kept = [r for r in rows if r["kind"] in {"supported", "partial", "na"}]
        assert kept and all(tuple(s) in minimum[r["entry_id"]] for r in kept for s in r["stated"])


def test_judge_pairs_discards_and_counts_a_reply_of_two_sentences(dataset: Path, tmp_path: Path):
    """A writer that adds a second sentence to every reply: nothing is kept, and the refusal counts
    the sentences discarded, by kind."""
    from evaluation.judge_pairs import _template_state
    from tests.servers import answering, scripted_server

    with scripted_server([answering(lambda prompt: _template_state(prompt) + " It is well known.")]) as (url, _):
        res = CliRunner().invoke(main, ["judge", "pairs", "--dataset", str(dataset), "--llm", f"openai-compatible:{url}/v1:w", "-o", str(tmp_path / "p.jsonl")])
    assert res.exit_code != 0 and "no usable sentence" in res.output and "6 supported: not one sentence" in res.output, res.output
    assert not (tmp_path / "p.jsonl").exists()


# ---------------------------------------------------------------- records drawn from the KG

CITIES = ["Ashby", "Brill", "Corran", "Dunmore", "Elstow", "Farleigh", "Gorsey", "Hexton", "Springfield", "Springfield"]
TWINS = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 0), (9, 2)]  # each both ways, as Wikidata states twin towns
KG_HEAD = """@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix wikibase: <http://wikiba.se/ontology#> .
"""
PROPS = {"P31": "instance of", "P17": "country", "P190": "twinned administrative body", "P1082": "population", "P421": "located in time zone"}
PROPS |= {"P112": "founded by", "P106": "occupation", "P50": "author", "P1343": "described by source"}


@pytest.fixture(scope="module")
def towns(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten cities of one country, four pairs of twin towns and two Springfields (a name two cities
    share) twinned with Ashby and Corran; each city's population and time zone (trivial for a city);
    an organization founded by a person, who wrote a novel that describes her (described by source:
    trivial for a person)."""
    lines = [f'wd:{p} wikibase:directClaim wdt:{p} ; rdfs:label "{label}"@en .' for p, label in PROPS.items()]
    lines += [f'wd:{q} rdfs:label "{label}"@en .' for q, label in (("Q5", "human"), ("Q515", "city"), ("Q43229", "organization"), ("Q6256", "country"))]
    lines += ['wd:Q900100001 rdfs:label "Norland"@en ; wdt:P31 wd:Q6256 .', 'wd:Q900100002 rdfs:label "Norland Standard Time"@en .']
    for i, name in enumerate(CITIES):
        facts = f'wdt:P31 wd:Q515 ; wdt:P17 wd:Q900100001 ; wdt:P421 wd:Q900100002 ; wdt:P1082 "{48210 + i}"'
        lines.append(f'wd:Q9002000{i:02d} rdfs:label "{name}"@en ; {facts} .')
    lines += [f"wd:Q9002000{a:02d} wdt:P190 wd:Q9002000{b:02d} .\nwd:Q9002000{b:02d} wdt:P190 wd:Q9002000{a:02d} ." for a, b in TWINS]
    lines += ['wd:Q900300001 rdfs:label "Lumen Press"@en ; wdt:P31 wd:Q43229 ; wdt:P112 wd:Q900300002 .']
    lines += ['wd:Q900300002 rdfs:label "Ada Lovelock"@en ; wdt:P31 wd:Q5 ; wdt:P106 wd:Q900100003 .', 'wd:Q900100003 rdfs:label "printer"@en .']
    lines += ['wd:Q8261 rdfs:label "novel"@en .', 'wd:Q900300003 rdfs:label "The Ledger"@en ; wdt:P31 wd:Q8261 ; wdt:P50 wd:Q900300002 .']
    lines += ["wd:Q900300002 wdt:P1343 wd:Q900300003 ."]
    path = tmp_path_factory.mktemp("towns") / "kg.ttl"
    path.write_text(KG_HEAD + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def _from_kg(kg: Path, out: Path, *args: str) -> list[dict]:
    res = CliRunner().invoke(main, ["records", "from-kg", "--kg", f"rdflib:{kg}", "-o", str(out), *args])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in out.read_text().splitlines()[1:]]


def test_records_from_kg_draw_each_pair_once_never_a_shared_name_nor_a_trivial_fact(towns: Path, tmp_path: Path):
    """Six twinnings stated both ways: the four between uniquely named cities, each once (never also
    its reverse), none naming a Springfield; no paragraph states a city's population or time zone."""
    drawn = _from_kg(towns, tmp_path / "r.jsonl", "--classes", "Q515", "--properties", "P190", "-n", "20")
    pairs = sorted(tuple(sorted((r["person_a"], r["person_b"]))) for r in drawn)
    assert pairs == [("Ashby", "Brill"), ("Corran", "Dunmore"), ("Elstow", "Farleigh"), ("Gorsey", "Hexton")]
    for r in drawn:
        assert "Norland" in r["paragraph"] and "Standard Time" not in r["paragraph"] and "4821" not in r["paragraph"], r["paragraph"]


def test_records_from_kg_never_draw_a_class_s_trivial_relation_as_a_link(towns: Path, tmp_path: Path):
    """Ada Lovelock is described by the novel she wrote: a person's trivial relation between two
    entities of the classes drawn, named in --properties; only the novel's author link is a record."""
    drawn = _from_kg(towns, tmp_path / "r.jsonl", "--classes", "Q5,Q8261", "--properties", "P50,P1343", "-n", "5")
    assert [(r["person_a"], r["relation"], r["person_b"]) for r in drawn] == [("The Ledger", "P50", "Ada Lovelock")]


def test_records_from_kg_follow_the_seed(towns: Path, tmp_path: Path):
    drawn = {s: _from_kg(towns, tmp_path / f"r{s}.jsonl", "--classes", "Q515", "--properties", "P190", "-n", "2", "--seed", s) for s in ("1", "2")}
    assert {r["person_a"] for r in drawn["1"]} != {r["person_a"] for r in drawn["2"]}


def test_a_record_of_an_organization_and_a_person_gets_the_class_neutral_prompts(towns: Path, tmp_path: Path):
    """Lumen Press, founded by Ada Lovelock: one end is a person, the other is not, so the questions
    name each by its class (the paper's person prompts are for two people) and the entry records them."""
    from kalma.jsonl import read_jsonl
    from kalma.schema import DatasetEntry
    from tests.servers import answering, scripted_server

    records = tmp_path / "r.jsonl"
    (record,) = _from_kg(towns, records, "--classes", "Q43229,Q5", "--properties", "P112")
    assert (record["class_a"], record["class_b"]) == ("Q43229", "Q5")
    with scripted_server([answering(lambda prompt: "")]) as (url, _):  # the scorer: completions echoed with log-probabilities
        args = ["build", "--records", str(records), "--kg", f"rdflib:{towns}", "--llm", "template", "--lm", f"openai-compatible:{url}/v1:m"]
        res = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "ds.jsonl")])
    assert res.exit_code == 0, res.output
    (entry,) = read_jsonl(tmp_path / "ds.jsonl", DatasetEntry, kind="dataset")
    assert entry.meta["classes"] == ["Q43229", "Q5"]
    assert entry.general_question == "What connects the organization Lumen Press and the person Ada Lovelock?", entry.general_question
