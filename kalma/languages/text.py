"""Text rules per language: where a sentence ends, which words carry no content, how dates are
written, what an elided article looks like. A registry keyed by language tag, as `LANGUAGES`.

The citation parser (`kalma.citations`) splits an answer's sentences with a language's
`abbreviations`, `phrases` (abbreviations of several words: French "p. ex.", German "z. B.") and
`ordinal_words` (German writes an ordinal with a full stop: "am 1. Mai"); the checkers' Punkt
splitter takes the same abbreviations; the lexical judge reads `stopwords`, `elisions` and the
date forms; instruct-qa's token overlap removes `articles` (as MLQA's evaluation script does per
language). English is exactly the rules the suite had before languages, so English splitting,
judgements and figures are unchanged. A language with no rules written here gets the rules
every language shares (initials, dotted acronyms, decimals, list items; ISO dates and years).

>>> rules("fr").abbreviation_at("Il a vu M. Dupont, p. ex. hier.", 24), rules("en").abbreviation_at("Il a vu M. Dupont, p. ex. hier.", 24)
(True, False)
>>> rules("de").ordinal_at("Er kam am 1. Mai 1990 an.", 11), rules("de").ordinal_at("Er kam im Jahr 1990. Mai war", 19)
(True, False)
>>> rules("fr").dates(1596, 7, 1, False)
['1er juillet 1596', '1 juillet 1596', '1596 07 01']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from . import DEFAULT_LANGUAGE, check_tag

DateForms = Callable[[int, int, int, bool], list[str]]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class TextRules:
    code: str
    # single-word abbreviations, lower case, without their final stop ("dr", "e.g"): a stop after one ends no sentence
    abbreviations: frozenset[str] = frozenset()
    # abbreviations of several words, lower case, with their stops ("p. ex."): no stop inside or after one ends a sentence
    phrases: tuple[str, ...] = ()
    # words a one- or two-digit number's stop stands before when the number is an ordinal ("1. Mai", "19. Jahrhundert")
    ordinal_words: frozenset[str] = frozenset()
    # function words: no content of their own (lexical judge, relevance); an elided clitic is read as the word after it instead
    stopwords: frozenset[str] = frozenset()
    articles: frozenset[str] = frozenset()  # removed by instruct-qa's normalisation (SQuAD's a/an/the)
    # clitics written elided before a vowel ("l'", "d'", "qu'"): read as the word they stand before
    elisions: frozenset[str] = frozenset()
    months: tuple[str, ...] = ()
    date_forms: DateForms | None = None  # (year, month, day, BCE) -> the forms a date is written in, month names in the language
    bce: str = ""  # the era after a year before the common era, as the lexical judge normalises it ("bc")
    quotes: str = ""  # punctuation of the language beyond English's, read as a space by the token metrics ("«»", "¿¡")
    _phrase_re: re.Pattern[str] | None = field(default=None, compare=False, repr=False)
    _elided_re: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.phrases:  # each phrase also written without its inner spaces ("p.ex.", "z.B.")
            forms = {p for phrase in self.phrases for p in (phrase, phrase.replace(" ", ""))}
            alternatives = "|".join(re.escape(p) for p in sorted(forms, key=len, reverse=True))
            object.__setattr__(self, "_phrase_re", re.compile(rf"(?<!\w)(?:{alternatives})", re.IGNORECASE))
        if self.elisions:  # a clitic and its apostrophe before the word it stands for: `l'`, `qu’`
            clitics = "|".join(sorted(self.elisions, key=len, reverse=True))
            object.__setattr__(self, "_elided_re", re.compile(rf"\b(?:{clitics})['’](?=\w)", re.IGNORECASE))

    def unelided(self, text: str) -> str:
        """`text` with its elided clitics dropped: "l'organisation" reads "organisation"."""
        return self._elided_re.sub("", text) if self._elided_re is not None else text

    @property
    def longest_phrase(self) -> int:
        return max((len(p) for p in self.phrases), default=0)

    def abbreviation_at(self, text: str, stop: int) -> bool:
        """Whether the stop at `text[stop]` is one of a phrase's ("p. ex.": the stop after "p" or after "ex")."""
        if self._phrase_re is None:
            return False
        lo = max(0, stop - self.longest_phrase)  # a phrase holding this stop starts no further back
        m = self._phrase_re.search(text, lo, stop + self.longest_phrase + 1)
        while m is not None and m.start() <= stop:
            if m.start() <= stop < m.end():
                return True
            m = self._phrase_re.search(text, m.start() + 1, stop + self.longest_phrase + 1)
        return False

    def ordinal_at(self, text: str, stop: int) -> bool:
        """Whether the stop at `text[stop]` closes an ordinal number: one or two digits, then a word of `ordinal_words`."""
        if not self.ordinal_words or stop < 1 or not text[stop - 1].isdigit():
            return False
        start = stop - 1
        while start > 0 and text[start - 1].isdigit():
            start -= 1
        if stop - start > 2 or (start > 0 and text[start - 1].isalnum()):
            return False
        m = _NEXT_WORD.match(text, stop + 1)
        return m is not None and m.group(1).casefold() in self.ordinal_words

    def dates(self, year: int, month: int, day: int, bce: bool) -> list[str]:
        """How a date of `month` and `day` (1-12, 1-31) is written in the language; ISO's digits at least."""
        if self.date_forms is not None:
            return self.date_forms(year, month, day, bce)
        return [f"{year:04d} {month:02d} {day:02d}"]


_NEXT_WORD = re.compile(r"[ \t]+(\w+)")

# ---------------------------------------------------------------- English: the rules the suite always had

EN_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")


def _english_dates(year: int, month: int, day: int, bce: bool) -> list[str]:
    y = f"{year} bc" if bce else str(year)
    mon = EN_MONTHS[month - 1]
    return [f"{mon} {day} {y}", f"{day} {mon} {y}", f"{year:04d} {month:02d} {day:02d}", f"{mon} {day:02d} {y}"]


ENGLISH = TextRules(
    "en",
    abbreviations=_words(
        "mr mrs ms dr prof st jr sr vs etc no mt gen col lt sgt capt rev hon inc ltd co fr sen rep gov pres "
        "e.g i.e ca cf approx dept univ jan feb mar apr jun jul aug sep sept oct nov dec"
    ),
    stopwords=_words(
        "a an the and or but of in on at to for from by with as is was were are be been being it its he she his her "
        "they their them this that these those which who whom whose what when where why how not no also than then"
    ),
    articles=_words("a an the"),
    months=EN_MONTHS,
    date_forms=_english_dates,
    bce="bc",
)

# ---------------------------------------------------------------- French

FR_MONTHS = ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre")


def _french_dates(year: int, month: int, day: int, bce: bool) -> list[str]:
    y = f"{year} av j c" if bce else str(year)  # "52 av. J.-C.", as the judge normalises it
    mon = FR_MONTHS[month - 1]
    first = [f"1er {mon} {y}"] if day == 1 else []  # "le 1er juillet"
    return [*first, f"{day} {mon} {y}", f"{year:04d} {month:02d} {day:02d}"]


FRENCH = TextRules(
    "fr",
    abbreviations=_words("mme mmes mlle mlles mgr dr pr st ste av apr env cf etc vol chap éd p pp nº ca janv févr avr juil sept oct nov déc"),
    phrases=("p. ex.", "av. j.-c.", "apr. j.-c.", "c.-à-d.", "n. b."),
    stopwords=_words(
        "le la les un une des du de au aux et ou mais ni car donc or à en dans sur sous par pour avec sans chez vers entre "
        "est était sont étaient fut furent a ont avait avaient été être ce cet cette ces il elle ils elles on se son sa ses "
        "leur leurs lui y qui que quoi dont où quand comment pourquoi ne pas plus aussi je me te nous vous"
    ),
    articles=_words("le la les l un une des du au aux"),
    elisions=_words("l d j m n s t c qu jusqu lorsqu puisqu quoiqu presqu"),
    months=FR_MONTHS,
    date_forms=_french_dates,
    bce="av j c",
    quotes="«»‹›",
)

# ---------------------------------------------------------------- German

DE_MONTHS = ("januar", "februar", "märz", "april", "mai", "juni", "juli", "august", "september", "oktober", "november", "dezember")


def _german_dates(year: int, month: int, day: int, bce: bool) -> list[str]:
    y = f"{year} v chr" if bce else str(year)  # "8. Juli 52 v. Chr."
    return [f"{day} {DE_MONTHS[month - 1]} {y}", f"{day:02d} {month:02d} {y}", f"{day} {month} {y}", f"{year:04d} {month:02d} {day:02d}"]


GERMAN = TextRules(
    "de",
    abbreviations=_words("dr prof hr fr nr st bzw usw vgl ca geb gest jh jhd evtl inkl bspw zzgl mio mrd etc abs feb apr jun jul aug sep sept okt nov dez"),
    phrases=("z. b.", "u. a.", "d. h.", "v. chr.", "n. chr.", "u. ä.", "o. ä.", "s. o.", "s. u.", "i. d. r."),
    ordinal_words=frozenset(DE_MONTHS) | _words("jahrhundert jahrhunderts jahrtausend jahrtausends weltkrieg weltkriegs klasse platz liga auflage"),
    stopwords=_words(
        "der die das den dem des ein eine einen einem einer eines und oder aber sondern denn in im an am auf aus bei mit nach von vom "
        "zu zum zur für über unter vor hinter neben zwischen durch gegen ohne um als wie ist war sind waren wird wurde wurden hat hatte "
        "haben hatten sein seine seiner seinem seinen ihr ihre ihrer ihrem ihren er sie es wer was wann wo warum wie welche welcher "
        "welches nicht kein keine auch dass"
    ),
    articles=_words("der die das den dem des ein eine einen einem einer eines"),  # MLQA's evaluation script's
    months=DE_MONTHS,
    date_forms=_german_dates,
    bce="v chr",
    quotes="„‚«»‹›",
)

# ---------------------------------------------------------------- Spanish

ES_MONTHS = ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre")


def _spanish_dates(year: int, month: int, day: int, bce: bool) -> list[str]:
    y = f"{year} a c" if bce else str(year)  # "8 de julio de 52 a. C."
    mon = ES_MONTHS[month - 1]
    return [f"{day} de {mon} de {y}", f"{day} {mon} {y}", f"{year:04d} {month:02d} {day:02d}"]


SPANISH = TextRules(
    "es",
    abbreviations=_words("sr sra srta sres dr dra ud uds prof av avda sto sta núm pág págs etc aprox cap vol ene feb abr jun jul ago sept oct nov dic"),
    phrases=("p. ej.", "a. c.", "d. c.", "ee. uu.", "s. a.", "a. m.", "p. m."),
    stopwords=_words(
        "el la los las un una unos unas lo al del de y e o u pero ni en con por para sin sobre entre hasta desde hacia ante bajo "
        "es era fue son eran fueron ha han había habían sido ser estar está estaba su sus se le les que quien quién cual cuál "
        "cuando cuándo donde dónde como cómo qué no también más muy este esta estos estas ese esa él ella ellos ellas"
    ),
    articles=_words("un una unos unas el la los las"),  # MLQA's evaluation script's
    months=ES_MONTHS,
    date_forms=_spanish_dates,
    bce="a c",
    quotes="¿¡«»",
)

TEXT_RULES: dict[str, TextRules] = {r.code: r for r in (ENGLISH, FRENCH, GERMAN, SPANISH)}


@cache
def rules(language: str = DEFAULT_LANGUAGE) -> TextRules:
    """The text rules of `language` (a BCP-47 tag); a language without rules of its own gets the shared ones."""
    code = check_tag(language)
    return TEXT_RULES.get(code) or TextRules(code)


def written(language: str) -> bool:
    """Whether `language` has text rules of its own (else only the rules every language shares)."""
    return check_tag(language) in TEXT_RULES
