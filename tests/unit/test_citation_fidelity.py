"""Scoring the citations real models write (issue 13): the paper's own markup style, property
identity, unknown labels, knowledge removal, silent drops, the §4.5 [NA] rule, totals, the
`table:` backend and how seeds are pooled. Every figure below is worked out by hand."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dataset_builder.demo import demo_entries
from evaluation.base import EvalItem, EvalOptions
from evaluation.citation_quality import CitationQuality
from evaluation.conscious_incompetence import ConsciousIncompetence
from evaluation.runner import evaluate
from kalma.biokalma import graph_from_release
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.schema import Answer, DatasetEntry, KnowledgeGraph

# Written in the style of the paper's demonstration (its markup, our sentences): `qid:`
# prefixes, `name:` pairs, several pairs and QIDs per bracket, the release's property names
# (`date_of_birth`, `notable works`, `languages spoken`), a label the KG lacks, and [NA].
PAPER_STYLE = (
    "Artemisia Gentileschi [qid: Q212657, name: Artemisia Gentileschi] was a painter from Rome "
    "[qid: Q212657, occupation: painter, place of birth: Rome], born on 8 July 1596 [qid: Q212657, date_of_birth: 1596-07-08]. "
    "Her father and teacher was the painter Orazio Gentileschi [qid: Q212657, father: Orazio Gentileschi, student of: Orazio Gentileschi] "
    "[qid: Q367360, name: Orazio Gentileschi, occupation: painter]. "
    "She spoke Italian [Q212657, languages spoken: Italian] and painted Judith Slaying Holofernes "
    "[Q212657, notable works: Judith Slaying Holofernes, favourite colour: red]. "
    "She died in Naples [Q212657, place of death: Naples] and Orazio died in London [NA]. "
    "Her career took her to Venice [NA]. Critics admired her bold style [NA]."
)
EXPECTED = [
    ("Q212657", "name", "Artemisia Gentileschi"),
    ("Q212657", "occupation", "painter"),
    ("Q212657", "place of birth", "Rome"),
    ("Q212657", "date_of_birth", "1596-07-08"),
    ("Q212657", "father", "Orazio Gentileschi"),
    ("Q212657", "student of", "Orazio Gentileschi"),
    ("Q367360", "name", "Orazio Gentileschi"),
    ("Q367360", "occupation", "painter"),
    ("Q212657", "languages spoken", "Italian"),
    ("Q212657", "notable works", "Judith Slaying Holofernes"),
    ("Q212657", "favourite colour", "red"),
    ("Q212657", "place of death", "Naples"),
]


@pytest.fixture(scope="module")
def gentileschi() -> DatasetEntry:
    return next(e for e in demo_entries(open_source("demo")) if e.id == "demo-gentileschi")


def _item(entry: DatasetEntry, text: str, **answer) -> EvalItem:
    return EvalItem.build(Answer(entry_id=entry.id, text=text, model="m", **answer), entry)


def _citation_scores(item: EvalItem, compat: str = "default"):
    return CitationQuality(EvalOptions(compat=compat)).score([item])[0]


def test_paper_style_is_read_citation_by_citation(gentileschi):
    it = _item(gentileschi, PAPER_STYLE)
    assert [(c.qid, c.relation, c.value) for c in it.parsed.citations] == EXPECTED
    assert it.parsed.errors == [] and it.parsed.na_count == 3 and len(it.parsed.sentences) == 6


@pytest.mark.parametrize("compat", ["default", "original"])
def test_paper_style_figures(gentileschi, compat):
    """12 citations; only `favourite colour: red` is not in the KG (11 correct). The minimum
    set is father, student of, occupation (Artemisia), place of death (both): 4 are cited."""
    s = _citation_scores(_item(gentileschi, PAPER_STYLE), compat)
    assert (s.counts["citations"], s.counts["correct"], s.counts["precise"], s.counts["recalled"]) == (12, 11, 4, 4)
    assert s.values["correctness"] == pytest.approx(11 / 12)
    assert s.values["precision"] == pytest.approx(4 / 12) and s.values["recall"] == pytest.approx(4 / 5)
    assert s.values["f1"] == pytest.approx(2 * (1 / 3) * 0.8 / (1 / 3 + 0.8))


@pytest.mark.parametrize("compat,precise,recalled", [("default", 3, 3), ("original", 4, 4)])
def test_paper_style_after_knowledge_removal(gentileschi, compat, precise, recalled):
    """Naples removed from the KG given: the citation now reads the same, and only its
    judgement changes; the authors' code still counts it for precision and recall."""
    from kalma.removal import remove_knowledge

    naples = next(t for t in gentileschi.minimum_set if t.value_label == "Naples")
    given = gentileschi.knowledge_pool.without({naples.key()})
    it = _item(gentileschi, PAPER_STYLE, kg=given, absent=[naples])
    assert [(c.qid, c.relation, c.value) for c in it.parsed.citations] == EXPECTED
    s = _citation_scores(it, compat)
    assert s.counts["correct"] == 10 and (s.counts["precise"], s.counts["recalled"]) == (precise, recalled)
    assert s.values["precision"] == pytest.approx(precise / 12) and s.values["recall"] == pytest.approx(recalled / 5)
    # whatever is removed, the answer parses the same
    for k in range(4):
        cond = remove_knowledge([gentileschi], k, seed=3)[gentileschi.id]
        again = _item(gentileschi, PAPER_STYLE, kg=cond.kg, absent=cond.absent)
        assert again.parsed.citations == it.parsed.citations and again.parsed.errors == []


def test_paper_style_alignment_and_na(gentileschi):
    from evaluation.alignment import Alignment

    naples = next(t for t in gentileschi.minimum_set if t.value_label == "Naples")
    it = _item(gentileschi, PAPER_STYLE, kg=gentileschi.knowledge_pool.without({naples.key()}), absent=[naples])
    a = Alignment(EvalOptions()).score([it])[0]
    assert (a.counts["align_pairs"], a.counts["aligned"]) == (12, 11)  # "red" is not in its sentence
    # [NA] sentences: "...died in Naples ... London" entails the absent triple; "Her career took her
    # to Venice" addresses the question (its career) but entails nothing; "Critics admired her
    # bold style" does not address the question at all, which §4.5 counts as correct.
    on = ConsciousIncompetence(EvalOptions()).score([it])[0]
    off = ConsciousIncompetence(EvalOptions(), relevance=False).score([it])[0]
    assert on.values["na_precision"] == pytest.approx(2 / 3) and off.values["na_precision"] == pytest.approx(1 / 3)
    assert on.counts["na_sentences_irrelevant"] == 1 and on.values["na_recall"] == off.values["na_recall"] == 1.0


# The same twelve facts as a chat model writes them: an intro line, a list with no full stops,
# the prompt's knowledge lines copied into brackets, a colon after a QID, JSON-ish quotes.
CHAT_STYLE = (
    "Here is what the knowledge says about Artemisia Gentileschi:\n\n"
    "- Her name was Artemisia Gentileschi [Q212657 | Artemisia Gentileschi | name | Artemisia Gentileschi]\n"
    "- She was a painter from Rome [Q212657 | Artemisia Gentileschi | occupation | painter; Q212657 | Artemisia Gentileschi | place of birth | Rome]\n"
    "- She was born on 8 July 1596 [Q212657: date_of_birth: 1596-07-08]\n"
    '- Her father and teacher was the painter Orazio Gentileschi [Q212657, "father": "Orazio Gentileschi", "student of": "Orazio Gentileschi"] '
    "[qid: Q367360, name: Orazio Gentileschi, occupation: painter]\n"
    "- She spoke Italian [Q212657 | languages spoken | Italian] and painted Judith Slaying Holofernes "
    "[Q212657, notable works: Judith Slaying Holofernes, favourite colour: red]\n"
    "- She died in Naples [Q212657, place of death: Naples] and Orazio died in London [NA]\n"
    "- Her career took her to Venice [NA]\n"
    "- Critics admired her bold style [NA]"
)


def test_chat_style_scores_exactly_as_the_paper_style(gentileschi):
    """Before lists and copied knowledge lines were read, this answer scored F1 16.7 (7 citations,
    4 malformed, 2 sentences, 1 [NA] mark) instead of the 47.1 its facts earn."""
    from evaluation.alignment import Alignment

    chat = _item(gentileschi, CHAT_STYLE)
    assert [(c.qid, c.relation, c.value) for c in chat.parsed.citations] == EXPECTED
    assert chat.parsed.errors == [] and chat.parsed.na_count == 3 and len(chat.parsed.sentences) == 9  # the intro line included
    assert _citation_scores(chat).values == _citation_scores(_item(gentileschi, PAPER_STYLE)).values
    naples = next(t for t in gentileschi.minimum_set if t.value_label == "Naples")
    for metric in (Alignment(EvalOptions()), ConsciousIncompetence(EvalOptions())):
        chat_s, paper_s = (
            metric.score([_item(gentileschi, text, kg=gentileschi.knowledge_pool.without({naples.key()}), absent=[naples])])[0]
            for text in (CHAT_STYLE, PAPER_STYLE)
        )
        assert chat_s.values == paper_s.values and chat_s.counts == paper_s.counts


def test_name_pairs_are_judged_like_any_fact(gentileschi):
    s = _citation_scores(_item(gentileschi, "She [Q212657, name: Artemisia Gentileschi] met him [qid: Q212657, name: Artemisia Lomi]."))
    assert (s.counts["citations"], s.counts["correct"]) == (2, 1)
    # the bare name is not a citation, and a name pair after another pair is still one
    s = _citation_scores(_item(gentileschi, "She painted [Q212657, Artemisia Gentileschi, occupation: painter, name: Artemisia Gentileschi]."))
    assert (s.counts["citations"], s.counts["correct"]) == (2, 2)


def test_relations_match_by_property_identity(gentileschi):
    text = (
        "Born in Rome [Q212657, birthplace: Rome] on 8 July 1596 [Q212657, P569: 1596-07-08], "
        "she spoke Italian [Q212657, Languages_Spoken: Italian] and was known for Judith [Q212657, known for: Judith Slaying Holofernes]."
    )
    s = _citation_scores(_item(gentileschi, text))
    assert (s.counts["citations"], s.counts["correct"]) == (4, 4)
    # values are exact: another spelling of the value is not the fact
    s = _citation_scores(_item(gentileschi, "Born in rome [Q212657, place of birth: rome]."))
    assert s.counts["correct"] == 0


def test_the_release_keys_match_the_imported_graph():
    """A model shown the authors' release cites `date_of_birth` and `notable works`; the
    imported graph keeps the release's label, with Wikidata's PID where it is certain."""
    g = graph_from_release(
        {
            "qid": "Q367360",
            "name": "Orazio Gentileschi",
            "date_of_birth": "1563-07-19",
            "date_of_death": "",
            "notable works": "Diana the Huntress",
            "noble family": "Gentileschi",
            "languages spoken": "Italian",
        }
    )
    entry = DatasetEntry(id="r", general_question="", specific_question="q", knowledge_pool=KnowledgeGraph(entities=[g]))
    text = (
        "Orazio was born in 1563 [qid: Q367360, date_of_birth: 1563-07-19, date of birth: 1563-07-19] and painted Diana "
        "[qid: Q367360, notable work: Diana the Huntress, noble family: Gentileschi, languages spoken, written or signed: Italian]."
    )
    s = _citation_scores(_item(entry, text))
    assert (s.counts["citations"], s.counts["correct"]) == (5, 5)
    assert s.values["precision"] is None  # the release has no minimum sets


def test_unknown_label_does_not_destroy_the_pair_before_it(gentileschi):
    s = _citation_scores(_item(gentileschi, "She was born in Rome [Q212657, place of birth: Rome, favourite colour: red]."))
    assert (s.counts["citations"], s.counts["correct"]) == (2, 1)


@pytest.mark.parametrize(
    "text,reason",
    [
        ("She painted [Q212657].", "no_pair"),
        ("She painted [Q212657, Artemisia Gentileschi].", "no_pair"),
        ("She was born in Rome [Q212657, place of birth: Rome, ].", "trailing_separator"),
        ("She painted [Q212657, occupation: painter, Q367360].", "no_pair"),
    ],
)
def test_silent_drops_are_malformed_with_a_reason(tmp_path, gentileschi, text, reason):
    s = _run(tmp_path, [gentileschi], [Answer(entry_id=gentileschi.id, text=text, model="m")], metrics=["citation"])
    assert s.malformed == {reason: 1} and s.counts["malformed"] == 1


def _run(tmp_path, entries, answers, **kw):
    write_jsonl(tmp_path / "d.jsonl", entries, "dataset")
    write_jsonl(tmp_path / "a.jsonl", answers, "answers")
    return evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", progress=False, **kw)


def test_summary_totals(tmp_path, gentileschi):
    answers = [
        Answer(entry_id=gentileschi.id, text=PAPER_STYLE, model="m", run="a"),
        Answer(entry_id=gentileschi.id, text="Odd [sic]. Fine [Q212657, occupation: painter, ] [NA].", model="m", run="b"),
    ]
    s = _run(tmp_path, [gentileschi], answers, metrics=["citation"])
    assert {k: s.counts[k] for k in ("answers", "sentences", "citations", "correct_citations", "na_marks", "malformed")} == {
        "answers": 2,
        "sentences": 8,
        "citations": 13,
        "correct_citations": 12,
        "na_marks": 4,
        "malformed": 2,
    }
    assert s.malformed == {"no_qid": 1, "trailing_separator": 1}
    on_disk = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert on_disk["counts"]["correct_citations"] == 12 and on_disk["malformed"]["no_qid"] == 1
    assert "Totals: answers 2, sentences 8, citations 13, na marks 4, malformed 2, correct citations 12" in (tmp_path / "out" / "summary.md").read_text()


def test_evaluate_exits_non_zero_on_a_bad_answers_file_unless_lenient(tmp_path, gentileschi):
    from kalma.cli import main

    write_jsonl(tmp_path / "d.jsonl", [gentileschi], "dataset")
    head = json.dumps({"kalma": {"kind": "answers", "format_version": 2}})
    good = Answer(entry_id=gentileschi.id, text=PAPER_STYLE, model="m").model_dump_json()
    (tmp_path / "a.jsonl").write_text("\n".join([head, good, '{"entry_id": ', Answer(entry_id="nope", text="x", model="m").model_dump_json()]) + "\n")
    args = ["evaluate", "--dataset", str(tmp_path / "d.jsonl"), "--answers", str(tmp_path / "a.jsonl"), "--metrics", "citation"]
    strict = CliRunner().invoke(main, args + ["-o", str(tmp_path / "o1")])
    assert strict.exit_code == 1
    assert "1 corrupt line, 1 unknown entry id" in strict.output and "--lenient" in strict.output
    assert json.loads((tmp_path / "o1" / "summary.json").read_text())["counts"]["citations"] == 12  # the valid answer was scored
    lenient = CliRunner().invoke(main, args + ["-o", str(tmp_path / "o2"), "--lenient"])
    assert lenient.exit_code == 0, lenient.output


# ---------------------------------------------------------------- table: backend


def _table(tmp_path, rows, name: str = "judgements.jsonl") -> str:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"table:{path}"


def test_table_backend_makes_figure3_exact(tmp_path, gentileschi):
    """Figure 3 from human labels: S1 entails k2 (and, in the variant, k4); S2 nothing."""
    from kalma.models import get_entailment

    k2, k4, k5 = (next(t for t in gentileschi.knowledge_pool.triples() if t.value_label == v) for v in ("Naples", "Orazio Gentileschi", "Caravaggisti"))
    s1, s2 = "Her last years were spent far from Rome.", "Her style owed much to others."
    q = gentileschi.specific_question
    base = [{"premise": s, "hypothesis": f"{t.relation_label}: {t.value_label}", "label": "neutral"} for s in (s1, s2) for t in (k2, k4, k5)]
    rel = [{"premise": s, "hypothesis": q, "probability": 0.9} for s in (s1, s2)]
    cases = [({(s1, "Naples")}, 1 / 2, 1 / 3), ({(s1, "Naples"), (s1, "Orazio Gentileschi")}, 1 / 2, 2 / 3), ({(s1, "Naples"), (s2, "Naples")}, 1.0, 1 / 3)]
    for i, (entailed, p, r) in enumerate(cases):
        rows = [dict(row, label="entailment") if (row["premise"], row["hypothesis"].split(": ", 1)[1]) in entailed else row for row in base]
        spec = _table(tmp_path, rows + rel, f"case{i}.jsonl")
        it = _item(gentileschi, f"{s1} [NA] {s2} [NA]", absent=[k2, k4, k5])
        got = ConsciousIncompetence(EvalOptions(nli=spec)).score([it])[0]
        assert got.values["na_precision"] == pytest.approx(p) and got.values["na_recall"] == pytest.approx(r)
        assert get_entailment(spec).approximate is False


def test_table_backend_names_a_missing_pair(tmp_path, gentileschi):
    from kalma.models.table import MissingJudgement

    spec = _table(tmp_path, [{"premise": "x", "hypothesis": "y", "label": True}])
    with pytest.raises(MissingJudgement, match="no judgement for premise 'She was a painter.' and hypothesis 'occupation: painter'"):
        from evaluation.alignment import Alignment

        Alignment(EvalOptions(nli=spec)).score([_item(gentileschi, "She was a painter [Q212657, occupation: painter].")])


@pytest.mark.parametrize(
    "row,message",
    [
        ({"premise": "x", "hypothesis": "y", "label": "maybe"}, "judgements.jsonl:1: field 'label'"),
        ({"premise": "x", "hypothesis": "y", "probability": 1.5}, "judgements.jsonl:1: field 'probability'"),
        ({"premise": "x", "label": 1}, "judgements.jsonl:1: field 'hypothesis'"),
    ],
)
def test_table_backend_rejects_bad_rows(tmp_path, row, message):
    from kalma.models.table import TableEntailment

    with pytest.raises(ValueError, match=message):
        TableEntailment(_table(tmp_path, [row])[len("table:") :])


def test_table_backend_label_forms(tmp_path):
    from kalma.models.table import TableEntailment

    rows = [{"premise": f"p{i}", "hypothesis": "h", "label": lab} for i, lab in enumerate(["entailment", "yes", True, 1, "neutral", "no", False, 0])]
    t = TableEntailment(_table(tmp_path, rows + [{"premise": "  p9 ", "hypothesis": "h", "probability": 0.25}])[len("table:") :])
    assert t.probs([(f"p{i}", "h") for i in range(8)] + [("p9", " h")]) == [1.0] * 4 + [0.0] * 4 + [0.25]
