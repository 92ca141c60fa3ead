"""Labelled judge pairs generated from a dataset and its KG (`kalma judge pairs`): what the
entailment judge will be asked on this data, with the answer known by construction.

Card
- Input: a dataset's entries and the KG they were built from. An entry's knowledge is its minimum
  set, or, where it has none (the authors' release), every triple the KG holds about its people
  (less the bookkeeping properties: instance of, category, described by source).
- Output: one row per (sentence, triple) pair, exactly as `kalma evaluate` hands it to the judge:
  `doc` is the sentence with its markup removed (`Sentence.clean`), `claim` the cited triple's
  alignment hypothesis (`kalma.verbalize.hypothesis`); both by the evaluator's own functions.
- Kinds: `supported` (states what it cites), `partial` (states two triples, cites one),
  `contradictory` (states the cited triple with its value replaced by another value of the same
  property in the KG, of the same P31 class where the KG gives one, never a value the subject has),
  `irrelevant` (cites a triple it does not state: another property of the entity, or another
  entity), `na` (the [NA] metrics' question: a sentence stating a triple that knowledge removal took
  from the KG, against it and against the other removed triple).
- Label: the judge's question, decided from the row's triples alone. With the paper's direction
  (`--document sentence`, the default: the sentence is the checker's document) a pair is
  supported when the sentence states the judged triple; with `--document triple` (the checkers'
  `document=hypothesis`) only when the judged triple is all the sentence states. So a `partial`
  row is 1 in the paper's direction (the sentence does state the cited triple; what it leaves
  uncited is citation recall's business) and 0 in the other, the direction CAQA's partial
  support is about.
- Sentences: any LLM spec, asked to state exactly the given facts; the offline `template` answers
  with the builder's verbalisation (`template_sentence`). A reply that is not one sentence, or that
  does not mention each stated value by its label or an alias, is discarded and counted.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from kalma.citations import parse_answer
from kalma.errors import KalmaError
from kalma.jsonl import dumps
from kalma.languages.phrasing import by_header, phrasing
from kalma.models.base import GenParams
from kalma.models.template import TemplateTask, register_task
from kalma.schema import DatasetEntry, EntityGraph, KnowledgeGraph, Triple, normalize_text
from kalma.seeds import rng
from kalma.verbalize import SEP, hypothesis, knowledge_from_prompt

KINDS = ("supported", "partial", "contradictory", "irrelevant", "na")
NEGATED = "negated"  # the sixth kind, made with --vary: a sentence denying the triple it cites (label 0)
BOOKKEEPING = frozenset({"instance of", "topic's main category", "described by source", "wikimedia category"})
REMOVED = 2  # triples knowledge removal takes from each entry for the `na` rows
FACTS = "Facts:"
TASK = "Task: state-facts"
# Each way of asking has its task line, the same in every language (the template recognises it).
TASKS = {"verbatim": TASK, "varied": "Task: state-facts-varied", "denied": "Task: deny-fact"}
How = Literal["verbatim", "varied", "denied"]
Document = Literal["sentence", "triple"]


class PairsInputError(KalmaError, ValueError):
    """Nothing to make pairs from: no entities in the KG, or no usable sentence."""


def state_prompt(facts: Sequence[Triple], language: str = "en", how: How = "verbatim") -> list[dict[str, str]]:
    """One user turn asking for one sentence in `language` that states exactly `facts` (`varied`: in
    the model's own words; `denied`: that denies the one fact)."""
    ph = phrasing(language)
    lines = "\n".join(SEP.join((t.subject, t.subject_label or t.subject, t.relation_label, t.value_label)) for t in facts)
    ask = {"verbatim": ph.state, "varied": ph.vary, "denied": ph.deny}[how]
    body = f"{ask}{ph.write_in}\n\n{ph.facts}\n{lines}\n\n{ph.sentence_slot}"
    return [{"role": "user", "content": f"{TASKS[how]}\n{body}"}]


def _template_state(prompt: str, how: How = "verbatim") -> str:
    """The builder's verbalisation of each fact in the prompt's language, the clauses joined into one
    sentence; `varied`: another way people state each fact where the language has one (chosen by the
    prompt's checksum, so the same prompt gets the same sentence) and the clauses in either order;
    `denied`: the fact denied."""
    from dataset_builder.selection import template_sentence

    ph = by_header(prompt, "sentence_slot")
    facts = knowledge_from_prompt(prompt, ph.facts)
    triples = [Triple(subject=c.qid, subject_label=c.entity_name, relation="", relation_label=c.relation, value=c.value, value_label=c.value) for c in facts]
    pick = zlib.crc32(prompt.encode())
    clauses = [
        (ph.variant(t.subject_label, t.relation_label, t.value_label, pick + i) if how == "varied" else None)
        or template_sentence(t, language=ph.code, negated=how == "denied")
        for i, t in enumerate(triples)
    ]
    if how == "varied" and pick % 2:
        clauses.reverse()
    return ph.clause_join.join(c.rstrip(".") for c in clauses) + "." if clauses else ""


def _template_task(how: How) -> TemplateTask:
    return TemplateTask(f"judge-pairs:{how}", lambda p: p.lstrip().startswith(TASKS[how] + "\n"), lambda p: _template_state(p, how))


for _how in get_args(How):
    register_task(_template_task(_how))


def ident(t: Triple) -> list[str]:
    """[subject, property, value] ids: the property's PID where known, else its label."""
    return [t.subject, t.relation or t.relation_label, t.value]


@functools.lru_cache(maxsize=1 << 16)  # the same names and sentences are folded again for every row
def _folded(text: str) -> str:
    """Lower case without accents ("Mǎng" is "mang")."""
    return "".join(c for c in unicodedata.normalize("NFKD", normalize_text(text).lower()) if not unicodedata.combining(c))


def mentions(sentence: str, names: Iterable[str]) -> bool:
    """Does `sentence` name one of `names` as whole words (so "male" is not found in "female"), accents aside?"""
    text = _folded(sentence)
    return any(_whole_word(text, _folded(n)) for n in names if n.strip())


def _whole_word(text: str, word: str) -> bool:
    """`word` in `text` with no word character (regex's `\\w`: alphanumeric or `_`) on either side;
    a scan with `str.find`, not a regex compiled per name (the release's 10,000 names overflow
    `re`'s cache, and compiling was most of the time `kalma judge pairs` spent naming values)."""
    at = text.find(word)
    while at != -1:
        end = at + len(word)
        if not (at and _word_char(text[at - 1])) and not (end < len(text) and _word_char(text[end])):
            return True
        at = text.find(word, at + 1)
    return False


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def said(t: Triple) -> str:
    """What the judge reads of a triple: its hypothesis, which names no subject ("place of birth: Rome")."""
    return normalize_text(hypothesis(t)).lower()


def in_name(t: Triple) -> bool:
    """Is the value part of the subject's own name ("given name: Jerry" of Jerry Brown)? Any sentence
    naming the subject then half-states it, so such a triple is never the claim of a 0-labelled row."""
    return mentions(t.subject_label or "", [t.value_label])


def label(document: Document, judged: Triple, stated: Sequence[Triple]) -> int:
    """The judge's right answer (see the card), decided on the hypotheses as the judge reads them:
    a sentence stating one person's "sex or gender: male" does entail that claim made of another."""
    claims = {said(t) for t in stated}
    return int(claims == {said(judged)}) if document == "triple" else int(said(judged) in claims)


@dataclass
class Plan:
    """One sentence to ask for and the rows it makes: (kind, judged triple, cited triples)."""

    entry: str
    kind: str
    stated: list[Triple]
    rows: list[tuple[Triple, list[Triple]]]
    how: How = "verbatim"
    said_as: list[Triple] = field(default_factory=list)  # the facts as the prompt gives them (--vary: a value's alias, a date written out)
    denied: list[Triple] = field(default_factory=list)  # `negated`: the fact the sentence denies


def vary(plans: Sequence[Plan], entry: DatasetEntry, world: World, seed: int, language: str) -> list[Plan]:
    """--vary: every plan asked in the model's own words, each value as people write it (a date
    written out, "6 November 1975"; else, half the time, one of the value's aliases in the KG) and
    its property, half the time, by one of its aliases in the KG (`skos:altLabel`); and one more
    plan, `negated`, that denies one true fact of the entry and cites it (label 0). Every label
    stays what the plan's triples make it: a varied sentence states the same triples."""
    ph = phrasing(language)
    r = rng(seed, "judge-pairs-vary", entry.id)

    def said_as(t: Triple) -> Triple:
        value = ph.date(t.value_label) or (r.choice(aliases) if (aliases := world.names.get(t.value, [])[1:]) and r.random() < 0.5 else t.value_label)
        graph = world.graphs.get(t.subject)
        others = graph.property_aliases.get(t.relation, []) if graph else []
        relation = r.choice(others) if others and r.random() < 0.5 else t.relation_label
        return t.model_copy(update={"value_label": value, "relation_label": relation})

    out = [replace(p, how="varied", said_as=[said_as(t) for t in p.stated]) for p in plans]
    facts = [t for t in knowledge(entry, world) if not in_name(t)]
    if facts:
        t = r.choice(facts)
        out.append(Plan(entry.id, NEGATED, [], [(t, [t])], how="denied", said_as=[said_as(t)], denied=[t]))
    return out


@dataclass
class Made:
    rows: list[dict[str, Any]]
    discarded: Counter[str] = field(default_factory=Counter)
    entries: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # kinds an entry's knowledge could not make


@dataclass
class World:
    """What the KG says: every subject's values per property, each value's classes and names."""

    graphs: dict[str, EntityGraph]
    truth: dict[tuple[str, str], set[str]]  # (subject, property) -> its value ids and normalised labels
    # property -> one triple per distinct value, to draw replacements from, with its value type, value, normalised label and classes
    pool: dict[str, list[tuple[Triple, Literal["item", "literal"], str, str, set[str]]]]
    classes: dict[str, set[str]]  # value id -> its P31 classes
    names: dict[str, list[str]]  # value id -> label and aliases

    @classmethod
    def of(cls, source: Any, qids: Sequence[str]) -> World:
        graphs = source.subgraphs(qids)
        truth: dict[tuple[str, str], set[str]] = {}
        pool: dict[str, dict[str, Triple]] = {}
        for g in graphs.values():
            for t in g.triples:
                p = ident(t)[1]
                truth.setdefault((t.subject, p), set()).update({t.value, normalize_text(t.value_label).lower()})
                pool.setdefault(p, {}).setdefault(t.value, t)
        values = sorted({v for per in pool.values() for v in per if re.fullmatch(r"Q\d+", v)})
        about = source.subgraphs(values) if values else {}
        classes = {q: {t.value for t in g.triples if t.relation == "P31"} for q, g in about.items()}
        names = {q: [g.label, *g.aliases] for q, g in about.items()}
        described = {
            p: [(c, c.value_type, c.value, normalize_text(c.value_label).lower(), classes.get(c.value, set())) for c in v.values()] for p, v in pool.items()
        }
        return cls(graphs, truth, described, classes, names)

    def replacement(self, t: Triple, r: Any) -> Triple | None:
        """Another value of `t`'s property from the KG that the subject does not have, of the same
        class where the KG gives the true value's class; None when there is none."""
        p = ident(t)[1]
        mine = self.classes.get(t.value, set())
        true = self.truth.get((t.subject, p), set())  # the subject's values of the property, by id and by name
        # each candidate's name and classes read once per KG, not once per entry: the release's
        # entries checked ~280 candidates each, two fifths of the time they took to plan
        cands = [
            c
            for c, kind, value, name, of in self.pool.get(p, [])
            if kind == t.value_type and value not in true and name not in true and (not mine or not of.isdisjoint(mine))
        ]
        if not cands:
            return None
        c = r.choice(cands)
        return t.model_copy(update={"value": c.value, "value_label": c.value_label})

    def value_names(self, t: Triple) -> list[str]:
        return [t.value_label, *self.names.get(t.value, [])[1:]]


def knowledge(entry: DatasetEntry, world: World) -> list[Triple]:
    """The entry's minimum set, else its people's knowledge in the KG."""
    found = entry.minimum_set or [t for q in entry.people if q in world.graphs for t in world.graphs[q].triples]
    return [t for t in found if t.relation_label not in BOOKKEEPING]


def plan_entry(entry: DatasetEntry, world: World, seed: int, document: Document, others: Sequence[Triple]) -> tuple[list[Plan], list[str]]:
    """Every sentence one entry's knowledge makes, and the kinds it could not make."""
    from kalma.removal import remove_knowledge

    facts = knowledge(entry, world)
    r = rng(seed, "judge-pairs", entry.id)
    plans: list[Plan] = []
    missing: list[str] = []
    if not facts:
        return [], list(KINDS)
    order = facts[:]
    r.shuffle(order)
    # supported: one or two triples, cited exactly (one in the `triple` direction, where two would not be)
    two = [order[0], next((t for t in order[1:] if ident(t)[1] != ident(order[0])[1]), None)]
    stated = [t for t in two if t is not None][: 1 if document == "triple" or r.random() < 0.5 else 2]
    plans.append(Plan(entry.id, "supported", stated, [(t, stated) for t in stated]))
    # partial: two triples of different properties, one cited
    a = order[-1]
    b = next((t for t in reversed(order[:-1]) if ident(t)[1] != ident(a)[1]), None)
    if b is None:
        missing.append("partial")
    else:
        plans.append(Plan(entry.id, "partial", [a, b], [(a, [a])]))
    # contradictory: a triple whose value the KG can replace
    for t in (t for t in order if not in_name(t)):
        wrong = world.replacement(t, r)
        if wrong is not None:
            plans.append(Plan(entry.id, "contradictory", [wrong], [(t, [t])]))
            break
    else:
        missing.append("contradictory")
    # irrelevant: cite another property of the entity, else another entity's triple
    s = order[len(order) // 2]
    other = next((t for t in order if ident(t)[1] != ident(s)[1] and t.relation_label != s.relation_label and not in_name(t)), None)
    sample = r.sample(list(others), min(len(others), 20))
    other = other or next((t for t in sample if t.subject != s.subject and said(t) != said(s) and not in_name(t)), None)
    if other is None:
        missing.append("irrelevant")
    else:
        plans.append(Plan(entry.id, "irrelevant", [s], [(other, [other])]))
    # na: knowledge removal's absent set (the evaluator's `absent_from`), each removed triple stated alone
    given = KnowledgeGraph(entities=[world.graphs[q] for q in entry.people if q in world.graphs])
    removal = entry.model_copy(update={"minimum_set": facts, "knowledge_pool": given})
    absent = remove_knowledge([removal], REMOVED, seed)[entry.id].absent or []
    # each stated alone, against itself (1) and against the other (0): the other never of the subject's name
    found = [(a, b) for a, b in (absent[:2], absent[1::-1]) if len(absent) > 1 and said(a) != said(b) and not in_name(b)]
    if not found:
        missing.append("na")
    else:
        first, second = found[0]
        plans.append(Plan(entry.id, "na", [first], [(first, [first]), (second, [second])]))
    return plans, missing


def make_pairs(
    entries: Sequence[DatasetEntry],
    source: Any,
    llm: str,
    *,
    dataset: str,
    seed: int = 0,
    document: Document = "sentence",
    max_tokens: int = 128,
    language: str = "en",
    varied: bool = False,
) -> Made:
    """Every labelled pair the entries make (see the card); `varied`: `vary`'s."""
    from kalma.models import get_llm

    people = sorted({q for e in entries for q in e.people} | {t.subject for e in entries for t in e.minimum_set or []})
    world = World.of(source, people)
    if not world.graphs:
        raise PairsInputError(f"the KG holds none of the {len(people)} entities of {dataset}'s {len(entries)} entries: nothing to make pairs from")
    made = Made([], entries=len(entries))
    plans: list[Plan] = []
    everyone = [t for g in world.graphs.values() for t in g.triples if t.relation_label not in BOOKKEEPING]
    for e in entries:
        found, missing = plan_entry(e, world, seed, document, everyone)
        plans += vary(found, e, world, seed, language) if varied else found
        made.skipped.update(missing)
    model = get_llm(llm)
    prompts = [state_prompt(p.said_as or p.stated, language, p.how) for p in plans]
    replies = model.chat_many(prompts, GenParams(temperature=0.0, max_tokens=max_tokens, seed=seed))
    for p, reply in zip(plans, replies):
        sentences = parse_answer(reply.text).sentences
        if len(sentences) != 1:
            made.discarded[f"{p.kind}: not one sentence"] += 1
            continue
        doc = sentences[0].clean
        named = p.stated or p.denied
        if not all(mentions(doc, [*world.value_names(t), *(s.value_label for s in p.said_as[i : i + 1])]) for i, t in enumerate(named)):
            made.discarded[f"{p.kind}: a stated value not named"] += 1
            continue
        for judged, cited in p.rows:
            made.rows.append(
                {
                    "doc": doc,
                    "claim": hypothesis(judged),
                    "label": label(document, judged, p.stated),
                    "dataset": dataset,
                    "kind": p.kind,
                    "entry_id": p.entry,
                    "judged": ident(judged),
                    "cited": [ident(t) for t in cited],
                    "stated": [ident(t) for t in p.stated],
                    **({"denied": [ident(t) for t in p.denied]} if p.denied else {}),
                    "seed": seed,
                    "model": reply.model or llm,
                }
            )
    if not made.rows:
        why = ", ".join(f"{n} {k}" for k, n in sorted(made.discarded.items())) or "no entry has knowledge to state"
        raise PairsInputError(f"{llm} gave no usable sentence for {dataset}'s {len(plans)} requests ({why}): nothing written")
    return made


def write_pairs(path: str | Path, made: Made, header: dict[str, Any]) -> None:
    """The header line, then every row; written whole or not at all."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(dumps(header, ensure_ascii=False) + "\n")
        for row in made.rows:
            f.write(dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def summary(made: Made) -> dict[str, Any]:
    kinds = Counter(r["kind"] for r in made.rows)
    return {
        "pairs": len(made.rows),
        "entries": made.entries,
        "kinds": {k: kinds.get(k, 0) for k in (*KINDS, *([NEGATED] if kinds[NEGATED] else []))},
        "labels": dict(Counter(r["label"] for r in made.rows)),
        "discarded_sentences": dict(made.discarded),
        "kinds_an_entry_could_not_make": dict(made.skipped),
    }
