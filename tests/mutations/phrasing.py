"""Questions, prompts and sentences per language (kalma/languages/phrasing.py and the stages that
read it): each broken the way English creeps back into another language, or a label back into a sentence."""

from __future__ import annotations

from . import Mutation

UNIT = "tests/unit/test_phrasing.py"
E2E = "tests/e2e/test_phrasing.py"

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
        "        if pattern := self.pattern(pid, cls):\n            return _fill(pattern, self, subject, value)",
        "        if pattern := self.class_sentences.get(cls, {}).get(pid):\n            return _fill(pattern, self, subject, value)",
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
)
