"""Knowledge as text: the flat KG serialisation used in prompts, and triples as sentences.

The flat form is one triple per line. It stays unambiguous whatever the labels contain
(Wikidata has relation labels with commas, "languages spoken, written or signed", and values
with commas, "Washington, D.C."), and it parses back exactly:

    Q212657 | Artemisia Gentileschi | place of birth | Rome
"""

from __future__ import annotations

from .citations import Citation
from .languages.phrasing import phrasing
from .schema import QID_RE, KnowledgeGraph, Triple

KNOWLEDGE_HEADER = "Knowledge:"
QUESTION_HEADER = "Question:"
ANSWER_HEADER = "Answer:"


SEP = " | "


def kg_to_text(kg: KnowledgeGraph) -> str:
    """Deterministic: entities in KG order, triples in their stored (sorted) order; an entity
    without triples still gets a line so the model knows it was retrieved."""
    lines = []
    for e in kg.entities:
        lines += [SEP.join((t.subject, e.label, t.relation_label, t.value_label)) for t in e.triples] or [SEP.join((e.qid, e.label))]
    return "\n".join(lines)


def knowledge_from_prompt(prompt: str, header: str = KNOWLEDGE_HEADER) -> list[Citation]:
    """The triples `kg_to_text` listed in the last `header` block of a prompt (the block ends
    at a blank line), as citations: the inverse of `kg_to_text`, for offline backends."""
    out = []
    for line in section(prompt, header).splitlines():
        parts = line.strip().split(SEP, 3)
        if len(parts) == 4 and QID_RE.match(parts[0]):
            out.append(Citation(parts[0], parts[2], parts[3], parts[1]))
    return out


def section(prompt: str, header: str) -> str:
    """The text after the last `header` up to the next blank line."""
    head = prompt.rfind(header)
    if head < 0:
        return ""
    return prompt[head + len(header) :].strip().split("\n\n")[0].strip()


def verbalize(t: Triple | Citation, subject_name: str | None = None, language: str = "en") -> str:
    """`Artemisia Gentileschi's place of birth is Rome.` In English always this form, whatever the
    property: the metrics' evidence (CONNER's, the verbalised hypotheses) is this text, and their
    English figures stay what they were. In another language, its phrasing of the property
    (`kalma.languages.phrasing`): "Le lieu de naissance d'Artemisia Gentileschi est Rome."
    """
    if isinstance(t, Triple):
        name, rel, val, pid = subject_name or t.subject_label or t.subject, t.relation_label, t.value_label, t.relation
    else:
        name, rel, val, pid = subject_name or t.entity_name or t.qid, t.relation, t.value, ""
    if language == "en":
        return f"{name}'s {rel} is {val}."
    return phrasing(language).sentence(name, rel, val, phrasing(language).pid(pid, rel))


def hypothesis(t: Triple | Citation, verbalized: bool = False) -> str:
    """The alignment hypothesis: `relation: value`, or the verbalised sentence."""
    if verbalized:
        return verbalize(t)
    rel, val = (t.relation_label, t.value_label) if isinstance(t, Triple) else (t.relation, t.value)
    return f"{rel}: {val}"
