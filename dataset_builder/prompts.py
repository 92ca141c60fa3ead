"""The builder's prompts, in this project's wording. Each starts with a `Task:` line naming the
step, which also lets the offline `template` backend answer them deterministically."""

from __future__ import annotations

from collections.abc import Sequence

from kalma.schema import KnowledgeGraph, Triple
from kalma.verbalize import KNOWLEDGE_HEADER, SEP, TASK_HEADER, kg_to_text


def _line(t: Triple) -> str:
    return SEP.join((t.subject, t.subject_label, t.relation_label, t.value_label))


def _task(task: str, body: str) -> list[dict[str, str]]:
    """One user turn that starts with the `Task:` line."""
    return [{"role": "user", "content": f"{TASK_HEADER} {task}\n{body}"}]


def annotate(paragraph: str, pool: KnowledgeGraph) -> list[dict[str, str]]:
    return _task("annotate", (
        "Below is a paragraph and a list of facts (QID | entity | relation | value). After each sentence of the "
        "paragraph, add in square brackets the listed facts that the sentence states, written as "
        "[QID, relation: value]. Leave the words of the paragraph unchanged and add no fact that is not listed.\n\n"
        f"{KNOWLEDGE_HEADER}\n{kg_to_text(pool)}\n\nParagraph: {paragraph}\n\nAnnotated paragraph:"))


def extend(paragraph: str, fact: Triple) -> list[dict[str, str]]:
    return _task("extend", (
        "Continue the paragraph with exactly one new sentence that states the new fact and fits what came before. "
        "End that sentence with the fact's citation in square brackets, [QID, relation: value]. "
        "Reply with the new sentence only.\n\n"
        f"Paragraph: {paragraph}\n\nNew fact: {_line(fact)}\n\nNew sentence:"))


def general_question(paragraph: str, people: Sequence[str]) -> list[dict[str, str]]:
    return _task("general-question", (
        "Write one short, natural question that the paragraph answers, as a curious reader would ask it. "
        "Reply with the question only.\n\n"
        f"People: {'; '.join(people)}\n\nParagraph: {paragraph}\n\nQuestion:"))


def specific_question(paragraph: str, people: Sequence[str], facts: Sequence[Triple]) -> list[dict[str, str]]:
    return _task("specific-question", (
        "Write one detailed question that can only be answered completely with every fact listed, as the "
        "paragraph states them. Reply with the question only.\n\n"
        f"People: {'; '.join(people)}\n\nFacts:\n" + "\n".join(_line(t) for t in facts) +
        f"\n\nParagraph: {paragraph}\n\nQuestion:"))
