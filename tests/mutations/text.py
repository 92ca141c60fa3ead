"""Text rules per language (kalma/languages/text.py and its users: the citation parser, the checkers'
splitter, the lexical judge, the token-overlap metrics, NER and the evaluator's summary): each broken
the way an English-only assumption creeps back in."""

from __future__ import annotations

from . import Mutation

TEXT = "tests/unit/test_language_text.py"
E2E = "tests/e2e/test_language_text.py"

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
        "    text = lang.unelided(text)\n",
        "",
        (f"{TEXT}::test_lexical_judge_reads_elision_in_french",),
    ),
    Mutation(
        "the lexical judge reads English dates and function words in every language",
        "kalma/models/lexical.py",
        "        self.lang = rules(language)",
        "        self.lang = rules()",
        (f"{TEXT}::test_lexical_judge_reads_dates_and_function_words_in_the_language",),
    ),
    Mutation(
        "French NER falls back to the English pipeline",
        "kalma/nlp.py",
        '    return lang.spacy or f"{BLANK}{lang.code}"',
        "    return DEFAULT_SPACY",
        (f"{E2E}::test_french_ner_through_fr_core_news_sm",),
    ),
    Mutation(
        "fr_core_news_sm's labels taken as the classes' NER types (PER for PERSON)",
        "baselines/ner.py",
        "        self.labels = LABELS.get(spacy_model, {})",
        "        self.labels = {}",
        (f"{E2E}::test_french_ner_through_fr_core_news_sm",),
    ),
    Mutation(
        "an elided article read as part of a name (l'Université)",
        "baselines/ner.py",
        "        word = lang.unelided(m.group(0))",
        "        word = m.group(0)",
        (f"{E2E}::test_an_elided_article_is_no_part_of_a_name",),
    ),
    Mutation(
        "the summary's language read as English whatever the dataset says",
        "evaluation/runner.py",
        "get_language(file_language(dataset_header), ",
        'get_language("en", ',
        (f"{E2E}::test_evaluate_reads_the_datasets_language_and_every_summary_says_it",),
    ),
    Mutation(
        "the summary says English though the run read French",
        "evaluation/runner.py",
        "summary.language = coverage, len(wanted), options.language",
        "summary.language = coverage, len(wanted), DEFAULT_LANGUAGE",
        (f"{E2E}::test_evaluate_reads_the_datasets_language_and_every_summary_says_it",),
    ),
    Mutation(
        "the token metrics keep French articles and elided clitics",
        "evaluation/instruct_qa.py",
        '    return " ".join(articles.sub(" ", lang.unelided(text.lower()).translate(punct)).split())',
        '    return " ".join(text.lower().translate(punct).split())',
        (f"{E2E}::test_token_metrics_read_articles_and_elision_in_the_language",),
    ),
    Mutation(
        "ConSens reads a language without a tagger as all content words",
        "evaluation/consens.py",
        "    if name.startswith(BLANK):",
        "    if False:",
        (f"{E2E}::test_consens_content_words_by_the_languages_pipeline",),
    ),
    Mutation(
        "kalma compare takes the lexical judge of each language for two judges (English against French compares nothing)",
        "evaluation/runner.py",
        '    return re.sub(r"[:,]language=[\\w-]+", "", spec)',
        "    return spec",
        (f"{E2E}::test_compare_holds_the_lexical_judge_of_each_language_one_judge",),
    ),
)
