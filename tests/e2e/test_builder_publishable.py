"""What a published dataset may hold (issue 21), with a knowledge graph and records of our own:
titles are not names, every removed record is reported beside the dataset, failed entries are
never written (and never accepted), labels only, no trivial relation in any round, one triple
per fact (by the KG's own P1696 statements too), every LLM call traced, and a changed KG or
model never resumed into an old output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_builder import prompts
from dataset_builder.build import BuildConfig, build
from dataset_builder.evolve import EvolveConfig
from dataset_builder.pool import Facts, inverse_table
from dataset_builder.selection import is_trivial
from kalma.citations import Citation, format_sentence, parse_answer
from kalma.cli import main
from kalma.errors import ResumeMismatch
from kalma.jsonl import read_jsonl
from kalma.kg import open_source
from kalma.models.template import TemplateLLM
from kalma.properties import Vocabulary
from kalma.schema import BuildTrace, DatasetEntry, RemovedRecord
from kalma.verbalize import knowledge_from_prompt, section
from perf.random_models import build_causal
from tests.servers import answering, scripted_server

# Two botanists of our own making: a spouse link stated both ways, a teacher stated both ways
# (P1066/P802, in the built-in table), a mentor stated both ways by a property pair that only
# the graph's own P1696 statements relate, trivial relations, and two values without a label.
KG_TTL = """
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix wikibase: <http://wikiba.se/ontology#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
wd:P31 wikibase:directClaim wdt:P31 ; rdfs:label "instance of"@en .
wd:P21 wikibase:directClaim wdt:P21 ; rdfs:label "sex or gender"@en .
wd:P734 wikibase:directClaim wdt:P734 ; rdfs:label "family name"@en .
wd:P106 wikibase:directClaim wdt:P106 ; rdfs:label "occupation"@en .
wd:P19 wikibase:directClaim wdt:P19 ; rdfs:label "place of birth"@en .
wd:P26 wikibase:directClaim wdt:P26 ; rdfs:label "spouse"@en .
wd:P69 wikibase:directClaim wdt:P69 ; rdfs:label "educated at"@en .
wd:P800 wikibase:directClaim wdt:P800 ; rdfs:label "notable work"@en .
wd:P1066 wikibase:directClaim wdt:P1066 ; rdfs:label "student of"@en .
wd:P802 wikibase:directClaim wdt:P802 ; rdfs:label "student"@en .
wd:P9001 wikibase:directClaim wdt:P9001 ; rdfs:label "mentor of"@en ; wdt:P1696 wd:P9002 .
wd:P9002 wikibase:directClaim wdt:P9002 ; rdfs:label "mentored by"@en .
wd:Q5 rdfs:label "human"@en .
wd:Q6581072 rdfs:label "female"@en .
wd:Q6581097 rdfs:label "male"@en .
wd:Q900100010 rdfs:label "Osterlund"@en .
wd:Q900100011 rdfs:label "Uppsala"@en .
wd:Q900100012 rdfs:label "botanist"@en .
wd:Q900100013 rdfs:label "chemist"@en .
wd:Q900100001 rdfs:label "Mara Osterlund"@en ; wdt:P31 wd:Q5 ; wdt:P21 wd:Q6581072 ; wdt:P734 wd:Q900100010 ;
    wdt:P106 wd:Q900100012 ; wdt:P19 wd:Q900100011 ; wdt:P26 wd:Q900100002 ; wdt:P1066 wd:Q900100002 ;
    wdt:P9002 wd:Q900100002 ; wdt:P69 wd:Q987654099 .
wd:Q900100002 rdfs:label "Erik Lindqvist"@en ; wdt:P31 wd:Q5 ; wdt:P21 wd:Q6581097 ; wdt:P106 wd:Q900100013 ;
    wdt:P26 wd:Q900100001 ; wdt:P802 wd:Q900100001 ; wdt:P9001 wd:Q900100001 ; wdt:P800 wd:Q987654098 .
"""
PARAGRAPH = "Mara Osterlund was a botanist born in Uppsala. She married the chemist Erik Lindqvist, who taught and mentored her."
RECORDS = [
    {"paragraph": PARAGRAPH, "person_a": "Mara Osterlund", "relation": "spouse", "person_b": "Erik Lindqvist"},
    {"paragraph": "The emperor married her.", "person_a": "Lady Liu", "relation": "spouse", "person_b": "Emperor Wu"},
    {"paragraph": "x", "person_a": "Lord Byron", "relation": "father", "person_b": "Ada Lovelace"},
    {"paragraph": "x", "person_a": "Lady Ashcombe", "relation": "spouse", "person_b": "Roland Cubitt"},
    {"paragraph": "x", "person_a": "Mara", "relation": "spouse", "person_b": "Erik Lindqvist"},
    {"paragraph": "x", "person_a": "Nils Osterlund", "relation": "sibling", "person_b": "Mara Osterlund"},
]


@pytest.fixture
def world(tmp_path: Path) -> Path:
    (tmp_path / "kg.ttl").write_text(KG_TTL)
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return tmp_path


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return "hf:" + str(build_causal(tmp_path_factory.mktemp("lm")))


def greedy(prompt: str) -> str:
    """An annotator that cites every listed fact after the paragraph's first sentence, trivial
    ones and both directions of each link included; every other step as the template backend."""
    if not prompt.startswith(f"{prompts.TASK} annotate"):
        return TemplateLLM().respond(prompt)
    first, _, rest = section(prompt, prompts.PARAGRAPH).partition(". ")
    return f"{format_sentence(first + '.', knowledge_from_prompt(prompt))} {rest}"


def _build(world: Path, llm: str, lm: str, out: str = "ds.jsonl", **kw) -> dict:
    return build(world / "records.jsonl", world / out, BuildConfig(kg=str(world / "kg.ttl"), llm=llm, lm=lm, **kw), progress=False)


def test_every_rule_of_a_minimum_set_holds_whatever_the_llm_cites(world, tiny_lm):
    with scripted_server([answering(greedy)]) as (url, log):
        llm = f"openai-compatible:{url}/v1:greedy"
        report = _build(world, llm, tiny_lm)
    (entry,) = read_jsonl(world / "ds.jsonl", DatasetEntry, kind="dataset")
    minimum = entry.minimum_set or []
    assert minimum and not any(is_trivial(t) for t in minimum)  # round 1 is held to the rule of every round
    rels = sorted((t.subject_label, t.relation_label) for t in minimum)
    assert rels == sorted(
        [
            ("Mara Osterlund", "occupation"),
            ("Mara Osterlund", "place of birth"),
            ("Mara Osterlund", "spouse"),  # not Erik's spouse too
            ("Mara Osterlund", "student of"),  # not Erik's student too (the built-in table)
            ("Mara Osterlund", "mentored by"),  # not Erik's "mentor of" too (the graph's own P1696)
            ("Erik Lindqvist", "occupation"),
        ]
    )
    assert "left out: 5 trivial relation, 3 the inverse of a kept triple" in entry.trace[0].note
    # values without a label are no knowledge: not in the pool, the minimum set or the paragraph
    text = json.dumps(entry.model_dump())
    assert "Q987654099" not in text and "Q987654098" not in text
    assert report["records"]["unlabelled values left out of pools"] == 2
    # every call is in the trace: prompt, reply, backend, seed, round
    (trace,) = read_jsonl(world / "ds.trace.jsonl", BuildTrace, kind="build_trace")
    assert trace.status == "written" and len(trace.calls) == len(log)
    assert [(c.step, c.round) for c in trace.calls][:1] == [("annotate", 1)] and trace.calls[-1].step == "specific-question"
    assert all(c.backend == llm and c.seed is not None and c.messages and c.reply for c in trace.calls)
    assert trace.calls[0].messages[-1]["content"] == json.loads(log[0]["body"])["messages"][-1]["content"]
    assert len({c.seed for c in trace.calls}) == len(trace.calls)  # one seed per call, derived from the entry's


def test_titles_are_not_names_and_every_removed_record_is_reported(world, tiny_lm):
    report = _build(world, "template", tiny_lm)
    removed = list(read_jsonl(world / "ds.removed.jsonl", RemovedRecord, kind="removed_records"))
    assert [(r.line, r.stage, r.reason) for r in removed] == [
        (2, "selection", "title with one name"),
        (3, "selection", "title with one name"),
        (4, "selection", "title with one name"),
        (5, "selection", "incomplete name"),
        (6, "disambiguation", "not found"),
    ]
    assert removed[0].detail == "'Lady Liu'" and removed[2].person_a == "Lady Ashcombe"
    header = json.loads((world / "ds.jsonl").read_text().splitlines()[0])["kalma"]["provenance"]
    assert header["records"]["removed"] == {"title with one name": 3, "incomplete name": 1, "not found": 1} == report["records"]["removed"]
    assert header["records"]["removed_file"] == "ds.removed.jsonl" and header["trace_file"] == "ds.trace.jsonl"


def test_a_failed_entry_is_counted_and_traced_never_written(world, tiny_lm):
    with scripted_server([answering(lambda prompt: "Who was Mara Osterlund?")]) as (url, _):
        report = _build(world, f"openai-compatible:{url}/v1:parrot", tiny_lm, evolve=EvolveConfig(rounds=2, attempts=1))
        assert report["entries"] == {"written": 0, "already_there": 0, "failed": {"empty minimum set": 1, "same questions": 1}, "attempted": 1}
        assert read_jsonl(world / "ds.jsonl", DatasetEntry, kind="dataset").records == []
        (trace,) = read_jsonl(world / "ds.trace.jsonl", BuildTrace, kind="build_trace")
        assert trace.status == "failed" and trace.failures == ["empty minimum set", "same questions"] and len(trace.calls) == 4
        again = _build(world, f"openai-compatible:{url}/v1:parrot", tiny_lm, evolve=EvolveConfig(rounds=2, attempts=1))
    assert again["entries"]["attempted"] == 0 and again["entries"]["failed"] == report["entries"]["failed"]  # not redone on resume


def test_the_checker_refuses_an_empty_minimum_set_and_equal_questions(tmp_path):
    good = DatasetEntry(id="ok", general_question="Who was she?", specific_question="Where was she born?", minimum_set=None)
    rows = [
        good.model_dump(mode="json"),
        {**good.model_dump(mode="json"), "id": "empty", "minimum_set": []},
        {**good.model_dump(mode="json"), "id": "same", "general_question": "where was she  BORN?"},
    ]
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"kalma": {"kind": "dataset", "format_version": 3}}) + "\n" + "".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(main, ["check", str(path), "--kind", "dataset", "--all-errors"])
    assert res.exit_code == 1
    assert f"{path}:3: field 'minimum_set': empty: an entry needs at least one piece of knowledge" in res.output
    assert f"{path}:4: field 'specific_question': the same text as general_question" in res.output
    assert "1 good record, 2 bad lines" in res.output


def test_a_changed_graph_or_model_is_never_resumed_into_an_old_build(world, tiny_lm):
    _build(world, "template", tiny_lm)
    kg = world / "kg.ttl"
    kg.write_text(kg.read_text().replace('"botanist"@en', '"plant scientist"@en'))
    with pytest.raises(ResumeMismatch, match=r"changed since: input kg .*kg\.ttl"):
        _build(world, "template", tiny_lm)
    kg.write_text(KG_TTL)
    _build(world, "template", tiny_lm)  # the same graph again: resumes
    with scripted_server([answering(str.upper)]) as (url, asked), pytest.raises(ResumeMismatch, match="setting llm"):
        _build(world, f"openai-compatible:{url}/v1:other", tiny_lm)  # a server that is there, since it is asked first
    assert not asked


def test_inverse_properties_come_from_the_graph_and_the_table(world):
    source = open_source(str(world / "kg.ttl"))
    assert source.inverse_properties(["P9001", "P9002", "P26"]) == {"P9001": ["P9002"], "P9002": ["P9001"]}
    table = inverse_table(source, ["P9001", "P26"])
    assert table["P9002"] == {"P9001"} and table["P26"] == {"P26"} and table["P40"] == {"P22", "P25"}
    g = source.subgraphs(["Q900100001", "Q900100002"])
    facts = Facts(table, Vocabulary.of(*g.values()))
    kept = [facts.add(t) for q in ("Q900100001", "Q900100002") for t in g[q].triples if t.relation in {"P26", "P1066", "P802", "P9001", "P9002"}]
    assert kept.count(True) == 3 and len(facts) == 3


def test_stats_print_the_papers_figures_beside_the_datasets(world, tiny_lm):
    _build(world, "template", tiny_lm)
    out = CliRunner().invoke(main, ["dataset", "stats", str(world / "ds.jsonl")]).output
    assert "| knowledge per minimum set (mean) | " in out and "| 6.8 |" in out and "| 1,085 |" in out
    assert "| era (birth years) | – | 1950 BC to 2001 AD |" in out
    data = json.loads(CliRunner().invoke(main, ["dataset", "stats", str(world / "ds.jsonl"), "--json"]).output)
    assert data["paper"]["cities"] == 949 and data["dataset"]["entries"] == 1


def test_the_release_importer_drops_self_loops(tmp_path):
    release = [
        [
            "Who were they?",
            [
                {"qid": "Q1", "name": "Robert Southey", "father": "Robert Southey", "occupation": "poet"},
                {"qid": "Q2", "name": "Edith Fricker", "spouse": "Robert Southey"},
            ],
        ]
    ]
    (tmp_path / "r.json").write_text(json.dumps(release))
    res = CliRunner().invoke(main, ["kg", "import-biokalma", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.nt")])
    assert res.exit_code == 0, res.output
    stats = json.loads(res.output)
    assert stats["self_loops_dropped"] == 1 and stats["person_links"] == 1
    nt = (tmp_path / "r.nt").read_text()
    assert "<http://www.wikidata.org/entity/Q2> <http://www.wikidata.org/prop/direct/P26> <http://www.wikidata.org/entity/Q1>" in nt
    assert not [
        line for line in nt.splitlines() if line.startswith("<http://www.wikidata.org/entity/Q1> ") and line.endswith("<http://www.wikidata.org/entity/Q1> .")
    ]


def test_cited_facts_parse_back():
    """The greedy annotator's output reads back as the citations it wrote (a check on the test's own tool)."""
    c = [Citation("Q1", "spouse", "Erik Lindqvist")]
    assert parse_answer(format_sentence("She married.", c)).citations[0].value == "Erik Lindqvist"
