"""`template`: a deterministic offline "LLM" that fills answers from the knowledge in the
prompt with fixed sentence patterns. It exists for tests and the offline demo; its outputs are
labelled as template answers everywhere and are never a language model's result."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..citations import Citation, format_sentence, parse_answer
from ..verbalize import QUESTION_HEADER, SEP, TASK_HEADER, knowledge_from_prompt, section
from .base import GenParams, Generation, LLM, Message

TRIVIAL = {"instance of", "sex or gender", "given name", "family name", "described by source", "topic's main category"}
STOPWORDS = set(
    "a an and are as at be been by did do does for from had has have he her his how in is it its of on or she "
    "that the their them they this to was were what when where which who whom whose why with would about "
    "also both did into some other there these those any can could many more most much such than then own "
    "life career known role influence influenced work works shape shaped".split()
)
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


def words(text: str) -> set[str]:
    return {w.lower().strip("'’") for w in _WORD.findall(text)} - STOPWORDS


class TemplateLLM(LLM):
    spec = "template"
    label_note = "offline template backend: fixed patterns filled from the given knowledge, not a language model"
    batch_size = 64

    def __init__(self, max_per_entity: int = 4):
        self.max_per_entity = max_per_entity

    def _generate(self, batch: Sequence[list[Message]], params: GenParams) -> list[Generation]:
        return [Generation(text=self.respond(m[-1]["content"]), model=self.spec) for m in batch]

    def respond(self, prompt: str) -> str:
        """Dispatch on the prompt's `Task:` line (stage prompts); plain prompts are questions."""
        first = prompt.lstrip().splitlines()[0] if prompt.strip() else ""
        task = first[len(TASK_HEADER):].strip() if first.startswith(TASK_HEADER) else "answer"
        handler = {"annotate": self.annotate, "extend": self.extend, "general-question": self.general_question,
                   "specific-question": self.specific_question}.get(task, self.answer)
        return handler(prompt)

    def annotate(self, prompt: str) -> str:
        """Cite, after each sentence, the listed facts whose value the sentence mentions."""
        facts = knowledge_from_prompt(prompt)
        out = []
        for s in parse_answer(section(prompt, "Paragraph:")).sentences:
            cits = [c for c in facts if c.relation not in TRIVIAL and c.value.lower() in s.clean.lower() and c.value.lower() != c.entity_name.lower()]
            out.append(format_sentence(s.clean, cits))
        return " ".join(out)

    def extend(self, prompt: str) -> str:
        parts = section(prompt, "New fact:").split(SEP)
        if len(parts) != 4:
            return ""
        c = Citation(parts[0], parts[2], parts[3], parts[1])
        return format_sentence(f"{c.entity_name}'s {c.relation} is {c.value}.", [c])

    def general_question(self, prompt: str) -> str:
        people = [p.strip() for p in section(prompt, "People:").split(";") if p.strip()]
        return f"Who were {' and '.join(people)}?" if len(people) > 1 else f"Who was {people[0] if people else 'this person'}?"

    def specific_question(self, prompt: str) -> str:
        facts = knowledge_from_prompt(prompt, "Facts:")
        asked = list(dict.fromkeys(f"{c.entity_name}'s {c.relation}" for c in facts))
        if not asked:
            return self.general_question(prompt)
        return f"What were {', '.join(asked[:-1])} and {asked[-1]}?" if len(asked) > 1 else f"What was {asked[0]}?"

    def answer(self, prompt: str) -> str:
        knowledge = [c for c in knowledge_from_prompt(prompt) if c.relation not in TRIVIAL]
        question = section(prompt, QUESTION_HEADER)
        q_words = words(question)
        if not knowledge:
            return format_sentence("The given knowledge does not cover this question.", na=True)
        by_entity: dict[str, list[Citation]] = {}
        for c in knowledge:
            by_entity.setdefault(c.qid, []).append(c)
        sentences: list[str] = []
        covered: set[str] = set()
        for qid, cits in by_entity.items():
            name = cits[0].entity_name or qid
            covered |= words(name)
            # Facts the question touches first, then the entity's other facts, in KG order.
            ranked = sorted(cits, key=lambda c: -len(q_words & (words(c.relation) | words(c.value))))
            for c in ranked[: self.max_per_entity]:
                covered |= words(c.relation) | words(c.value)
                sentences.append(format_sentence(f"{name}'s {c.relation} is {c.value}.", [c]))
        missing = sorted(q_words - covered)
        if missing:
            sentences.append(format_sentence(f"The given knowledge says nothing about {', '.join(missing[:6])}.", na=True))
        return " ".join(sentences)
