"""Datasets of any class of Wikidata entity: the class look-up (subclasses included) on every KG
source against an Oxigraph server's own answer, records drawn from the KG, a build of
organizations and cities, its statistics per class, bad input, and the five real entities."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_builder import prompts
from dataset_builder.pool import Facts, has_label
from dataset_builder.records import read_records
from kalma.classes import entity_class
from kalma.cli import main
from kalma.jsonl import read_jsonl
from kalma.kg import open_source
from kalma.kg.base import iri_id
from kalma.kg.sparql import PREFIXES
from kalma.properties import Vocabulary
from kalma.schema import DatasetEntry
from perf.dumpgen import CLASS_ITEMS, write_dump
from perf.random_models import build_causal
from tests.conftest import SHARED
from tests.servers import serve_snapshot

pytest.importorskip("duckdb")
CLASSES = sorted(CLASS_ITEMS)
QID = re.compile(r"\bQ[0-9]+\b")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """People, organizations, cities and works in a truthy dump, and its store."""
    work = tmp_path_factory.mktemp("classes")
    write_dump(work / "truthy.nt", 30, "nt", seed=3, with_release=False, named_only=True, organizations=80, cities=80, works=20)
    res = CliRunner().invoke(main, ["kg", "import", str(work / "truthy.nt"), "-o", str(work / "store"), "--threads", "2"])
    assert res.exit_code == 0, res.output
    return work


@pytest.fixture(scope="module")
def server(world: Path, tmp_path_factory: pytest.TempPathFactory):
    with serve_snapshot(world / "truthy.nt", tmp_path_factory.mktemp("ox")) as url:
        yield url


def _oracle(url: str, cls: str) -> dict[str, list[str]]:
    """{name: instances of `cls` or of a subclass with that label or alias}, by a query written here."""
    q = PREFIXES + f"SELECT ?item ?name WHERE {{ ?item wdt:P31/wdt:P279* wd:{cls} . {{ ?item rdfs:label ?name }} UNION {{ ?item skos:altLabel ?name }} }}"
    out: dict[str, set[str]] = {}
    for row in open_source(f"sparql:{url}").select(q):  # type: ignore[attr-defined]
        out.setdefault(row["name"]["value"], set()).add(iri_id(row["item"]["value"]))  # type: ignore[arg-type]
    return {n: sorted(qs, key=lambda x: int(x[1:])) for n, qs in out.items()}


def test_class_lookup_takes_subclasses_on_every_source_as_the_server_does(world: Path, server: str):
    sources = {
        "wikidata-local": open_source(f"wikidata-local:{world / 'store'}"),
        "sparql": open_source(f"sparql:{server}"),
        "oxigraph": open_source(f"oxigraph:{world / 'truthy.nt'}"),
    }
    companies = open_source(f"sparql:{server}").select(PREFIXES + "SELECT ?x WHERE { ?x wdt:P31 wd:Q783794 }")  # type: ignore[attr-defined]
    direct = {iri_id(r["x"]["value"]) for r in companies}
    assert direct, "the dump has companies: instances of a subclass of a subclass of organization"
    for cls in CLASSES:
        want = _oracle(server, cls)
        names = sorted(want) + ["Nobody Atall"]
        for name, src in sources.items():
            got = src.lookup(names, [cls])
            assert {n: q for n, q in got.items() if q} == want, (name, cls)
    orgs = {q for qs in _oracle(server, "Q43229").values() for q in qs}
    assert direct <= orgs  # found only through the walk: company, a subclass of business, of organization
    assert not _oracle(server, "Q163740")
    for src in sources.values():
        assert src.class_status(["Q43229", "Q515", "Q163740", "Q900005000"]) == {
            "Q43229": "has instances",
            "Q515": "has instances",
            "Q163740": "no instances",
            "Q900005000": "not a class",  # a work: an instance, nobody's class
        }
    pairs = {name: src.pairs(["Q43229", "Q515"], ["P159", "P190"], ["Q515"]) for name, src in sources.items()}
    assert pairs["sparql"] and pairs["wikidata-local"] == pairs["sparql"] == pairs["oxigraph"]


def test_records_from_the_kg_build_a_dataset_of_organizations_and_cities(world: Path, tmp_path: Path):
    records, out = tmp_path / "records.jsonl", tmp_path / "ds.jsonl"
    store = f"wikidata-local:{world / 'store'}"
    res = CliRunner().invoke(main, ["records", "from-kg", "--kg", store, "--classes", "Q43229,Q515", "-n", "40", "--seed", "1", "-o", str(records)])
    assert res.exit_code == 0, res.output
    drawn = [json.loads(line) for line in records.read_text().splitlines()[1:]]
    assert len(drawn) == 40 and len({(r["person_a"], r["relation"], r["person_b"]) for r in drawn}) == 40
    assert {r["relation"] for r in drawn} == {"P159", "P190"} and "P159 20, " in res.output  # spread over the properties
    again = tmp_path / "again.jsonl"
    CliRunner().invoke(main, ["records", "from-kg", "--kg", store, "--classes", "Q43229,Q515", "-n", "40", "--seed", "1", "-o", str(again)])
    assert again.read_text().splitlines()[1:] == records.read_text().splitlines()[1:]  # seeded

    lm = "hf:" + str(build_causal(tmp_path / "lm"))
    res = CliRunner().invoke(main, ["build", "--records", str(records), "--kg", store, "--llm", "template", "--lm", lm, "-o", str(out)])
    assert res.exit_code == 0, res.output
    entries = list(read_jsonl(out, DatasetEntry, kind="dataset"))
    assert len(entries) >= 36
    for e in entries:
        classes = [entity_class(c) for c in e.meta["classes"]]
        assert {c.qid for c in classes} <= {"Q43229", "Q515"} and e.minimum_set
        facts = Facts({}, Vocabulary.of(e.knowledge_pool))
        assert all(facts.add(t) and has_label(t) for t in e.minimum_set)  # one triple per fact, labelled values
        assert not any(classes[e.people.index(t.subject)].is_trivial(t) for t in e.minimum_set)
        for q in (e.general_question, e.specific_question):
            assert not q.startswith("Who") and not QID.search(q), q
    header = json.loads(out.read_text().splitlines()[0])["kalma"]["provenance"]
    assert set(header["records"]["classes"]["found"]) == {"Q43229", "Q515"}
    res = CliRunner().invoke(main, ["dataset", "stats", str(out)])
    assert "| organization (Q43229) |" in res.output and "| city (Q515) |" in res.output
    assert "| occupations |" not in res.output and "the paper's figures of people (countries, cities, occupations, era) do not apply" in res.output


def _constrained(world: Path, out: Path) -> Path:
    """The dump with Wikidata's type constraints on P159 as full statements (their classes are
    qualifiers): subject organization or nonprofit organization (no instance in the dump), value city."""
    wd, st = "http://www.wikidata.org/entity/", "http://www.wikidata.org/entity/statement/"
    lines = []
    for n, (constraint, classes) in enumerate((("Q21503250", ("Q43229", "Q163740")), ("Q21510865", ("Q515",)))):
        lines.append(f"<{wd}P159> <http://www.wikidata.org/prop/P2302> <{st}P159-c{n}> .")
        lines.append(f"<{st}P159-c{n}> <http://www.wikidata.org/prop/statement/P2302> <{wd}{constraint}> .")
        lines += [f"<{st}P159-c{n}> <http://www.wikidata.org/prop/qualifier/P2308> <{wd}{c}> ." for c in classes]
    out.write_text((world / "truthy.nt").read_text() + "\n".join(lines) + "\n")
    return out


def test_records_without_classes_take_their_propertys_type_constraints(world: Path, tmp_path: Path):
    from dataset_builder.build import constrain

    snapshot = _constrained(world, tmp_path / "constrained.nt")
    want = {"P159": {"subject": ["Q43229", "Q163740"], "value": ["Q515"]}}
    with serve_snapshot(snapshot, tmp_path / "ox") as url:
        assert open_source(f"sparql:{url}").type_constraints(["P159", "P190"]) == want
    src = open_source(f"oxigraph:{snapshot}")
    assert src.type_constraints(["P159", "P190"]) == want
    assert open_source(f"wikidata-local:{world / 'store'}").type_constraints(["P159"]) == {}  # a truthy import holds no qualifiers

    hq = src.pairs(["Q43229"], ["P159"], ["Q515"])[:3]
    twins = src.pairs(["Q515"], ["P190"], ["Q515"])[:2]
    labels = src.labels(sorted({q for a, _, b in hq + twins for q in (a, b)}))
    rows = [{"paragraph": "x", "person_a": labels[a], "relation": p, "person_b": labels[b]} for a, p, b in hq + twins]
    rows[1]["class_a"] = "Q783794"  # a record's own class wins over the constraint
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sel = read_records(records)
    applied = constrain(src, sel)
    assert applied == {"P159": {"subject": ["Q43229"], "value": ["Q515"]}}  # nonprofit organization has no instance: not a restriction
    assert [sel.of(r) for r in sel.records] == [(("Q43229",), ("Q515",)), (("Q783794",), ("Q515",)), (("Q43229",), ("Q515",)), ((), ()), ((), ())]

    out = tmp_path / "ds.jsonl"
    lm = "hf:" + str(build_causal(tmp_path / "lm"))
    res = CliRunner().invoke(main, ["build", "--records", str(records), "--kg", f"oxigraph:{snapshot}", "--llm", "template", "--lm", lm, "-o", str(out)])
    assert res.exit_code == 0, res.output
    asked = json.loads(out.read_text().splitlines()[0])["kalma"]["provenance"]["records"]["classes"]["asked"]
    assert asked == "the properties' Wikidata type constraints (P159 subject Q43229, value Q515); any class for the ends they do not cover"


def test_bad_classes_and_properties_say_file_line_and_field(world: Path, tmp_path: Path):
    store = f"wikidata-local:{world / 'store'}"
    good = {"paragraph": "x", "person_a": "Aster Logistics", "relation": "P159", "person_b": "Hartford"}
    for extra, said in (
        ({"relation": "P99999"}, "records.jsonl:2: relation: P99999 is no property of the knowledge graph"),
        ({"class_a": "Q900005000"}, "records.jsonl:2: class_a: Q900005000 is no class in the knowledge graph"),
        ({"class_b": "Q163740"}, "records.jsonl:2: class_b: no entity in the knowledge graph " + store + " is an instance of Q163740"),
    ):
        first = {**good, "person_a": "Hartford", "person_b": "Aldenford"}
        (tmp_path / "records.jsonl").write_text(json.dumps(first) + "\n" + json.dumps({**good, **extra}) + "\n")
        res = CliRunner().invoke(main, ["build", "--records", str(tmp_path / "records.jsonl"), "--kg", store, "-o", str(tmp_path / "ds.jsonl")])
        assert res.exit_code != 0 and said in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_the_complete_name_rule_is_a_persons_and_no_city_is_asked_who(tmp_path: Path):
    path = tmp_path / "records.csv"
    path.write_text("paragraph,person_a,relation,person_b,class_a,class_b\nx,Lyon,P190,Turin,Q515,Q515\ny,Lyon,father,Turin,,\n")
    sel = read_records(path, relations={"father"})
    assert [r.relation for r in sel.records] == ["P190"] and [r.reason for r in sel.removed] == ["incomplete name"]
    assert sel.of(sel.records[0]) == (("Q515",), ("Q515",))
    from kalma.models import GenParams, get_llm

    llm = get_llm("template")
    asked = llm.chat(prompts.general_question("Lyon is twinned with Turin.", ["Lyon", "Turin"], ["city", "city"]), GenParams()).text
    assert asked == "What connects the city Lyon and the city Turin?"
    assert llm.chat(prompts.general_question("x", ["Ada Lovelace"]), GenParams()).text == "Who was Ada Lovelace?"


ENTITIES = SHARED / "data" / "wikidata-entities"


@pytest.mark.skipif(not ENTITIES.is_dir(), reason="../shared/data/wikidata-entities is not present")
def test_real_entities_take_the_class_neutral_path(tmp_path: Path):
    """Portugal (a country), Mount Everest (a mountain), the universe and two people, as Wikidata
    serves them, in a JSON dump: each found in its own class only, a one-word name kept for a
    country and refused for a person, and a record between a country and a mountain disambiguated."""
    from dataset_builder.disambiguate import disambiguate
    from kalma.kg.store import import_dump

    items = [next(iter(json.loads(p.read_text())["entities"].values())) for p in sorted(ENTITIES.glob("Q*.json"))]
    (tmp_path / "dump.json").write_text("[\n" + ",\n".join(json.dumps(e) for e in items) + "\n]\n")
    import_dump(tmp_path / "dump.json", tmp_path / "store", progress=False)
    src = open_source(f"wikidata-local:{tmp_path / 'store'}")
    names = ["Portugal", "Mount Everest", "Douglas Adams", "universe"]
    assert {n: q for n, q in src.lookup(names, ["Q6256"]).items() if q} == {"Portugal": ["Q45"]}
    assert {n: q for n, q in src.lookup(names, ["Q8502"]).items() if q} == {"Mount Everest": ["Q513"]}
    assert {n: q for n, q in src.lookup(names, ["Q5"]).items() if q} == {"Douglas Adams": ["Q42"]}
    assert src.class_status(["Q5", "Q6256", "Q45"]) == {"Q5": "has instances", "Q6256": "has instances", "Q45": "not a class"}
    rec = tmp_path / "records.jsonl"
    rows = [("Portugal", "P17", "Mount Everest", "Q6256", "Q8502"), ("Portugal", "P17", "Douglas Adams", "Q5", "Q5")]
    fields = ("person_a", "relation", "person_b", "class_a", "class_b")
    rec.write_text("".join(json.dumps({"paragraph": "x", **dict(zip(fields, row))}) + "\n" for row in rows))
    sel = read_records(rec)
    assert len(sel.records) == 1 and sel.removed[0].reason == "incomplete name"  # "Portugal" is no person's complete name
    [res], _ = disambiguate(sel.records, src, {}, [sel.of(r) for r in sel.records])
    assert (res.status, res.candidates_a, res.candidates_b) == ("unlinked", ("Q45",), ("Q513",))  # found in its class; no link between them
