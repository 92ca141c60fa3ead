"""Text rules per language (kalma/languages/text.py and its users: the citation parser, the checkers'
splitter, the lexical judge, the token-overlap metrics, NER and the evaluator's summary): each broken
the way an English-only assumption creeps back in."""

from __future__ import annotations

from . import Mutation

TEXT = "tests/unit/test_language_text.py"

MUTATIONS = (
    Mutation(
        'French sentences split at "p. ex." (abbreviations of several words ignored)',
        "kalma/citations.py",
        "    if lang.abbreviation_at(masked, stop) or lang.ordinal_at(masked, stop):",
        "    if lang.ordinal_at(masked, stop):",
        (f"{TEXT}::test_french_m_and_p_ex_end_no_sentence",),
    ),
    Mutation(
        'French sentences split at "M." (an initial\'s stop ends a sentence)',
        "kalma/citations.py",
        "    if len(word) == 1 and word.isupper():  # an initial",
        "    if False:  # an initial",
        (f"{TEXT}::test_french_m_and_p_ex_end_no_sentence",),
    ),
    Mutation(
        "the citation parser splits every language with the English rules",
        "kalma/citations.py",
        "_sentence_ends(masked, set(where), rules(language))",
        '_sentence_ends(masked, set(where), rules("en"))',
        (f"{TEXT}::test_french_m_and_p_ex_end_no_sentence",),
    ),
    Mutation(
        'German ordinals end a sentence ("am 29. Mai")',
        "kalma/languages/text.py",
        "        return m is not None and m.group(1).casefold() in self.ordinal_words",
        "        return False",
        (f"{TEXT}::test_german_abbreviations_and_ordinals",),
    ),
    Mutation(
        "the checkers' Punkt splitter without the language's abbreviations",
        "kalma/models/checkers.py",
        "    return PunktSentenceTokenizer(params).tokenize, f",
        "    return PunktSentenceTokenizer().tokenize, f",
        (f"{TEXT}::test_checkers_punkt_takes_the_languages_abbreviations",),
    ),
    Mutation(
        "the lexical judge without accent folding",
        "kalma/models/lexical.py",
        '    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()',
        "    text = text.lower()",
        (f"{TEXT}::test_lexical_judge_folds_accents_and_case_in_french",),
    ),
    Mutation(
        "the lexical judge ignores elision (l', qu' read as words)",
        "kalma/models/lexical.py",
        "    if not lang.elisions:\n        return None",
        "    if True:\n        return None",
        (f"{TEXT}::test_lexical_judge_reads_elision_in_french",),
    ),
    Mutation(
        "the lexical judge reads English dates and function words in every language",
        "kalma/models/lexical.py",
        "        self.lang = rules(language)",
        "        self.lang = rules()",
        (f"{TEXT}::test_lexical_judge_reads_dates_and_function_words_in_the_language",),
    ),
)
