"""Questions, prompts and sentences per language (kalma/languages/phrasing.py and the stages that
read it): each broken the way English creeps back into another language, or a label back into a sentence."""

from __future__ import annotations

from . import Mutation

UNIT = "tests/unit/test_phrasing.py"
E2E = "tests/e2e/test_phrasing.py"
PAIRS = "tests/e2e/test_judge_pairs.py"

MUTATIONS = (
    Mutation(
        "an English word left in a French template",
        "kalma/languages/phrasing.py",
        '    reply_question="Répondez avec la question seulement.",',
        '    reply_question="Reply with the question only.",',
        (f"{UNIT}::test_no_english_left_in_a_written_language",),
    ),
    Mutation(
        "the possessive form used for a verb property (X's founded by is Y)",
        "kalma/languages/phrasing.py",
        "        pattern = self.pattern(pid, cls) or (self.possessive if noun is not None else self.unknown)",
        "        pattern = self.class_sentences.get(cls, {}).get(pid) or (self.possessive if noun is not None else self.unknown)",
        (f"{UNIT}::test_a_property_is_phrased_by_what_it_is_a_noun_label_keeps_the_possessive",),
    ),
    Mutation(
        "`template` answering an unwritten language in English",
        "kalma/models/template.py",
        "        if code := unwritten_in(prompt):",
        "        if code := None:",
        (f"{UNIT}::test_a_language_without_written_text_asks_a_model_in_english_and_the_template_refuses", E2E),
    ),
    Mutation(
        "French without elision (la organisation, de Artemisia)",
        "kalma/languages/phrasing.py",
        "        if self.elided and name[:1].lower() in self.vowels:",
        "        if False:",
        (f"{UNIT}::test_french_elides_before_a_vowel_and_contracts_by_gender",),
    ),
    Mutation(
        "the negated kind labelled 1 (its sentence taken to state the triple it denies)",
        "evaluation/judge_pairs.py",
        '        out.append(Plan(entry.id, NEGATED, [], [(t, [t])], how="denied", said_as=[said_as(t)], denied=[t]))',
        '        out.append(Plan(entry.id, NEGATED, [t], [(t, [t])], how="denied", said_as=[said_as(t)], denied=[t]))',
        (f"{PAIRS}::test_varied_pairs_keep_every_label_right_and_deny_in_the_negated_kind",),
    ),
    Mutation(
        "a denied sentence written as the fact itself (the negation dropped)",
        "kalma/languages/phrasing.py",
        "        if not negated:\n            return _fill(pattern, self, subject, value, relation, the)",
        "        if True:\n            return _fill(pattern, self, subject, value, relation, the)",
        (f"{PAIRS}::test_varied_pairs_keep_every_label_right_and_deny_in_the_negated_kind",),
    ),
)
