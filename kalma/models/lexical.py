"""`lexical`: a rule-based entailment stand-in that needs no weights.

It accepts a hypothesis `relation: value` (or a verbalised `Name's relation is value.`) when
the value, or one of its KG aliases, occurs in the premise after normalising case, accents,
punctuation, numbers and dates (`1596-07-08` matches "July 8, 1596" and "8 July 1596"; a
`YYYY-01-01` date, Wikidata's year precision, matches the year alone). Any other hypothesis
(a free sentence) scores the share of its content words found in the premise. It ignores
relations and word order, so it over-accepts: it is an APPROXIMATION of an NLI model, and
every report that uses it says so.

Relevance (does a sentence address a question at all?) is 1 when the sentence shares a content
word with the question, prefixes of three letters or more counting as shared ("die"/"died").

In another language (`lexical:language=fr`; `kalma evaluate` asks for the dataset's own) it reads
the language's function words, month names and eras, and its elided clitics as the word they
stand before ("l'organisation" is "organisation", "qu'il" is "il": `kalma.languages.text`);
accents and case are folded in every language. English judgements are those it always gave.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence

from ..languages import DEFAULT_LANGUAGE
from ..languages.text import ENGLISH, TextRules, rules
from ..schema import ISO_DATE_RE
from .base import Entailment

MONTHS = list(ENGLISH.months)
FUNCTION_WORDS = ENGLISH.stopwords
_VERBALISED = re.compile(r"^.*?'s .+? is (.+?)\.?$")


@functools.cache
def _function_words(lang: TextRules) -> frozenset[str]:
    """The language's function words as `norm` writes them ("à", "où": "a", "ou")."""
    return frozenset(w for word in lang.stopwords for w in norm(word, lang).split())


def norm(text: str, lang: TextRules = ENGLISH) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = lang.unelided(text)
    text = re.sub(r"(?<=\d)[,\u202f ](?=\d{3}\b)", "", text)  # 1,000 -> 1000
    text = re.sub(r"[^\w\s]", " ", text)
    return f" {' '.join(text.split())} "


def date_forms(value: str, lang: TextRules = ENGLISH) -> list[str] | None:
    """The ways `value`, an ISO date, is written in the language; None when it is no date."""
    m = ISO_DATE_RE.match(value.strip())
    if not m:
        return None
    bce, year, month, day = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    y = f"{year} {lang.bce}" if bce and lang.bce else str(year)
    if month == 1 and day == 1:
        return [y]
    if not 1 <= month <= 12:
        return [y]
    return lang.dates(year, month, day, bool(bce))


class LexicalEntailment(Entailment):
    spec = "lexical"
    approximate = True
    batch_size = 4096

    def __init__(self, aliases: dict[str, list[str]] | None = None, language: str = DEFAULT_LANGUAGE):
        self.lang = rules(language)
        self.aliases = {norm(k, self.lang).strip(): v for k, v in (aliases or {}).items()}
        if self.lang.code != DEFAULT_LANGUAGE:  # judgements in one language are not another's
            self.spec = f"lexical:language={self.lang.code}"
        if self.aliases:  # different alias tables must not share cached judgements
            digest = hashlib.sha256(json.dumps(self.aliases, sort_keys=True).encode()).hexdigest()[:12]
            self.spec = f"{self.spec}+aliases:{digest}"

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [self.score(p, h) for p, h in pairs]

    def _relevance(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [float(shares_content_word(p, q, self.lang)) for p, q in pairs]

    def score(self, premise: str, hypothesis: str) -> float:
        lang = self.lang
        p = norm(premise, lang)
        m = _VERBALISED.match(hypothesis.strip())
        if ": " in hypothesis:  # `relation: value`
            value = hypothesis.split(": ", 1)[1]
        elif m:  # verbalised: `Name's relation is value.`
            value = m.group(1)
        else:  # a free sentence: share of its content words present in the premise
            words = [w for w in norm(hypothesis, lang).split() if w not in _function_words(lang)]
            return sum(f" {w} " in p for w in words) / len(words) if words else 0.0
        forms = date_forms(value, lang) or [value] + self.aliases.get(norm(value, lang).strip(), [])
        return 1.0 if any(norm(f, lang) != "  " and norm(f, lang) in p for f in forms) else 0.0


def content_words(text: str, lang: TextRules = ENGLISH) -> set[str]:
    return {w for w in norm(text, lang).split() if w not in _function_words(lang) and len(w) > 1}


def shares_content_word(passage: str, question: str, lang: TextRules = ENGLISH) -> bool:
    """Whether `passage` shares a content word (or a prefix of 3+ letters) with `question`.

    >>> shares_content_word("She died in Naples.", "Where did she die?"), shares_content_word("She liked music.", "Where did she die?")
    (True, False)
    """
    asked = content_words(question, lang)
    for w in content_words(passage, lang):
        for q in asked:
            short, long_ = (w, q) if len(w) <= len(q) else (q, w)
            if long_.startswith(short) and len(short) >= 3 or w == q:
                return True
    return False
