"""`kalma records from-kg`: relation records drawn from the KG itself, for a user with no corpus.

Linked pairs of the given classes (a and b each an instance of one of them, subclasses included,
`a PID b` in the KG, PID none of a's class's trivial relations) are drawn seeded and without
repeats (a pair and its reverse under one property are one record), spread over the properties in turn. A pair whose name is not a label
only it has among the classes' entities is left out: its record could not resolve. Each record's
seed paragraph is written from the pair's triples by an LLM (`template`: one sentence a fact),
so that any class of a local Wikidata becomes a dataset in three commands (`kalma kg import`,
this, `kalma build`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

from kalma.classes import CLASSES, entity_class
from kalma.kg.base import KnowledgeSource
from kalma.languages.phrasing import by_header, phrasing
from kalma.models import LLM, GenParams
from kalma.models.template import TemplateTask, register_task
from kalma.schema import Record, Triple
from kalma.seeds import derive_seed
from kalma.verbalize import SEP, knowledge_from_prompt

from .pool import has_label

TASK = "Task: records-paragraph"
Link = tuple[str, str, str]  # (a, PID, b)
Keep = Callable[[Sequence[Link]], set[Link]]  # the links a draw may take, of those the KG holds
FACTS_PER_PARAGRAPH = 4  # the link and up to three more facts of the pair, so round 1 has something to annotate


class RelationRecord(Record):
    """A relation record as `kalma build` reads it, with the classes of its two ends."""

    paragraph: str
    person_a: str
    relation: str
    person_b: str
    class_a: str
    class_b: str


def default_properties(classes: Sequence[str]) -> list[str]:
    """The properties the registry's classes link by, when the user names none. A class with no
    list of its own (a novel, a business) may link by any the registry knows: without them, its
    links would never be drawn beside another class's."""
    every = [p for c in CLASSES.values() for p in c.properties]
    return list(dict.fromkeys(p for c in classes for p in (entity_class(c).properties or every)))


def class_pairs(classes: Sequence[str], asked: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The (class of a, class of b) drawn from: each pair `--pair` asks for, both ways round, else
    every ordered pair of `classes`."""
    if asked:
        return list(dict.fromkeys(x for a, b in asked for x in ((a, b), (b, a))))
    return [(ca, cb) for ca in classes for cb in classes]


def draw(
    source: KnowledgeSource,
    classes: Sequence[str],
    properties: Sequence[str],
    n: int,
    seed: int,
    asked: Sequence[tuple[str, str]] = (),
    keep: Keep | None = None,
) -> list[tuple[str, str, str, str, str]]:
    """Up to `n` (a, PID, b, class of a, class of b), seeded, spread over the properties; with
    `keep`, only among the links it keeps (`changed_since`)."""
    found: dict[tuple[str, ...], tuple[str, str, str, str, str]] = {}
    drawn_from = class_pairs(classes, asked)
    labels = source.labels(list(properties))
    for ca in classes:
        # a relation trivial for a's class (its id or its label) is never a record's link, even when named
        links = [p for p in properties if not entity_class(ca).trivial_relation(p, labels.get(p, ""))]
        for cb in classes:
            if (ca, cb) not in drawn_from or not links:
                continue
            for a, p, b in source.pairs([ca], links, [cb]):
                key = (p, *sorted((a, b)))
                if a != b:
                    found.setdefault(key, (a, p, b, ca, cb))
    if keep is not None:
        kept = keep([x[:3] for x in found.values()])
        found = {k: x for k, x in found.items() if x[:3] in kept}
    names = source.labels(sorted({q for x in found.values() for q in x[:3:2]}))
    hits = source.lookup(sorted(set(names.values())), classes)
    unique = {q for q, name in names.items() if name != q and hits.get(name) == [q]}
    by_pid: dict[str, list[tuple[str, str, str, str, str]]] = {}
    for x in sorted(found.values()):
        if x[0] in unique and x[2] in unique:
            by_pid.setdefault(x[1], []).append(x)
    rng = random.Random(seed)
    queues = [rng.sample(xs, len(xs)) for _, xs in sorted(by_pid.items())]
    out: list[tuple[str, str, str, str, str]] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop())
    return out


def paragraph_prompt(facts: Sequence[Triple], language: str = "en") -> list[dict[str, str]]:
    """The request for a record's seed paragraph, in the language (English asking to write in it
    where the suite has no text written in the language)."""
    ph = phrasing(language)
    lines = "\n".join(SEP.join((t.subject, t.subject_label, t.relation_label, t.value_label)) for t in facts)
    return [{"role": "user", "content": f"{TASK}\n{ph.records_paragraph}{ph.write_in}\n\n{ph.facts}\n{lines}\n\n{ph.paragraph}"}]


def _template_paragraph(prompt: str) -> str:
    ph = by_header(prompt, "paragraph")  # the language the prompt ends in: its facts header and its sentences
    return " ".join(ph.sentence(c.entity_name or c.qid, c.relation, c.value) for c in knowledge_from_prompt(prompt, ph.facts))


register_task(TemplateTask("records:paragraph", lambda prompt: prompt.lstrip().startswith(TASK + "\n"), _template_paragraph))


def records_from_kg(
    source: KnowledgeSource,
    classes: Sequence[str],
    properties: Sequence[str],
    n: int,
    seed: int,
    llm: LLM,
    asked: Sequence[tuple[str, str]] = (),
    keep: Keep | None = None,
    language: str = "en",
) -> list[RelationRecord]:
    pairs = draw(source, classes, properties, n, seed, asked, keep)
    graphs = source.subgraphs(sorted({q for x in pairs for q in x[:3:2]}))
    out = []
    for a, p, b, ca, cb in pairs:
        ga, gb = graphs[a], graphs[b]
        link = next(t for t in ga.triples if t.relation == p and t.value == b)
        rng = random.Random(derive_seed(seed, "records", a, p, b))
        others = [t for g, c in ((ga, ca), (gb, cb)) for t in g.triples if t != link and has_label(t) and not entity_class(c).is_trivial(t)]
        facts = [link, *rng.sample(others, min(len(others), FACTS_PER_PARAGRAPH - 1))]
        text = llm.chat(paragraph_prompt(facts, language), GenParams(temperature=0.7, max_tokens=200, seed=derive_seed(seed, "paragraph", a, p, b))).text
        out.append(RelationRecord(paragraph=" ".join(text.split()), person_a=ga.label, relation=p, person_b=gb.label, class_a=ca, class_b=cb))
    return out


def check_classes(source: KnowledgeSource, classes: Sequence[str], properties: Sequence[str]) -> None:
    """One line naming the option when a class is none or has no instances, or a property is unknown."""
    status = source.class_status(classes)
    for c in classes:
        if status[c] != "has instances":
            why = "is no class" if status[c] == "not a class" else "has no instances, its subclasses included,"
            raise ValueError(f"--classes: {c} {why} in the knowledge graph")
    if not properties:
        raise ValueError("--properties: the knowledge graph has none of these classes' properties: name some")
    known = source.labels(properties)
    for p in properties:
        if p not in known:
            raise ValueError(f"--properties: {p} is no property of the knowledge graph")


def pair_counts(drawn: Sequence[RelationRecord], classes: Sequence[str], asked: Sequence[tuple[str, str]] = ()) -> dict[str, int]:
    """{"A:B": records drawn}, for every class pair drawn from (a pair and its reverse apart, as the
    records' class_a and class_b are), zeros included: what the user can compare with what they meant."""
    got = Counter(f"{r.class_a}:{r.class_b}" for r in drawn)
    return {k: got[k] for k in (f"{a}:{b}" for a, b in class_pairs(classes, asked))}


def absent_classes(drawn: Sequence[RelationRecord], classes: Sequence[str]) -> list[str]:
    """The named classes no record has at either end."""
    present = {c for r in drawn for c in (r.class_a, r.class_b)}
    return [c for c in classes if c not in present]


# ---------------------------------------------------------------- fresh entries (--changed-since)


class SplitRecord(RelationRecord):
    """A record drawn with `--changed-since OLD`: whether its link is new or changed since OLD
    (`changed`) or OLD held it too (`unchanged`). The builder carries it into the entry's meta."""

    split: Literal["changed", "unchanged"]


def changed_since(old: KnowledgeSource, changed: bool = True) -> Keep:
    """The links OLD does not hold (in either direction, as `linked` asks): new or changed since
    OLD; with `changed=False`, those it holds."""

    def keep(links: Sequence[Link]) -> set[Link]:
        held = old.linked(links) if links else set()
        return {x for x in links if (x in held) != changed}

    return keep


def fresh_records(
    source: KnowledgeSource,
    old: KnowledgeSource,
    classes: Sequence[str],
    properties: Sequence[str],
    n: int,
    unchanged: int,
    seed: int,
    llm: LLM,
    asked: Sequence[tuple[str, str]] = (),
    language: str = "en",
) -> list[SplitRecord]:
    """`n` records whose link is new or changed since OLD, then `unchanged` whose link OLD held
    too (a control split, drawn with a seed of its own), each with its split."""
    changed = records_from_kg(source, classes, properties, n, seed, llm, asked, changed_since(old), language)
    control = derive_seed(seed, "unchanged")
    same = records_from_kg(source, classes, properties, unchanged, control, llm, asked, changed_since(old, False), language) if unchanged else []
    return [SplitRecord(**r.model_dump(), split="changed") for r in changed] + [SplitRecord(**r.model_dump(), split="unchanged") for r in same]
