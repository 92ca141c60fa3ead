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
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence

from ..schema import ISO_DATE_RE
from .base import Entailment

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"]
FUNCTION_WORDS = frozenset(
    "a an the and or but of in on at to for from by with as is was were are be been being it its he she his her "
    "they their them this that these those which who whom whose what when where why how not no also than then".split()
)
_VERBALISED = re.compile(r"^.*?'s .+? is (.+?)\.?$")


def norm(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"(?<=\d)[,\u202f ](?=\d{3}\b)", "", text)  # 1,000 -> 1000
    text = re.sub(r"[^\w\s]", " ", text)
    return f" {' '.join(text.split())} "


def date_forms(value: str) -> list[str] | None:
    m = ISO_DATE_RE.match(value.strip())
    if not m:
        return None
    bce, year, month, day = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    y = f"{year} bc" if bce else str(year)
    if month == 1 and day == 1:
        return [y]
    if not 1 <= month <= 12:
        return [y]
    mon = MONTHS[month - 1]
    return [f"{mon} {day} {y}", f"{day} {mon} {y}", f"{year:04d} {month:02d} {day:02d}", f"{mon} {day:02d} {y}"]


class LexicalEntailment(Entailment):
    spec = "lexical"
    approximate = True
    batch_size = 4096

    def __init__(self, aliases: dict[str, list[str]] | None = None):
        self.aliases = {norm(k).strip(): v for k, v in (aliases or {}).items()}
        if self.aliases:  # different alias tables must not share cached judgements
            digest = hashlib.sha256(json.dumps(self.aliases, sort_keys=True).encode()).hexdigest()[:12]
            self.spec = f"lexical+aliases:{digest}"

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [self.score(p, h) for p, h in pairs]

    def _relevance(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [float(shares_content_word(p, q)) for p, q in pairs]

    def score(self, premise: str, hypothesis: str) -> float:
        p = norm(premise)
        m = _VERBALISED.match(hypothesis.strip())
        if ": " in hypothesis:  # `relation: value`
            value = hypothesis.split(": ", 1)[1]
        elif m:  # verbalised: `Name's relation is value.`
            value = m.group(1)
        else:  # a free sentence: share of its content words present in the premise
            words = [w for w in norm(hypothesis).split() if w not in FUNCTION_WORDS]
            return sum(f" {w} " in p for w in words) / len(words) if words else 0.0
        forms = date_forms(value) or [value] + self.aliases.get(norm(value).strip(), [])
        return 1.0 if any(norm(f) != "  " and norm(f) in p for f in forms) else 0.0


def content_words(text: str) -> set[str]:
    return {w for w in norm(text).split() if w not in FUNCTION_WORDS and len(w) > 1}


def shares_content_word(passage: str, question: str) -> bool:
    """Whether `passage` shares a content word (or a prefix of 3+ letters) with `question`.

    >>> shares_content_word("She died in Naples.", "Where did she die?"), shares_content_word("She liked music.", "Where did she die?")
    (True, False)
    """
    asked = content_words(question)
    for w in content_words(passage):
        for q in asked:
            short, long_ = (w, q) if len(w) <= len(q) else (q, w)
            if long_.startswith(short) and len(short) >= 3 or w == q:
                return True
    return False
