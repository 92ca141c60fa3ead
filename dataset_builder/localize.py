"""`kalma dataset localize`: a dataset rendered in another language, its knowledge unchanged.

A KaLMA entry's knowledge is QIDs and PIDs; only its labels and its text are in a language. A
localization keeps every entry's id and its minimum set's facts (the same subject, property and
value), relabels them and the knowledge pool from the KG in the language (`rdfs:label "…"@fr`;
`kalma.kg.base` reads `mul` for a language with none of its own), and has the LLM write the
reference (one sentence a fact, as the builder's extend step does) and the two questions in the
language. An entry is left out, and listed with its reason, when a fact of its minimum set cannot
be said in the language: its subject, property or value has no label there (unless
`--label-fallback` allows one), or the KG no longer holds it. A pool fact that cannot be said is
left out of the pool and counted: the pool is context, the minimum set is the entry.

The English dataset and its localizations are parallel: entry by entry, the same minimum set,
so a model's figures in two languages differ by the language alone (`kalma compare`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kalma.citations import strip_citations
from kalma.classes import entity_class
from kalma.kg.base import KnowledgeSource
from kalma.languages.phrasing import phrasing
from kalma.models import LLM, GenParams
from kalma.schema import DatasetEntry, EntityGraph, KnowledgeGraph, Triple
from kalma.seeds import derive_seed

from . import prompts
from .evolve import clean_question, failures
from .pool import has_label

MAX_TOKENS = 200


@dataclass
class Localization:
    """What `localize` made: the entries, those left out (id and why), and the pool facts left out."""

    entries: list[DatasetEntry] = field(default_factory=list)
    left_out: list[dict[str, str]] = field(default_factory=list)
    pool_facts_left_out: int = 0

    def report(self) -> dict[str, Any]:
        return {"written": len(self.entries), "left_out": self.left_out, "pool_facts_left_out": self.pool_facts_left_out}


def _fact(t: Triple) -> tuple[str, str, str]:
    return (t.subject, t.relation, t.value)


def qids_of(entries: Sequence[DatasetEntry]) -> list[str]:
    """Every entity whose graph a localization needs: the pools' entities and the minimum sets' subjects."""
    found = [g.qid for e in entries for g in e.knowledge_pool.entities]
    found += [t.subject for e in entries for t in e.minimum_set or ()]
    return sorted(set(found), key=lambda q: (len(q), q))


def _missing(source: KnowledgeSource) -> dict[str, str]:
    """{id: why it has no label} of what `source` could not label (none for a source of another
    package, which keeps no notes)."""
    notes = getattr(source, "notes", None)
    return notes.missing if notes is not None else {}


def why_missing(t: Triple, graphs: dict[str, EntityGraph], source: KnowledgeSource) -> str:
    """Why the fact `t` cannot be said in the source's language, in words."""
    missing = _missing(source)
    for what, eid in (("its subject", t.subject), ("its property", t.relation), ("its value", t.value if t.value_type == "item" else "")):
        if eid and eid in missing:
            return f"{t.subject}, {t.relation}: {t.value}: {what} {eid} has {missing[eid]}"
    if t.subject not in graphs:
        return f"{t.subject}, {t.relation}: {t.value}: the KG does not hold {t.subject}"
    return f"{t.subject}, {t.relation}: {t.value}: the KG holds no such fact in {source.lang} (its value is text in another language, or the fact is gone)"


Said = dict[str, dict[tuple[str, str, str], Triple]]  # entity -> its facts said in the language, by (subject, PID, value)


def said_in(graphs: dict[str, EntityGraph]) -> Said:
    """Each entity's facts that can be said in the graphs' language (a value with a label): made
    once for the whole dataset, not once an entry."""
    return {q: {_fact(t): t for t in g.triples if has_label(t)} for q, g in graphs.items()}


def relabel(
    entry: DatasetEntry, graphs: dict[str, EntityGraph], said: Said, source: KnowledgeSource
) -> tuple[list[Triple], KnowledgeGraph, list[str], int] | str:
    """The entry's minimum set, pool and people's names in the source's language (and the pool
    facts left out), or why it cannot be rendered."""
    minimum = []
    for t in entry.minimum_set or ():
        found = said.get(t.subject, {}).get(_fact(t))
        if found is None:
            return why_missing(t, graphs, source)
        minimum.append(found)
    names = []
    for q in entry.people:
        g = graphs.get(q)
        if g is None or g.label == q:
            return f"{q} (named by the questions) has {_missing(source).get(q, f'no label in {source.lang}')}"
        names.append(g.label)
    pool, dropped = [], 0
    for g in entry.knowledge_pool.entities:
        here = graphs.get(g.qid)
        if here is None or here.label == g.qid:
            dropped += len(g.triples)
            continue
        kept = [said[g.qid][_fact(t)] for t in g.triples if _fact(t) in said[g.qid]]
        dropped += len(g.triples) - len(kept)
        used = {t.relation for t in kept}
        aliases = {p: a for p, a in here.property_aliases.items() if p in used}
        pool.append(EntityGraph(qid=g.qid, label=here.label, aliases=here.aliases, description=here.description, triples=kept, property_aliases=aliases))
    return minimum, KnowledgeGraph(entities=pool), names, dropped


def write_text(entry: DatasetEntry, minimum: list[Triple], names: list[str], llm: LLM, language: str, seed: int) -> tuple[str, str, str]:
    """(reference, general question, specific question) written by `llm` in `language` with the
    builder's own prompts (`kalma.languages.phrasing`): the reference one sentence a fact of the
    minimum set, as the extend step writes them; the questions naming the entities by the classes'
    nouns in the language where they are not people, as the build did."""
    paragraph = ""
    for i, t in enumerate(minimum):
        params = GenParams(temperature=0.0, max_tokens=MAX_TOKENS, seed=derive_seed(seed, "localize", "extend", i))
        paragraph = f"{paragraph} {llm.chat(prompts.extend(paragraph, t, language), params).text.strip()}".strip()
    reference = " ".join(strip_citations(paragraph, language).split())
    ph, qids = phrasing(language), list(entry.meta.get("classes", []))
    nouns = [ph.noun(q, entity_class(q).noun).word for q in qids] if qids else None
    general, specific = prompts.localized_questions(llm, reference, names, minimum, nouns, language, derive_seed(seed, "localize", "questions"))
    return reference, clean_question(general), clean_question(specific)


def localize(entries: Sequence[DatasetEntry], source: KnowledgeSource, llm: LLM) -> Localization:
    """`entries` in the source's language (see the module docstring), in their order, ids unchanged."""
    graphs = source.subgraphs(qids_of(entries))
    said = said_in(graphs)
    out = Localization()
    for entry in entries:
        done = relabel(entry, graphs, said, source)
        if isinstance(done, str):
            out.left_out.append({"id": entry.id, "reason": done})
            continue
        minimum, pool, names, dropped = done
        seed = int(entry.meta.get("seed", 0))
        reference, general, specific = write_text(entry, minimum, names, llm, source.lang, seed)
        failed = failures(minimum, general, specific)
        if failed:
            out.left_out.append({"id": entry.id, "reason": f"{llm.spec} wrote {', '.join(failed)}"})
            continue
        out.pool_facts_left_out += dropped
        meta = {**entry.meta, "language": source.lang, "localized_by": llm.spec}
        out.entries.append(
            entry.model_copy(
                update={
                    "general_question": general,
                    "specific_question": specific,
                    "knowledge_pool": pool,
                    "minimum_set": minimum,
                    "reference": reference,
                    "trace": [],
                    "meta": meta,
                }
            )
        )
    return out
