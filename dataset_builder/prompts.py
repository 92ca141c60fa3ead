"""The builder's prompts, in this project's wording, and the offline `template` backend's
answers to them (registered here, beside the wording they depend on).

Each prompt is one user turn that starts with a `Task: <step>` line naming the step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kalma.citations import Citation, format_sentence, parse_answer
from kalma.models.template import TemplateTask, register_task
from kalma.schema import KnowledgeGraph, Triple
from kalma.verbalize import KNOWLEDGE_HEADER, SEP, kg_to_text, knowledge_from_prompt, section

from .selection import TRIVIAL_RELATIONS

TASK, PARAGRAPH, NEW_FACT, PEOPLE, FACTS = "Task:", "Paragraph:", "New fact:", "People:", "Facts:"
# Entities that are not all people are listed under their own heading, each with its class's noun
# ("Lyon (city)"), so that no question asks "Who" about a city.
ENTITIES = "Entities:"
NOT_WHO = "Ask with 'Who' only about a person. "


def _subjects(people: Sequence[str], nouns: Sequence[str] | None) -> str:
    """The question's subjects: the paper's `People:` line, or `Entities:` with their classes."""
    if nouns is None:
        return f"{PEOPLE} {'; '.join(people)}"
    return f"{ENTITIES} {'; '.join(f'{p} ({n})' for p, n in zip(people, nouns))}"


def _line(t: Triple) -> str:
    return SEP.join((t.subject, t.subject_label, t.relation_label, t.value_label))


def _task(task: str, body: str) -> list[dict[str, str]]:
    """One user turn that starts with the `Task:` line."""
    return [{"role": "user", "content": f"{TASK} {task}\n{body}"}]


def annotate(paragraph: str, pool: KnowledgeGraph) -> list[dict[str, str]]:
    return _task(
        "annotate",
        (
            "Below is a paragraph and a list of facts (QID | entity | relation | value). After each sentence of the "
            "paragraph, add in square brackets the listed facts that the sentence states, written as "
            "[QID, relation: value]. Leave the words of the paragraph unchanged and add no fact that is not listed.\n\n"
            f"{KNOWLEDGE_HEADER}\n{kg_to_text(pool)}\n\n{PARAGRAPH} {paragraph}\n\nAnnotated paragraph:"
        ),
    )


def extend(paragraph: str, fact: Triple) -> list[dict[str, str]]:
    return _task(
        "extend",
        (
            "Continue the paragraph with exactly one new sentence that states the new fact and fits what came before. "
            "End that sentence with the fact's citation in square brackets, [QID, relation: value]. "
            "Reply with the new sentence only.\n\n"
            f"{PARAGRAPH} {paragraph}\n\n{NEW_FACT} {_line(fact)}\n\nNew sentence:"
        ),
    )


def general_question(paragraph: str, people: Sequence[str], nouns: Sequence[str] | None = None) -> list[dict[str, str]]:
    """`nouns`: the classes' nouns of entities that are not all people (None for people)."""
    return _task(
        "general-question",
        (
            "Write one short, natural question that the paragraph answers, as a curious reader would ask it. "
            f"{NOT_WHO if nouns else ''}Reply with the question only.\n\n"
            f"{_subjects(people, nouns)}\n\n{PARAGRAPH} {paragraph}\n\nQuestion:"
        ),
    )


def specific_question(paragraph: str, people: Sequence[str], facts: Sequence[Triple], nouns: Sequence[str] | None = None) -> list[dict[str, str]]:
    return _task(
        "specific-question",
        (
            "Write one detailed question that can only be answered completely with every fact listed, as the "
            f"paragraph states them. {NOT_WHO if nouns else ''}Reply with the question only.\n\n{_subjects(people, nouns)}\n\n{FACTS}\n"
            + "\n".join(_line(t) for t in facts)
            + f"\n\n{PARAGRAPH} {paragraph}\n\nQuestion:"
        ),
    )


# ---------------------------------------------------------------- the template backend's answers


def _template_annotate(prompt: str) -> str:
    """Cite, after each sentence, the listed facts whose value the sentence mentions and whose
    subject it or the sentence before names (so "She ... her father, Orazio" cites Artemisia's father)."""
    facts = knowledge_from_prompt(prompt)
    out, previous = [], ""
    for s in parse_answer(section(prompt, PARAGRAPH)).sentences:
        here, near = s.clean.lower(), f"{previous} {s.clean}".lower()
        cits = [
            c
            for c in facts
            if c.relation not in TRIVIAL_RELATIONS and c.value.lower() in here and c.value.lower() != c.entity_name.lower() and c.entity_name.lower() in near
        ]
        out.append(format_sentence(s.clean, cits))
        previous = s.clean
    return " ".join(out)


def _template_extend(prompt: str) -> str:
    parts = section(prompt, NEW_FACT).split(SEP)
    if len(parts) != 4:
        return ""
    c = Citation(parts[0], parts[2], parts[3], parts[1])
    return format_sentence(f"{c.entity_name}'s {c.relation} is {c.value}.", [c])


def _template_general_question(prompt: str) -> str:
    people = [p.strip() for p in section(prompt, PEOPLE).split(";") if p.strip()]
    if not people and (things := [t.strip() for t in section(prompt, ENTITIES).split(";") if t.strip()]):
        return _about(things)
    return f"Who were {' and '.join(people)}?" if len(people) > 1 else f"Who was {people[0] if people else 'this person'}?"


def _about(things: Sequence[str]) -> str:
    """A question about entities listed as `Lyon (city)`, naming each as `the city Lyon`."""
    named = []
    for t in things:
        name, _, noun = t.rpartition(" (")
        named.append(f"the {noun.rstrip(')')} {name}" if name else t)
    return f"What connects {' and '.join(named)}?" if len(named) > 1 else f"What is known about {named[0]}?"


def _template_specific_question(prompt: str) -> str:
    asked = list(dict.fromkeys(f"{c.entity_name}'s {c.relation}" for c in knowledge_from_prompt(prompt, FACTS)))
    if not asked:
        return _template_general_question(prompt)
    return f"What were {', '.join(asked[:-1])} and {asked[-1]}?" if len(asked) > 1 else f"What was {asked[0]}?"


def _asks(task: str) -> Callable[[str], bool]:
    return lambda prompt: prompt.lstrip().startswith(f"{TASK} {task}\n")


for _name, _respond in (
    ("annotate", _template_annotate),
    ("extend", _template_extend),
    ("general-question", _template_general_question),
    ("specific-question", _template_specific_question),
):
    register_task(TemplateTask(f"builder:{_name}", _asks(_name), _respond))
