"""The builder's prompts, in this project's wording and in each written language, and the
offline `template` backend's answers to them (registered here, beside the wording they depend on).

Each prompt is one user turn that starts with a `Task: <step>` line naming the step, the same in
every language (the template recognises a step by it); the instructions and headers below it are
the language's (`kalma.languages.phrasing`), and a language without written text gets the English
ones with one more line asking to write in it.

`localized_questions` renders an entry's two questions in a language: what `kalma dataset
localize` asks of a model, or of the template, for each entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kalma.citations import Citation, format_sentence, parse_answer
from kalma.languages.phrasing import ENGLISH, Noun, Phrasing, by_header, phrasing
from kalma.models.base import LLM, GenParams
from kalma.models.template import TemplateTask, register_task
from kalma.schema import KnowledgeGraph, Triple
from kalma.verbalize import SEP, kg_to_text, knowledge_from_prompt, section

from .selection import TRIVIAL_RELATIONS

TASK = "Task:"  # the step's line: machine-readable, the same in every language
PARAGRAPH, NEW_FACT, PEOPLE, FACTS = ENGLISH.paragraph, ENGLISH.new_fact, ENGLISH.people, ENGLISH.facts
# Entities that are not all people are listed under their own heading, each with its class's noun
# ("Lyon (city)"), so that no question asks "Who" about a city.
ENTITIES = ENGLISH.entities
NOT_WHO = ENGLISH.not_who


def _subjects(ph: Phrasing, people: Sequence[str], nouns: Sequence[str] | None) -> str:
    """The question's subjects: the paper's `People:` line, or `Entities:` with their classes."""
    if nouns is None:
        return f"{ph.people} {'; '.join(people)}"
    return f"{ph.entities} {'; '.join(f'{p} ({n})' for p, n in zip(people, nouns))}"


def _line(t: Triple) -> str:
    return SEP.join((t.subject, t.subject_label, t.relation_label, t.value_label))


def _task(task: str, body: str) -> list[dict[str, str]]:
    """One user turn that starts with the `Task:` line."""
    return [{"role": "user", "content": f"{TASK} {task}\n{body}"}]


def annotate(paragraph: str, pool: KnowledgeGraph, language: str = "en") -> list[dict[str, str]]:
    ph = phrasing(language)
    return _task(
        "annotate",
        f"{ph.annotate}{ph.write_in}\n\n{ph.knowledge_header}\n{kg_to_text(pool)}\n\n{ph.paragraph} {paragraph}\n\n{ph.annotated}",
    )


def extend(paragraph: str, fact: Triple, language: str = "en") -> list[dict[str, str]]:
    ph = phrasing(language)
    return _task("extend", f"{ph.extend}{ph.write_in}\n\n{ph.paragraph} {paragraph}\n\n{ph.new_fact} {_line(fact)}\n\n{ph.new_sentence}")


def general_question(paragraph: str, people: Sequence[str], nouns: Sequence[str] | None = None, language: str = "en") -> list[dict[str, str]]:
    """`nouns`: the classes' nouns of entities that are not all people (None for people), in the language."""
    ph = phrasing(language)
    return _task(
        "general-question",
        (
            f"{ph.general}{ph.not_who if nouns else ''}{ph.reply_question}{ph.write_in}\n\n"
            f"{_subjects(ph, people, nouns)}\n\n{ph.paragraph} {paragraph}\n\n{ph.question_header}"
        ),
    )


def specific_question(
    paragraph: str, people: Sequence[str], facts: Sequence[Triple], nouns: Sequence[str] | None = None, language: str = "en"
) -> list[dict[str, str]]:
    ph = phrasing(language)
    return _task(
        "specific-question",
        (
            f"{ph.specific}{ph.not_who if nouns else ''}{ph.reply_question}{ph.write_in}\n\n{_subjects(ph, people, nouns)}\n\n{ph.facts}\n"
            + "\n".join(_line(t) for t in facts)
            + f"\n\n{ph.paragraph} {paragraph}\n\n{ph.question_header}"
        ),
    )


def localized_questions(
    llm: LLM,
    paragraph: str,
    people: Sequence[str],
    facts: Sequence[Triple],
    nouns: Sequence[str] | None = None,
    language: str = "en",
    seed: int = 0,
) -> tuple[str, str]:
    """An entry's general and specific questions in `language`, asked of `llm` with the builder's
    own prompts (`people`, `facts`, `paragraph` and `nouns` already in the language's labels; the
    template answers a written language offline and refuses any other)."""
    params = GenParams(temperature=0.0, max_tokens=96, seed=seed)
    general, specific = llm.chat_many(
        [general_question(paragraph, people, nouns, language), specific_question(paragraph, people, facts, nouns, language)], params
    )
    return general.text.strip(), specific.text.strip()


# ---------------------------------------------------------------- the template backend's answers


def _template_annotate(prompt: str) -> str:
    """Cite, after each sentence, the listed facts whose value the sentence mentions and whose
    subject it or the sentence before names (so "She ... her father, Orazio" cites Artemisia's father)."""
    ph = by_header(prompt, "annotated")
    facts = knowledge_from_prompt(prompt, ph.knowledge_header)
    trivial = TRIVIAL_RELATIONS | ph.trivial
    out, previous = [], ""
    for s in parse_answer(section(prompt, ph.paragraph)).sentences:
        here, near = s.clean.lower(), f"{previous} {s.clean}".lower()
        cits = [
            c
            for c in facts
            if c.relation not in trivial and c.value.lower() in here and c.value.lower() != c.entity_name.lower() and c.entity_name.lower() in near
        ]
        out.append(format_sentence(s.clean, cits))
        previous = s.clean
    return " ".join(out)


def _template_extend(prompt: str) -> str:
    ph = by_header(prompt, "new_sentence")
    parts = section(prompt, ph.new_fact).split(SEP)
    if len(parts) != 4:
        return ""
    c = Citation(parts[0], parts[2], parts[3], parts[1])
    return format_sentence(ph.sentence(c.entity_name, c.relation, c.value), [c])


def _template_general_question(prompt: str) -> str:
    ph = by_header(prompt, "question_header")
    people = [p.strip() for p in section(prompt, ph.people).split(";") if p.strip()]
    if not people and (things := [t.strip() for t in section(prompt, ph.entities).split(";") if t.strip()]):
        return _about(ph, things)
    if len(people) > 1:
        return ph.who_many.format(names=ph.and_.join(people))
    return ph.who_one.format(name=people[0] if people else ph.this_person)


def _about(ph: Phrasing, things: Sequence[str]) -> str:
    """A question about entities listed as `Lyon (city)`, naming each as `the city Lyon` (in the
    language, with the article its noun's gender takes: `la ville Lyon`, `das Unternehmen X`)."""
    genders = {n.word: n for n in ph.nouns.values()}
    named: list[tuple[Noun | None, str]] = []
    for t in things:
        name, _, word = t.rpartition(" (")
        named.append((genders.get(word.rstrip(")")) or Noun(word.rstrip(")")), name) if name else (None, t))
    if len(named) > 1:
        return ph.what_connects.format(things=ph.and_.join(ph.named(n, x) if n else x for n, x in named))
    noun, name = named[0]
    return ph.what_known.format(thing=ph.about(noun, name) if noun else name)


def _template_specific_question(prompt: str) -> str:
    ph = by_header(prompt, "question_header")
    asked = list(dict.fromkeys(ph.asked_fact(c.entity_name, c.relation) for c in knowledge_from_prompt(prompt, ph.facts)))
    if not asked:
        return _template_general_question(prompt)
    return ph.what_many.format(asked=f"{', '.join(asked[:-1])}{ph.and_}{asked[-1]}") if len(asked) > 1 else ph.what_one.format(asked=asked[0])


def _asks(task: str) -> Callable[[str], bool]:
    return lambda prompt: prompt.lstrip().startswith(f"{TASK} {task}\n")


for _name, _respond in (
    ("annotate", _template_annotate),
    ("extend", _template_extend),
    ("general-question", _template_general_question),
    ("specific-question", _template_specific_question),
):
    register_task(TemplateTask(f"builder:{_name}", _asks(_name), _respond))
