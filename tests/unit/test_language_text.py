"""Text rules per language (kalma/languages/text.py): sentence splitting in the citation parser
and the checkers' Punkt splitter, with English exactly as before languages."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalma import citations
from kalma.citations import parse_answer, strip_citations
from kalma.languages.text import rules
from kalma.models.checkers import sentences, splitter
from kalma.models.lexical import FUNCTION_WORDS, MONTHS, LexicalEntailment, date_forms, norm, shares_content_word
from kalma.schema import ISO_DATE_RE
from tests.conftest import SHARED

ENTITIES = SHARED / "data" / "wikidata-entities"


def clean(text: str, language: str) -> list[str]:
    return [s.clean for s in parse_answer(text, language=language).sentences]


def entity(qid: str) -> dict:
    """A real Wikidata entity of ../shared (labels and descriptions in up to 299 languages)."""
    path = ENTITIES / f"{qid}.json"
    if not path.exists():
        pytest.skip("../shared/data/wikidata-entities is not present")
    data = json.loads(path.read_text())
    return data["entities"][qid] if "entities" in data else data


def text_of(e: dict, key: str, lang: str) -> str:
    return e[key][lang]["value"]


def test_french_m_and_p_ex_end_no_sentence():
    adams = entity("Q42")
    label, what = text_of(adams, "labels", "fr"), text_of(adams, "descriptions", "fr")
    answer = (
        f"M. {label} était un {what} [Q42, occupation: écrivain]. "
        f"Il a vécu dans plusieurs villes, p. ex. Cambridge et Londres [Q42, lieu de résidence: Londres]. "
        "Il est mort à Santa Barbara [NA]."
    )
    parsed = parse_answer(answer, language="fr")
    assert [s.clean for s in parsed.sentences] == [
        f"M. {label} était un {what}.",
        "Il a vécu dans plusieurs villes, p. ex. Cambridge et Londres.",
        "Il est mort à Santa Barbara.",
    ]
    assert [len(s.citations) for s in parsed.sentences] == [1, 1, 0] and parsed.sentences[2].na
    # English rules read "p. ex. Cambridge" as a sentence's end: the language decides
    assert "Il a vécu dans plusieurs villes, p. ex." in clean(answer, "en")


def test_french_abbreviations_and_era():
    text = "Pr. Curie et M. Becquerel furent récompensés en 1903. La ville fut fondée vers 52 av. J.-C. par les Romains. Mme Curie, c.-à-d. Marie, resta."
    assert clean(text, "fr") == [
        "Pr. Curie et M. Becquerel furent récompensés en 1903.",
        "La ville fut fondée vers 52 av. J.-C. par les Romains.",
        "Mme Curie, c.-à-d. Marie, resta.",
    ]


def test_german_abbreviations_and_ordinals():
    everest = entity("Q513")
    label, what = text_of(everest, "labels", "de"), text_of(everest, "descriptions", "de")
    text = (
        f"Der {label} ist der {what} [Q513, Höhe über dem Meeresspiegel: 8849]. "
        "Er wurde am 29. Mai 1953 erstbestiegen, u. a. von Tenzing Norgay. "
        "Dr. Müller nennt z. B. Hillary. Im 19. Jahrhundert wurde er vermessen. Das war 1856. Danach kam nichts."
    )
    assert clean(text, "de") == [
        f"Der {label} ist der {what}.",
        "Er wurde am 29. Mai 1953 erstbestiegen, u. a. von Tenzing Norgay.",
        "Dr. Müller nennt z. B. Hillary.",
        "Im 19. Jahrhundert wurde er vermessen.",
        "Das war 1856.",  # a year's stop still ends a sentence
        "Danach kam nichts.",
    ]
    assert "Er wurde am 29." in clean(text, "en")


def test_spanish_abbreviations():
    universe = entity("Q1")
    what = text_of(universe, "descriptions", "es")
    text = f"El universo es la {what} [Q1, instancia de: universo]. El Sr. Pérez lo estudió con la Dra. Gómez. Hay galaxias, p. ej. Andrómeda. Fin."
    assert clean(text, "es") == [
        f"El universo es la {what}.",
        "El Sr. Pérez lo estudió con la Dra. Gómez.",
        "Hay galaxias, p. ej. Andrómeda.",
        "Fin.",
    ]


def test_a_language_without_rules_keeps_the_shared_ones():
    # initials, acronyms and decimals in any language; no abbreviation list of its own
    assert clean("O Sr. J. Silva mede 1.85 m. Nasceu em Lisboa.", "pt") == ["O Sr.", "J. Silva mede 1.85 m.", "Nasceu em Lisboa."]


def test_strip_citations_follows_the_language():
    text = "Il aimait les villes, p. ex. Lyon [Q1, lieu: Lyon]. Fin."
    assert strip_citations(text, "fr") == "Il aimait les villes, p. ex. Lyon. Fin."


def test_the_builder_keeps_the_whole_sentence_that_carries_a_fact_by_the_languages_rules():
    """The extend step keeps the reply's sentence that cites the new fact: in French, "juil." ends
    no sentence, where English rules would keep only "1593 à Rome" of it."""
    from dataset_builder.evolve import _carrying_sentence
    from kalma.citations import Vocabulary
    from kalma.schema import Triple

    fact = Triple(subject="Q1", relation="P19", relation_label="lieu de naissance", value="Q220", value_label="Rome")
    reply = "Il naquit le 8 juil. 1593 à Rome [Q1, lieu de naissance: Rome]. Il fut peintre."
    vocab = Vocabulary.of([fact])
    assert _carrying_sentence(reply, "", fact, vocab, "fr") == "Il naquit le 8 juil. 1593 à Rome [Q1, lieu de naissance: Rome]."
    assert _carrying_sentence(reply, "", fact, vocab, "en") == "1593 à Rome [Q1, lieu de naissance: Rome]."  # the case tells the rules apart


def test_checkers_punkt_takes_the_languages_abbreviations():
    assert sentences("Il aime p. ex. Lyon. M. Dupont est là.", "fr") == ["Il aime p. ex. Lyon.", "M. Dupont est là."]
    assert sentences("Er kam am 1. Mai 1990 an. Er mag z. B. Hamburg. Dr. Müller kam.", "de") == [
        "Er kam am 1. Mai 1990 an.",
        "Er mag z. B. Hamburg.",
        "Dr. Müller kam.",
    ]
    assert "fr abbreviations" in splitter("fr") or "punkt_tab french" in splitter("fr")
    assert splitter() in ("NLTK punkt_tab english", "NLTK Punkt untrained (no punkt_tab installed)")


# ---------------------------------------------------------------- English: the splitter before languages, kept here only


_OLD_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc no mt gen col lt sgt capt rev hon inc ltd co fr sen rep gov pres "
    "e.g i.e ca cf approx dept univ jan feb mar apr jun jul aug sep sept oct nov dec".split()
)


def _old_is_abbreviation(masked: str, stop: int) -> bool:
    if masked[stop] != ".":
        return False
    floor = max(0, stop - 12 - 1)
    j = stop
    while j > floor and (masked[j - 1].isalpha() or masked[j - 1] == "."):
        j -= 1
    word = masked[j:stop]
    if not word or (j == floor and floor > 0):
        return False
    if len(word) == 1 and word.isupper():
        return True
    if "." in word and all(len(p) == 1 for p in word.split(".")):
        return True
    return word.lower().rstrip(".") in _OLD_ABBREVIATIONS


def _old_sentence_ends(masked: str, masks: set[int]) -> list[int]:
    ends: list[int] = []
    n = len(masked)
    for m in citations._STOP_RE.finditer(masked):
        j = m.end()
        if j < n and j not in masks and not masked[j].isspace():
            continue
        if _old_is_abbreviation(masked, m.start()) or citations._in_list_marker(masked, m.start()):
            continue
        last = ends[-1] if ends else 0
        if m.start() - last <= 8 and masked[last : m.start()].strip().isdigit():
            continue
        while True:
            k = j
            while k < n and masked[k] in " \t\r\n" and k not in masks:
                k += 1
            if k in masks:
                j = k + 1
                continue
            break
        k = j
        while k < n and masked[k].isspace() and k not in masks:
            k += 1
        if k >= n or (k > j and not masked[k].islower()):
            ends.append(j)
    ends += [m.start() for m in citations._BLANK_LINE_RE.finditer(masked)]
    ends += citations._line_ends(masked, masks)
    return sorted(set(ends))


# words of every registered language's rules, so English is shown to ignore the others'
_TOKENS = [
    "Dr.", "dr.", "p.", "ex.", "P.", "z.", "B.", "u.", "a.", "1.", "29.", "1856.", "Mai", "mai", "Jahrhundert", "M.", "MM.", "Mme",
    "J.-C.", "av.", "Sr.", "ej.", "EE.", "UU.", "etc.", "e.g.", "U.S.", "3.5", "Rome.", "rome", "Paris", "was", "born", "in",
    "the", "Q1", " ", "\n", "\n\n", "- ", "2)", "?", "!", "…", '."', "Mr.", "jan.", "Jan.", "a.b", "c.-à-d.", "ordinal",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=40), st.sets(st.integers(0, 300), max_size=6))
def test_english_splitting_is_the_old_splitters(words, masks):
    masked = " ".join(words)
    masks = {m for m in masks if m < len(masked) and masked[m] == " "}  # a citation reads as one space
    assert citations._sentence_ends(masked, masks) == _old_sentence_ends(masked, masks)
    assert citations._sentence_ends(masked, masks, rules("en")) == _old_sentence_ends(masked, masks)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="Dr.pexzBu1Ma J-C\n[]Q,: NA", max_size=120))
def test_english_parse_is_language_en(text):
    a, b = parse_answer(text), parse_answer(text, language="en")
    assert [(s.start, s.end, s.clean) for s in a.sentences] == [(s.start, s.end, s.clean) for s in b.sentences]


# ---------------------------------------------------------------- the lexical judge in the language


def test_lexical_judge_folds_accents_and_case_in_french():
    fr = LexicalEntailment(language="fr")
    # French capitals often drop their accents: "ECOLE" is "École"
    assert fr.score("Il fut élève de l'ECOLE NORMALE SUPERIEURE.", "membre de: École normale supérieure") == 1.0
    assert fr.score("Il vécut à GENÈVE.", "résidence: Genève") == 1.0
    assert fr.score("Il vécut à Lyon.", "résidence: Genève") == 0.0


def test_lexical_judge_reads_elision_in_french():
    fr, en = LexicalEntailment(language="fr"), LexicalEntailment()
    premise, hypothesis = "Le siège de cette organisation est à Genève.", "L'organisation siège à Genève."
    assert fr.score(premise, hypothesis) == 1.0  # "l'organisation" is "organisation"
    assert en.score(premise, hypothesis) < 1.0  # English reads an "l" the premise lacks
    assert fr.score("Elle travaillait jusqu'à Noël.", "Elle travaillait à Noël.") == 1.0
    # relevance: an elided "qu'" is no content word the sentence shares with the question
    assert not shares_content_word("Qu'importe.", "Qu'a-t-il écrit ?", rules("fr"))
    assert shares_content_word("Qu'importe.", "Qu'a-t-il écrit ?")  # English's reading
    assert shares_content_word("Il a écrit des romans.", "Qu'a-t-il écrit ?", rules("fr"))


def test_lexical_judge_reads_dates_and_function_words_in_the_language():
    assert LexicalEntailment(language="fr").score("Il est né le 1er juillet 1596 à Rome.", "date de naissance: 1596-07-01") == 1.0
    assert LexicalEntailment().score("Il est né le 1er juillet 1596 à Rome.", "date de naissance: 1596-07-01") == 0.0
    assert LexicalEntailment(language="de").score("Er wurde am 8. Juli 1596 in Rom geboren.", "Geburtsdatum: 1596-07-08") == 1.0
    assert LexicalEntailment(language="es").score("Nació el 8 de julio de 1596 en Roma.", "fecha de nacimiento: 1596-07-08") == 1.0
    assert LexicalEntailment(language="fr").score("Jules César mourut en 44 av. J.-C.", "date de décès: -0044-03-15") == 0.0
    assert LexicalEntailment(language="fr").score("Jules César mourut le 15 mars 44 av. J.-C.", "date de décès: -0044-03-15") == 1.0
    # a free sentence: the share of its content words, French function words ("est", "à") left out
    assert LexicalEntailment(language="fr").score("Marie Curie vivait à Paris.", "Marie Curie est à Varsovie.") == 2 / 3
    assert LexicalEntailment(language="fr").spec == "lexical:language=fr" and LexicalEntailment().spec == "lexical"


_OLD_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"]
_OLD_FUNCTION_WORDS = frozenset(
    "a an the and or but of in on at to for from by with as is was were are be been being it its he she his her "
    "they their them this that these those which who whom whose what when where why how not no also than then".split()
)


def _old_norm(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"(?<=\d)[,\u202f ](?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w\s]", " ", text)
    return f" {' '.join(text.split())} "


def _old_date_forms(value: str) -> list[str] | None:
    m = ISO_DATE_RE.match(value.strip())
    if not m:
        return None
    bce, year, month, day = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    y = f"{year} bc" if bce else str(year)
    if month == 1 and day == 1:
        return [y]
    if not 1 <= month <= 12:
        return [y]
    mon = _OLD_MONTHS[month - 1]
    return [f"{mon} {day} {y}", f"{day} {mon} {y}", f"{year:04d} {month:02d} {day:02d}", f"{mon} {day:02d} {y}"]


@settings(max_examples=300, deadline=None)
@given(st.booleans(), st.integers(1, 2100), st.integers(0, 13), st.integers(0, 31), st.text(alphabet="aé'’ l.,Qu1 AÉ\u0301\u202f0", max_size=30))
def test_english_lexical_judge_is_the_old_one(bce, year, month, day, text):
    value = f"{'-' if bce else ''}{year:04d}-{month:02d}-{day:02d}"
    assert date_forms(value) == _old_date_forms(value) and MONTHS == _OLD_MONTHS and FUNCTION_WORDS == _OLD_FUNCTION_WORDS
    assert norm(text) == norm(text, rules("en")) == _old_norm(text)
