"""Questions, prompts and sentences per language (kalma/languages/phrasing.py and the stages that
read it): no English left in a written language, every class's templates filled, the grammar the
templates model (gender, elision, contraction), a property phrased by what it is, not by its label."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest

from baselines.prompt import build_messages, template_answer
from dataset_builder import prompts
from dataset_builder.selection import template_sentence
from evaluation.base import EvalItem
from evaluation.judge_pairs import state_prompt
from evaluation.text_quality import judge_chats
from kalma.citations import parse_answer
from kalma.classes import CLASSES
from kalma.errors import ConfigError
from kalma.languages import LANGUAGES
from kalma.languages.phrasing import PHRASINGS, Noun, Phrasing, phrasing
from kalma.models.template import TemplateLLM
from kalma.properties import Vocabulary
from kalma.schema import Answer, EntityGraph, KnowledgeGraph, Triple

OTHERS = ("fr", "de", "es")

# English words a French, German or Spanish template must not hold: written here, apart from the
# templates, and none of them a word of those languages ("question", "relation", "place", "film",
# "person", "was", "war", "or", "on", "in", "die", "Not", "natural", "cite" are, so they are not here).
ENGLISH_WORDS = frozenset(
    """the and of is were with which who what whose each every only write reply below listed knowledge sentence
    paragraph fact facts answer new one that this after from by has have its their when where why how exactly
    copy claim instead never still mark square brackets grade score criterion poor people entities task
    example your turn known born founded twinned headquarters located owned subsidiary written directed works
    city company organization work mayor country spouse father mother child birth death award received given
    says nothing about does cover connects ask annotated continue end fits before leave unchanged add
    coherence consistency fluency relevance reads whole follows previous together clear loose agrees
    acceptable contradicted grammatical punctuated judged addresses covers avoids""".split()
)
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def english_in(text: str) -> list[str]:
    # the machine-readable parts are the same in every language: the QID column, the [NA] mark, slots
    text = re.sub(r"\{[a-z_]+\}|\bQID\b|\[NA\]", " ", text)
    return sorted({w for w in _WORD.findall(text) if w.lower() in ENGLISH_WORDS})


def _texts(ph: Phrasing) -> list[str]:
    """Every text a language's entry holds."""
    out: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, Noun):
            out.append(v.word)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, tuple | frozenset | list):
            for x in v:
                walk(x)

    for f in fields(ph):
        if f.name != "code":
            walk(getattr(ph, f.name))
    return out


def _facts(ph: Phrasing) -> list[Triple]:
    """Facts with the language's own labels: the demonstration's knowledge lines."""
    out = []
    for line in ph.demo_knowledge.splitlines():
        q, name, rel, val = line.split(" | ")
        out.append(Triple(subject=q, subject_label=name, relation="", relation_label=rel, value=val, value_label=val))
    return out


def _rendered(code: str) -> list[str]:
    """Every prompt a stage writes in the language (less the machine-readable `Task:` line) and the
    template's reply to each."""
    ph = phrasing(code)
    facts = _facts(ph)
    kg = KnowledgeGraph(entities=[EntityGraph(qid="Q7186", label="Marie Curie", triples=facts[:4])])
    paragraph = ph.sentence("Marie Curie", facts[0].relation_label, facts[0].value_label)
    noun = ph.noun("Q515").word
    chats = [
        prompts.annotate(paragraph, kg, code),
        prompts.extend(paragraph, facts[1], code),
        prompts.general_question(paragraph, ["Marie Curie", "Pierre Curie"], None, code),
        prompts.general_question(paragraph, ["Varsovie"], [noun], code),
        prompts.specific_question(paragraph, ["Marie Curie"], facts[:2], None, code),
        state_prompt(facts[:2], code),
        build_messages(ph.demo_question, kg, code),
    ]
    llm = TemplateLLM()
    answer = Answer(entry_id="e", text=ph.demo_answer)
    items = [
        EvalItem(answer, None, given, parse_answer(answer.text), None, None, ph.demo_question, Vocabulary.of(given))
        for given in (kg, KnowledgeGraph(entities=[]))
    ]
    out = [c[0]["content"] for c in judge_chats(items, code)]  # G-Eval's, with knowledge and without
    for chat in chats:
        prompt = chat[-1]["content"]
        out += [m["content"].split("\n", 1)[1] if m["content"].startswith("Task:") else m["content"] for m in chat]
        out.append(llm.respond(prompt))
    return out


def test_every_written_language_has_its_text():
    assert {c for c, lang in LANGUAGES.items() if lang.written} == set(PHRASINGS)
    for code in OTHERS:
        assert set(CLASSES) <= set(PHRASINGS[code].nouns), f"{code}: a registry class without its noun"
        assert set(PHRASINGS[code].geval_aspects) == set(PHRASINGS["en"].geval_aspects)


@pytest.mark.parametrize("code", OTHERS)
def test_no_english_left_in_a_written_language(code):
    assert english_in("Write the answer below.") == ["Write", "answer", "below", "the"]  # the list itself finds English
    left = {t[:80]: english_in(t) for t in _texts(PHRASINGS[code]) + _rendered(code) if english_in(t)}
    assert not left, f"{code}: English left in {left}"


@pytest.mark.parametrize("code", ["en", *OTHERS])
def test_every_class_renders_in_every_language_without_an_unfilled_slot(code):
    ph, llm = phrasing(code), TemplateLLM()
    for qid, cls in CLASSES.items():
        noun = ph.noun(qid, cls.noun).word if code != "en" else cls.noun
        for chat in (prompts.general_question("P.", ["Alpha"], [noun], code), prompts.general_question("P.", ["Alpha", "Beta"], [noun, noun], code)):
            reply = llm.respond(chat[0]["content"])
            assert reply.endswith("?") and not re.search(r"[{}]", reply) and noun in reply, (code, qid, reply)
        for pid in {**ph.relations, **ph.class_sentences.get(qid, {})}:
            fact = Triple(subject="Q1", subject_label="Alpha", relation=pid, relation_label="x", value="Q2", value_label="Beta")
            said = template_sentence(fact, language=code, cls=qid)
            assert not re.search(r"[{}]", said) and "Alpha" in said and "Beta" in said and said.endswith("."), (code, qid, pid, said)


def test_french_elides_before_a_vowel_and_contracts_by_gender():
    fr = phrasing("fr")
    assert [fr.the(fr.noun(q)) for q in ("Q43229", "Q7725634", "Q515", "Q11424")] == ["l'organisation", "l'œuvre", "la ville", "le film"]
    assert [fr.of_the(fr.noun(q)) for q in ("Q515", "Q11424", "Q3918", "Q8502")] == ["de la ville", "du film", "de l'université", "de la montagne"]
    assert (fr.of_name("Artemisia"), fr.of_name("Orazio"), fr.of_name("Rome"), fr.of_name("Hugo")) == ("d'Artemisia", "d'Orazio", "de Rome", "d'Hugo")
    assert fr.sentence("Artemisia", "lieu de naissance", "Rome") == "Le lieu de naissance d'Artemisia est Rome."
    assert fr.sentence("Marie", "date de naissance", "1867") == "La date de naissance de Marie est 1867."
    assert fr.sentence("Ada", "occupation", "mathématicienne") == "L'occupation d'Ada est mathématicienne."
    assert fr.sentence("Isenmouth", "", "Italie", "P17", "Q515") == "Isenmouth est une ville d'Italie."


def test_german_and_spanish_articles_follow_the_nouns_gender_and_case():
    de, es = phrasing("de"), phrasing("es")
    assert [de.named(de.noun(q), "X") for q in ("Q515", "Q4830453", "Q11424")] == ["die Stadt X", "das Unternehmen X", "den Film X"]
    assert de.about(de.noun("Q11424"), "X") == "über den Film X"
    assert de.sentence("Anna", "Geburtsdatum", "1900") == "Das Geburtsdatum von Anna ist 1900."
    assert (es.of_the(es.noun("Q476028")), es.of_the(es.noun("Q515"))) == ("del club de fútbol", "de la ciudad")
    assert es.sentence("Ana", "fecha de nacimiento", "1900") == "La fecha de nacimiento de Ana es 1900."


def test_a_property_is_phrased_by_what_it_is_a_noun_label_keeps_the_possessive():
    def said(pid: str, label: str, code: str = "en") -> str:
        return template_sentence(
            Triple(subject="Q1", subject_label="Lumen Press 3", relation=pid, relation_label=label, value="Q2", value_label="Sofia Novak"), language=code
        )

    assert said("P112", "founded by") == "Lumen Press 3 was founded by Sofia Novak."
    assert said("P190", "twinned administrative body") == "Lumen Press 3 is twinned with Sofia Novak."
    assert said("P159", "headquarters location") == "Lumen Press 3 has its headquarters in Sofia Novak."
    assert said("", "founded by") == "Lumen Press 3 was founded by Sofia Novak."  # by its label, where a prompt gives no PID
    assert said("P19", "place of birth") == "Lumen Press 3's place of birth is Sofia Novak."  # a noun: as before
    assert said("P112", "fondateur ou fondatrice", "fr") == "Sofia Novak a fondé Lumen Press 3."
    assert said("P112", "Gründer", "de") == "Lumen Press 3 wurde von Sofia Novak gegründet."
    # the template's answer and the builder's extend step phrase it the same way
    founded = Triple(subject="Q1", relation="P112", relation_label="founded by", value="Q2", value_label="Sofia Novak")
    kg = KnowledgeGraph(entities=[EntityGraph(qid="Q1", label="Lumen Press 3", triples=[founded])])
    answer = template_answer(build_messages("Who founded Lumen Press 3?", kg)[-1]["content"])
    assert answer.startswith("Lumen Press 3 was founded by Sofia Novak [Q1, founded by: Sofia Novak].")
    fact = kg.entities[0].triples[0].model_copy(update={"subject_label": "Lumen Press 3"})
    assert TemplateLLM().respond(prompts.extend("P.", fact)[0]["content"]) == "Lumen Press 3 was founded by Sofia Novak [Q1, founded by: Sofia Novak]."


def test_a_language_without_written_text_asks_a_model_in_english_and_the_template_refuses():
    ph = phrasing("pt-BR")
    assert ph.code == "pt-br" and ph.instruction == PHRASINGS["en"].instruction and "pt-br" in ph.write_in
    system = build_messages("Quem foi Ada?", KnowledgeGraph(entities=[]), "pt-br")[0]["content"]
    assert system.startswith(PHRASINGS["en"].instruction) and "BCP-47 tag pt-br" in system
    with pytest.raises(ConfigError, match=r"no sentences written in 'pt-br' \(it writes en, fr, de, es\)"):
        TemplateLLM().respond(prompts.general_question("P.", ["Ada"], None, "pt-br")[0]["content"])
    with pytest.raises(ConfigError, match="not a language tag"):
        phrasing("p t")
