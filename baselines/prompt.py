"""Step 4's prompt: instruction, a one-shot demonstration, the KG as flat text, the question.

The demonstration is consistent with its own knowledge: every cited triple is listed, and the
facts it states without support (Marie Curie's death in 1934, her two Nobel prizes being a
first) are exactly the ones the listed knowledge lacks, each marked [NA]. (The authors'
demonstration cited triples its KG did not contain.)
"""

from __future__ import annotations

from kalma.schema import KnowledgeGraph
from kalma.verbalize import ANSWER_HEADER, KNOWLEDGE_HEADER, QUESTION_HEADER, kg_to_text

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
