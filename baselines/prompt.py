"""Step 4's prompt: instruction, a one-shot demonstration, the KG as flat text, the question.

The demonstration is consistent with its own knowledge: every cited triple is listed, and the
facts it states without support (Marie Curie's death in 1934, her two Nobel prizes being a
first) are exactly the ones the listed knowledge lacks, each marked [NA]. (The authors'
demonstration cited triples its KG did not contain.)
"""

from __future__ import annotations

import re

from kalma.citations import Citation, format_sentence
from kalma.languages.phrasing import ENGLISH, by_header, phrasing
from kalma.models.template import TemplateTask, register_task
from kalma.schema import KnowledgeGraph
from kalma.verbalize import kg_to_text, knowledge_from_prompt, section

PROMPT_VERSION = "kalma-baseline-v1"

# The English text (`kalma.languages.phrasing` holds every language's): what other modules quote.
INSTRUCTION, DEMO_KNOWLEDGE, DEMO_QUESTION, DEMO_ANSWER = ENGLISH.instruction, ENGLISH.demo_knowledge, ENGLISH.demo_question, ENGLISH.demo_answer


def build_messages(question: str, kg: KnowledgeGraph, language: str = "en") -> list[dict[str, str]]:
    """The system instruction and one user turn (the demonstration, then the task), in `language`:
    its instruction, its demonstration (knowledge, question and answer in its labels) and headers."""
    ph = phrasing(language)
    knowledge = kg_to_text(kg) or ph.no_knowledge
    demo = f"{ph.knowledge_header}\n{ph.demo_knowledge}\n\n{ph.question_header} {ph.demo_question}\n\n{ph.answer_header} {ph.demo_answer}"
    task = f"{ph.knowledge_header}\n{knowledge}\n\n{ph.question_header} {question}\n\n{ph.answer_header}"
    return [
        {"role": "system", "content": ph.instruction + ph.write_in},
        {"role": "user", "content": f"{ph.example}\n\n{demo}\n\n{ph.your_turn}\n\n{task}"},
    ]


# ---------------------------------------------------------------- the template backend's answers

TRIVIAL, STOPWORDS = ENGLISH.trivial, ENGLISH.stopwords
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
MAX_PER_ENTITY = 4


def _words(text: str, stopwords: frozenset[str] = STOPWORDS) -> set[str]:
    return {w.lower().strip("'’") for w in _WORD.findall(text)} - stopwords


def template_answer(prompt: str) -> str:
    """The offline `template` backend's answer to this prompt, in the prompt's language: one
    sentence per listed fact the question touches most (up to 4 per entity), each citing it, and
    an [NA] sentence naming the question's words no fact covers."""
    ph = by_header(prompt, "answer_header")
    knowledge = [c for c in knowledge_from_prompt(prompt, ph.knowledge_header) if c.relation not in ph.trivial]
    q_words = _words(section(prompt, ph.question_header), ph.stopwords)
    if not knowledge:
        return format_sentence(ph.not_covered, na=True)
    by_entity: dict[str, list[Citation]] = {}
    for c in knowledge:
        by_entity.setdefault(c.qid, []).append(c)
    sentences: list[str] = []
    covered: set[str] = set()
    for qid, cits in by_entity.items():
        name = cits[0].entity_name or qid
        covered |= _words(name, ph.stopwords)
        # Facts the question touches first, then the entity's other facts, in KG order.
        ranked = sorted(cits, key=lambda c: -len(q_words & (_words(c.relation, ph.stopwords) | _words(c.value, ph.stopwords))))
        for c in ranked[:MAX_PER_ENTITY]:
            covered |= _words(c.relation, ph.stopwords) | _words(c.value, ph.stopwords)
            sentences.append(format_sentence(ph.sentence(name, c.relation, c.value), [c]))
    missing = sorted(q_words - covered)
    if missing:
        sentences.append(format_sentence(ph.says_nothing.format(words=", ".join(missing[:6])), na=True))
    return " ".join(sentences)


def _asks_answer(prompt: str) -> bool:
    ph = by_header(prompt, "answer_header")
    return prompt.rstrip().endswith(ph.answer_header) and ph.knowledge_header in prompt


register_task(TemplateTask("baseline:answer", _asks_answer, template_answer))
