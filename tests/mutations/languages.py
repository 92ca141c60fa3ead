"""Languages (kalma/kg's label languages, `kalma dataset localize`, kalma/languages): each broken the
way English creeps back in. Other developers of the languages area keep their mutations in blocks
of their own below."""

from __future__ import annotations

from . import Mutation

CONTRACT = "tests/contract/test_kg_languages.py"

# ---------------------------------------------------------------- labels in the language (lang-kg)
KG_LABELS = (
    Mutation(
        "the SPARQL sources read @en whatever the language",
        "kalma/kg/sparql.py",
        "return f\"FILTER(LANG(?{var}) IN ({', '.join(literal(lang, None) for lang in langs)}))\"",
        'return f"FILTER(LANG(?{var}) IN (\\"en\\"))"',
        (CONTRACT,),
    ),
    Mutation(
        "the local Wikidata reads @en whatever the language",
        "kalma/kg/store.py",
        "        self.langs = label_languages(self.lang, self.fallback)",
        '        self.langs = ("en",)',
        (CONTRACT,),
    ),
    Mutation(
        "a missing label filled in English silently (the fallback always on)",
        "kalma/kg/base.py",
        "    return tuple(dict.fromkeys((lang, MUL, *([fallback] if fallback else []))))",
        '    return tuple(dict.fromkeys((lang, MUL, *([fallback] if fallback else ["en"]))))',
        (CONTRACT,),
    ),
    Mutation(
        "a label from the fallback not noted",
        "kalma/kg/base.py",
        "            self.fell_back.add(eid)",
        "            pass",
        (CONTRACT,),
    ),
    Mutation(
        "mul not read for the language",
        "kalma/kg/base.py",
        "    return tuple(dict.fromkeys((lang, MUL, *([fallback] if fallback else []))))",
        "    return tuple(dict.fromkeys((lang, *([fallback] if fallback else []))))",
        (CONTRACT,),
    ),
    Mutation(
        "a store opened in a language it does not hold",
        "kalma/kg/store.py",
        "            if asked not in held:",
        "            if asked not in held and False:",
        (CONTRACT,),
    ),
)

E2E = "tests/e2e/test_languages.py"

# ---------------------------------------------------------------- localize and compare (lang-kg)
LOCALIZE = (
    Mutation(
        "localize renumbers the entries",
        "dataset_builder/localize.py",
        '                    "general_question": general,',
        '                    "id": f"{source.lang}-{len(out.entries)}",\n                    "general_question": general,',
        (f"{E2E}::test_localizations_keep_each_entrys_id_and_minimum_set",),
    ),
    Mutation(
        "localize names an entity with no label in the language by its id",
        "dataset_builder/localize.py",
        "        if g is None or g.label == q:",
        "        if g is None:",
        (f"{E2E}::test_localizations_keep_each_entrys_id_and_minimum_set",),
    ),
    Mutation(
        "localize keeps the English minimum set's labels",
        "dataset_builder/localize.py",
        "        minimum.append(found)",
        "        minimum.append(t)",
        (f"{E2E}::test_localizations_keep_each_entrys_id_and_minimum_set",),
    ),
    Mutation(
        "compare refuses localizations of one dataset",
        "evaluation/compare.py",
        "        if (parallel := _localizations(a, b, entries)) is None:",
        "        if (parallel := _localizations(a, b, entries)) is None or True:",
        (f"{E2E}::test_each_language_answered_evaluated_and_compared_entry_by_entry",),
    ),
    Mutation(
        "compare pairs datasets whose minimum sets differ",
        "evaluation/compare.py",
        "    if differ := [e for e in entries if facts[0].get(e) != facts[1].get(e)]:",
        "    if differ := [e for e in entries if False]:",
        (f"{E2E}::test_compare_still_refuses_two_datasets_that_are_not_localizations_of_one_another",),
    ),
    Mutation(
        "kalma answer asks in English whatever the dataset's language",
        "baselines/pipeline.py",
        "build_messages(e.question(cfg.setting), kg, cfg.language)",
        "build_messages(e.question(cfg.setting), kg)",
        (f"{E2E}::test_each_language_answered_evaluated_and_compared_entry_by_entry",),
    ),
)


EVALUATE = (
    Mutation(
        "evaluate leaves G-Eval in English for a French dataset",
        "evaluation/text_quality.py",
        "        chats = judge_chats(items, self.language)",
        "        chats = judge_chats(items)",
        ("tests/e2e/test_language_text.py::test_evaluate_gives_geval_the_datasets_language",),
    ),
)


PAIRS = (
    Mutation(
        "judge pairs reads its KG in English whatever --language",
        "evaluation/judge_cli.py",
        "    source = open_source(kg, language, label_fallback)",
        "    source = open_source(kg)",
        ("tests/e2e/test_judge_pairs.py::test_varied_pairs_keep_every_label_right_and_deny_in_the_negated_kind",),
    ),
)


RECORDS = (
    Mutation(
        "records from-kg asks for its paragraphs in English whatever --language",
        "dataset_builder/from_kg.py",
        "paragraph_prompt(facts, language)",
        "paragraph_prompt(facts)",
        ("tests/e2e/test_languages.py::test_records_from_kg_writes_its_paragraphs_in_the_language",),
    ),
)


CONNER = (
    Mutation(
        "CONNER's evidence verbalised in English whatever the dataset's language",
        "evaluation/conner.py",
        "verbalize(t, e.label, it.language)",
        "verbalize(t, e.label)",
        ("tests/unit/test_other_metrics.py::test_conner_gives_its_judge_the_evidence_in_the_datasets_language",),
    ),
)

BOARD = (
    Mutation(
        "the board's CSV saying English for every row, whatever its dataset's language",
        "bench/leaderboard.py",
        "                    t.language,\n",
        '                    "en",\n',
        ("tests/e2e/test_languages.py::test_the_board_gives_each_language_its_table_and_each_row_its_language",),
    ),
    Mutation(
        "a board's table of a localization titled without its language",
        "bench/records.py",
        'said = "" if self.language == "en" else f"in {self.language}, "',
        'said = ""',
        ("tests/e2e/test_languages.py::test_the_board_gives_each_language_its_table_and_each_row_its_language",),
    ),
)

CHECKERS = (
    Mutation(
        "a checker's documents split into English sentences whatever its language (MiniCheck)",
        "kalma/models/checkers.py",
        '        items += sentences(block, language) + ["\\n"]',
        '        items += sentences(block) + ["\\n"]',
        ("tests/unit/test_checkers.py::test_a_checker_splits_sentences_by_its_language",),
    ),
    Mutation(
        "AlignScore's claims split into English sentences whatever its language",
        "kalma/models/checkers.py",
        "        return sentences(claim, self.language) or [claim]",
        "        return sentences(claim) or [claim]",
        ("tests/unit/test_checkers.py::test_a_checker_splits_sentences_by_its_language",),
    ),
    Mutation(
        "kalma evaluate giving the dataset's language to the lexical judge alone, not to the checkers",
        "evaluation/runner.py",
        '    return spec.partition(":")[0].partition(",")[0] in READS_LANGUAGE',
        '    return spec.partition(":")[0].partition(",")[0] == "lexical"',
        ("tests/unit/test_checkers.py::test_a_checker_splits_sentences_by_its_language",),
    ),
)

BUILDER = (
    Mutation(
        "the builder's extend step cutting the reply into English sentences whatever the dataset's language",
        "dataset_builder/evolve.py",
        "    for s in parse_answer(text, vocab, language).sentences:",
        "    for s in parse_answer(text, vocab).sentences:",
        ("tests/unit/test_language_text.py::test_the_builder_keeps_the_whole_sentence_that_carries_a_fact_by_the_languages_rules",),
    ),
)

# ---------------------------------------------------------------- a localized dataset over time
FRESHNESS = (
    Mutation(
        "a localized dataset checked against English labels (every entry stale)",
        "dataset_builder/freshness.py",
        'return open_source(spec, language, self.provenance.get("label_fallback"))',
        "return open_source(spec)",
        ("tests/e2e/test_languages.py::test_a_localized_dataset_is_checked_and_refreshed_in_its_own_language",),
    ),
    Mutation(
        "a current localized dataset refused a refresh for want of build settings it does not need",
        "dataset_builder/freshness.py",
        '    if stale and "seed" not in config:',
        '    if "seed" not in config:',
        ("tests/e2e/test_languages.py::test_a_localized_dataset_is_checked_and_refreshed_in_its_own_language",),
    ),
    Mutation(
        "an evaluation recording its dataset as given (relative: `compare` elsewhere calls two localizations different datasets)",
        "evaluation/runner.py",
        '"dataset": str(Path(dataset).resolve()) if',
        '"dataset": str(dataset) if',
        ("tests/e2e/test_languages.py::test_evaluations_made_with_relative_paths_are_compared_from_another_folder",),
    ),
    Mutation(
        "compare calling datasets it cannot read different, without naming them",
        "evaluation/compare.py",
        "…){why}; a paired comparison needs the same questions",
        "…); a paired comparison needs the same questions",
        ("tests/e2e/test_languages.py::test_evaluations_made_with_relative_paths_are_compared_from_another_folder",),
    ),
    Mutation(
        "answers in another language than the dataset scored by its rules (English text read as French)",
        "evaluation/runner.py",
        "        if isinstance(asked_in, str) and check_tag(",
        "        if isinstance(asked_in, int) and check_tag(",
        ("tests/e2e/test_languages.py::test_answers_in_another_language_than_the_dataset_are_refused_lenient_or_not",),
    ),
    Mutation(
        "a dataset's malformed language blamed on --language, an option never given (kalma answer)",
        "kalma/languages/__init__.py",
        "    recorded = check_tag(recorded, f\"{path}:1: field 'language'\")  # the file's mistake, not the option's\n",
        "",
        ("tests/e2e/test_languages.py::test_bad_input_is_one_line_and_writes_nothing",),
    ),
    Mutation(
        "dataset check blaming --language, which it has not, for its dataset's malformed language",
        "dataset_builder/freshness.py",
        """        language = check_tag(file_language(self.header), f"{self.path}:1: field 'language'")""",
        "        language = file_language(self.header)",
        ("tests/e2e/test_languages.py::test_bad_input_is_one_line_and_writes_nothing",),
    ),
    Mutation(
        "answers whose header spells the dataset's language otherwise (FR) refused as another language",
        "evaluation/runner.py",
        """check_tag(asked_in, f"{answers}:1: field 'language'") != language""",
        "asked_in != language",
        ("tests/e2e/test_languages.py::test_answers_in_another_language_than_the_dataset_are_refused_lenient_or_not",),
    ),
    Mutation(
        "a stale localized dataset refused without naming the dataset to refresh and localize again",
        "dataset_builder/freshness.py",
        'f"(a dataset not made by `kalma build`){again}"',
        'f"(a dataset not made by `kalma build`)"',
        ("tests/e2e/test_languages.py::test_a_localized_dataset_is_checked_and_refreshed_in_its_own_language",),
    ),
)

MUTATIONS = KG_LABELS + LOCALIZE + EVALUATE + PAIRS + RECORDS + CONNER + BOARD + CHECKERS + BUILDER + FRESHNESS
