"""Step 4's prompt: instruction, a one-shot demonstration, the KG as flat text, the question.

The demonstration is consistent with its own knowledge: every cited triple is listed, and the
facts it states without support (Marie Curie's death in 1934, her two Nobel prizes being a
first) are exactly the ones the listed knowledge lacks, each marked [NA]. (The authors'
demonstration cited triples its KG did not contain.)
"""

from __future__ import annotations

import re

from kalma.citations import Citation, format_sentence
from kalma.models.template import TemplateTask, register_task
from kalma.schema import KnowledgeGraph
from kalma.verbalize import ANSWER_HEADER, KNOWLEDGE_HEADER, QUESTION_HEADER, kg_to_text, knowledge_from_prompt, section

PROMPT_VERSION = "kalma-baseline-v1"

INSTRUCTION = """Answer the question in a short paragraph, using the knowledge listed below.
Each knowledge line reads: QID | entity | relation | value.
After every claim the knowledge supports, cite the supporting lines in square brackets as
[QID, relation: value]; several lines about one entity may share a bracket:
[QID, relation: value, relation: value]. Copy relations and values exactly as listed.
If a claim needs knowledge that is not listed, you may still state it, but mark it [NA]
instead of citing anything. Never cite a line that is not listed."""

DEMO_KNOWLEDGE = """Q7186 | Marie Curie | place of birth | Warsaw
Q7186 | Marie Curie | spouse | Pierre Curie
Q7186 | Marie Curie | award received | Nobel Prize in Physics
Q7186 | Marie Curie | award received | Nobel Prize in Chemistry
Q37463 | Pierre Curie | place of birth | Paris
Q37463 | Pierre Curie | spouse | Marie Curie"""

DEMO_QUESTION = "Who were Marie and Pierre Curie, and what recognition did Marie Curie receive?"

DEMO_ANSWER = (
    "Marie Curie was born in Warsaw and married Pierre Curie "
    "[Q7186, place of birth: Warsaw, spouse: Pierre Curie]. "
    "Pierre Curie was born in Paris [Q37463, place of birth: Paris]. "
    "Marie Curie received the Nobel Prize in Physics and the Nobel Prize in Chemistry "
    "[Q7186, award received: Nobel Prize in Physics, award received: Nobel Prize in Chemistry], "
    "the first person to win Nobel prizes in two sciences [NA]. "
    "She died in 1934 [NA]."
)


def build_messages(question: str, kg: KnowledgeGraph) -> list[dict[str, str]]:
    knowledge = kg_to_text(kg) or "(no knowledge was found for this question)"
    demo = f"{KNOWLEDGE_HEADER}\n{DEMO_KNOWLEDGE}\n\n{QUESTION_HEADER} {DEMO_QUESTION}\n\n{ANSWER_HEADER} {DEMO_ANSWER}"
    task = f"{KNOWLEDGE_HEADER}\n{knowledge}\n\n{QUESTION_HEADER} {question}\n\n{ANSWER_HEADER}"
    return [
        {"role": "system", "content": INSTRUCTION},
        {"role": "user", "content": f"Example:\n\n{demo}\n\nNow your turn.\n\n{task}"},
    ]


# ---------------------------------------------------------------- the template backend's answers

TRIVIAL = {"instance of", "sex or gender", "given name", "family name", "described by source", "topic's main category"}
STOPWORDS = set(
    "a an and are as at be been by did do does for from had has have he her his how in is it its of on or she "
    "that the their them they this to was were what when where which who whom whose why with would about "
    "also both did into some other there these those any can could many more most much such than then own "
    "life career known role influence influenced work works shape shaped".split()
)
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
MAX_PER_ENTITY = 4


def _words(text: str) -> set[str]:
    return {w.lower().strip("'’") for w in _WORD.findall(text)} - STOPWORDS


def template_answer(prompt: str) -> str:
    """The offline `template` backend's answer to this prompt: one sentence per listed fact the
    question touches most (up to 4 per entity), each citing it, and an [NA] sentence naming the
    question's words no fact covers."""
    knowledge = [c for c in knowledge_from_prompt(prompt) if c.relation not in TRIVIAL]
    q_words = _words(section(prompt, QUESTION_HEADER))
    if not knowledge:
        return format_sentence("The given knowledge does not cover this question.", na=True)
    by_entity: dict[str, list[Citation]] = {}
    for c in knowledge:
        by_entity.setdefault(c.qid, []).append(c)
    sentences: list[str] = []
    covered: set[str] = set()
    for qid, cits in by_entity.items():
        name = cits[0].entity_name or qid
        covered |= _words(name)
        # Facts the question touches first, then the entity's other facts, in KG order.
        ranked = sorted(cits, key=lambda c: -len(q_words & (_words(c.relation) | _words(c.value))))
        for c in ranked[:MAX_PER_ENTITY]:
            covered |= _words(c.relation) | _words(c.value)
            sentences.append(format_sentence(f"{name}'s {c.relation} is {c.value}.", [c]))
    missing = sorted(q_words - covered)
    if missing:
        sentences.append(format_sentence(f"The given knowledge says nothing about {', '.join(missing[:6])}.", na=True))
    return " ".join(sentences)


register_task(TemplateTask("baseline:answer", lambda p: p.rstrip().endswith(ANSWER_HEADER) and KNOWLEDGE_HEADER in p, template_answer))
