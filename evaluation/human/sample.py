"""Draw the units people will judge: exactly the units the automatic metric scores.

Alignment pairs come from answers files read as `kalma evaluate` reads them (same parser, same
vocabulary, same premise and hypothesis), `n` per model, seeded, so that the human alignment of
a model can be set beside its automatic alignment on the very same pairs (Table 6). Dataset
units are an entry's general and specific questions with the minimum set (Table 2).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kalma.answers_file import load_answers
from kalma.jsonl import read_jsonl
from kalma.properties import PROPERTIES, Vocabulary
from kalma.resume import file_digest
from kalma.schema import DatasetEntry, KnowledgeGraph, Setting, Triple
from kalma.seeds import rng
from kalma.verbalize import hypothesis

from ..base import EvalItem
from .units import HumanError, Sample, Unit, sample_digest, unit_id


@dataclass(frozen=True)
class Pair:
    """One (sentence, citation) pair of one answer, as the alignment metric scores it."""

    model: str
    answer_id: str
    entry_id: str
    sentence: int
    citation: int
    premise: str
    hypothesis: str
    knowledge: str  # the cited triple as annotators read it


def _name(kg: KnowledgeGraph, qid: str, written: str) -> str:
    for e in kg.entities:
        if e.qid == qid and e.label:
            return e.label
    return written or qid


def relation_label(vocab: Vocabulary, kg: KnowledgeGraph, qid: str, relation: str) -> str:
    """How annotators read a cited relation: its label in the KG (`P106` -> `occupation`), else
    the built-in table's, else as written."""
    identity = vocab.identity(relation)
    for t in kg.triples():
        if t.subject == qid and vocab.triple_identity(t) == identity:
            return t.relation_label
    known = PROPERTIES.get(identity)
    return known[0] if known else relation


def alignment_pairs(answers: str | Path, entries: dict[str, DatasetEntry], verbalized: bool = False, model: str | None = None) -> Iterator[Pair]:
    """Every pair the alignment metric would judge in `answers`, in file order; `model` names the
    model of every answer (`--answers NAME=FILE`)."""
    for a in load_answers(answers, entries, model).answers:
        item = EvalItem.build(a, entries.get(a.entry_id))
        for i, s in enumerate(item.parsed.sentences):
            for j, c in enumerate(s.citations):
                relation = relation_label(item.vocabulary, item.entry.knowledge_pool if item.entry else item.kg, c.qid, c.relation)
                knowledge = f"{_name(item.kg, c.qid, c.entity_name)} ({c.qid}), {relation}: {c.value}"
                yield Pair(model or a.model, a.answer_id(), a.entry_id, i, j, s.clean, hypothesis(c, verbalized), knowledge)


def load_entries(dataset: str | Path) -> dict[str, DatasetEntry]:
    return {e.id: e for e in read_jsonl(dataset, DatasetEntry, kind="dataset")}


def sample_alignment(
    dataset: str | Path, answers: Sequence[str | Path | tuple[str | None, str | Path]], n: int, seed: int = 0, verbalized: bool = False
) -> Sample:
    """`n` pairs per model (all of them where a model has fewer), drawn with `seed`; the units
    are then shuffled together, so annotators meet the models interleaved. An answers file given
    as (model, path) has its answers attributed to that model."""
    entries = load_entries(dataset)
    pools: dict[str, list[Pair]] = {}
    sources = []
    uncited: list[str] = []  # files (by model) whose answers cite nothing: said, never dropped unseen
    for given in answers:
        model, path = given if isinstance(given, tuple) else (None, given)
        found = list(alignment_pairs(path, entries, verbalized, model))
        named = {"model": model} if model else {}
        sources.append({"path": _absolute(path), "digest": file_digest(path), "pairs": len(found), "models": sorted({p.model for p in found}), **named})
        for p in found:
            pools.setdefault(p.model, []).append(p)
        if not found:
            uncited.append(model or Path(path).name)
    if not pools:
        raise HumanError(f"{', '.join(map(str, answers))}: no answer cites anything: there is no (sentence, citation) pair to sample")
    units: list[Unit] = []
    per_model: dict[str, dict[str, Any]] = {}
    for model in sorted(pools):
        # in answer order, not file order: `kalma answer` writes answers as they arrive, and the
        # same answers must give the same sample
        pool = sorted(pools[model], key=lambda p: (p.answer_id, p.sentence, p.citation))
        drawn = rng(seed, "human-alignment", model).sample(pool, min(n, len(pool)))
        per_model[model] = {"pairs": len(pool), "sampled": len(drawn)}
        units += [
            Unit(
                unit_id=unit_id("alignment", p.model, p.answer_id, p.sentence, p.citation),
                task="alignment",
                shown={"sentence": p.premise, "knowledge": p.knowledge},
                model=p.model,
                answer_id=p.answer_id,
                entry_id=p.entry_id,
                premise=p.premise,
                hypothesis=p.hypothesis,
            )
            for p in drawn
        ]
    for model in uncited:
        per_model.setdefault(model, {"pairs": 0, "sampled": 0, "why": "no citations"})
    units = _dedupe(units)
    rng(seed, "human-order").shuffle(units)
    info = {
        "task": "alignment",
        "seed": seed,
        "n_per_model": n,
        "verbalized": verbalized,
        "models": per_model,
        "dataset": {"path": _absolute(dataset), "digest": file_digest(dataset)},
        "answers": sources,
        "digest": sample_digest(units),
    }
    return Sample(units, info)


def sample_dataset(dataset: str | Path, n: int, seed: int = 0, settings: Sequence[Setting] = ("general", "specific")) -> Sample:
    """`n` entries drawn with `seed`; one unit per entry and setting, the minimum set numbered."""
    entries = sorted(load_entries(dataset).values(), key=lambda e: e.id)
    drawn = rng(seed, "human-dataset").sample(entries, min(n, len(entries)))
    units = [
        Unit(
            unit_id=unit_id("dataset", e.id, s),
            task="dataset",
            shown={
                "question": e.question(s),
                "knowledge": [f"{t.subject_label or t.subject}, {t.relation_label}: {t.value_label}" for t in e.minimum_set or []],
            },
            entry_id=e.id,
            setting=s,
        )
        for e in drawn
        for s in settings
    ]
    rng(seed, "human-order").shuffle(units)
    info = {
        "task": "dataset",
        "seed": seed,
        "n": len(drawn),
        "entries": len(entries),
        "settings": list(settings),
        "dataset": {"path": _absolute(dataset), "digest": file_digest(dataset)},
        "without_minimum_set": sum(e.minimum_set is None for e in drawn),
        "digest": sample_digest(units),
    }
    return Sample(units, info)


def _absolute(path: str | Path) -> str:
    """A file a sample reads again when scored, recorded so that it is found from any folder."""
    return str(Path(path).resolve())


def located(sample: Sample, recorded: str) -> Path:
    """A file the sample recorded: as recorded when it is there; a relative path (samples before
    paths were recorded whole) is read beside the sample file first, then from here."""
    path = Path(recorded)
    if not path.is_absolute() and sample.path is not None and (sample.path.parent / path).is_file():
        return sample.path.parent / path
    return path


def _line(t: Triple) -> str:
    return f"{t.subject_label or t.subject}, {t.relation_label}: {t.value_label}"


def _dedupe(units: list[Unit]) -> list[Unit]:
    """One unit per id: an answers file given twice must not put a pair before annotators twice."""
    return list({u.unit_id: u for u in units}.values())
