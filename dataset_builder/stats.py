"""Dataset statistics as in the paper's §2.3 (entries, mean minimum-set size, countries,
cities, occupations, era range, relation distribution), printed beside the paper's own figures
for BioKaLMA (`PAPER`), so a rebuilt dataset can be compared with the one the paper measured;
and the same per class of entity (`per_class`: an entry of a dataset of any class names its
entities' classes in its `meta`; one without is about people)."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from kalma.classes import HUMAN, entity_class
from kalma.schema import DatasetEntry

COUNTRY = {"P27", "country of citizenship"}
CITY = {"P19", "P20", "place of birth", "place of death"}
OCCUPATION = {"P106", "occupation"}
BIRTH = {"P569", "date of birth"}


def _year(value: str) -> int | None:
    m = re.match(r"^(-?\d{1,4})-\d{2}-\d{2}", value)
    return int(m.group(1)) if m else None


def dataset_stats(entries: Sequence[DatasetEntry]) -> dict[str, Any]:
    people: dict[str, list] = {}
    for e in entries:
        persons = {q for q, c in _classes(e).items() if entity_class(c).person}  # the §2.3 figures are of people
        for g in e.knowledge_pool.entities:
            if g.qid in persons:
                people.setdefault(g.qid, g.triples)

    def values(kinds: set[str]) -> set[str]:
        return {t.value_label for ts in people.values() for t in ts if t.relation in kinds or t.relation_label in kinds}

    years = sorted(y for ts in people.values() for t in ts if (t.relation in BIRTH or t.relation_label in BIRTH) and (y := _year(t.value_label)) is not None)
    sizes = [len(e.minimum_set) for e in entries if e.minimum_set is not None]
    return {
        "entries": len(entries),
        "people": len(people),
        "mean_minimum_set_size": statistics.fmean(sizes) if sizes else None,
        "entries_without_minimum_set": sum(e.minimum_set is None for e in entries),
        "countries": len(values(COUNTRY)),
        "cities": len(values(CITY)),
        "occupations": len(values(OCCUPATION)),
        "era": {"earliest_birth_year": years[0], "latest_birth_year": years[-1]} if years else None,
        "seed_relations": dict(Counter(e.seed.relation for e in entries if e.seed).most_common()),
        "minimum_set_relations": dict(Counter(t.relation_label for e in entries for t in e.minimum_set or []).most_common(15)),
        "classes": per_class(entries),
    }


def _classes(e: DatasetEntry) -> dict[str, str]:
    """{entity: its class}: as the entry's meta says, else people."""
    return dict(zip(e.people, e.meta.get("classes") or [HUMAN.qid] * len(e.people)))


def per_class(entries: Sequence[DatasetEntry]) -> dict[str, dict[str, Any]]:
    """Per class of entity: its label, the entries and entities of it, the mean minimum set's
    facts about its entities, and the relations most asked of them."""
    out: dict[str, dict[str, Any]] = {}
    for e in entries:
        named = _classes(e)
        kinds = {t.value: t.value_label for g in e.knowledge_pool.entities for t in g.triples if t.relation == "P31"}
        for qid, cls in named.items():
            empty: dict[str, Any] = {"entries": set(), "entities": set(), "facts": [], "relations": Counter()}
            row = out.setdefault(cls, {"label": entity_class(cls, kinds.get(cls, "")).label, **empty})
            row["entries"].add(e.id)
            row["entities"].add(qid)
            mine = [t for t in e.minimum_set or [] if t.subject == qid]
            row["facts"].append(len(mine))
            row["relations"].update(t.relation_label for t in mine)
    return {
        c: {
            "label": r["label"],
            "entries": len(r["entries"]),
            "entities": len(r["entities"]),
            "mean_minimum_set_facts": statistics.fmean(r["facts"]),
            "minimum_set_relations": dict(r["relations"].most_common(5)),
        }
        for c, r in sorted(out.items(), key=lambda x: -len(x[1]["entries"]))
    }


# The KaLMA paper, §2.3 "Dataset Analysis", for BioKaLMA.
PAPER: dict[str, Any] = {
    "entries": 1085,
    "mean_minimum_set_size": 6.8,
    "countries": 196,
    "cities": 949,
    "occupations": 279,
    "era": {"earliest_birth_year": -1950, "latest_birth_year": 2001},
}
ROWS = (
    ("entries", "entries"),
    ("people", "people"),
    ("mean_minimum_set_size", "knowledge per minimum set (mean)"),
    ("entries_without_minimum_set", "entries without a minimum set"),
    ("countries", "countries (of citizenship)"),
    ("cities", "cities (of birth or death)"),
    ("occupations", "occupations"),
    ("era", "era (birth years)"),
)


def _show(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if key == "era":
        return " to ".join(f"{-y} BC" if y < 0 else f"{y} AD" for y in (value["earliest_birth_year"], value["latest_birth_year"]))
    return f"{value:.1f}" if isinstance(value, float) else f"{value:,}"


OF_PEOPLE = {"countries", "cities", "occupations", "era"}  # the §2.3 rows that describe people only


def stats_table(stats: dict[str, Any], name: str) -> str:
    """The statistics beside the paper's, as a Markdown table; a dataset without people shows no
    row of people's figures (a column of zeros would read as a failed build)."""
    people = stats.get("people", 0) > 0
    lines = [f"| | {name} | BioKaLMA (paper §2.3) |", "|---|---|---|"]
    lines += [f"| {label} | {_show(key, stats.get(key))} | {_show(key, PAPER.get(key))} |" for key, label in ROWS if people or key not in OF_PEOPLE]
    if not people:
        lines += ["", "No entry is about a person: the paper's figures of people (countries, cities, occupations, era) do not apply."]
    return "\n".join(lines)


def class_table(classes: dict[str, dict[str, Any]]) -> str:
    """The statistics per class, as a Markdown table."""
    lines = ["| class | entries | entities | minimum-set facts per entity (mean) | most asked relations |", "|---|---|---|---|---|"]
    for qid, r in classes.items():
        top = ", ".join(f"{k} {v}" for k, v in r["minimum_set_relations"].items())
        lines.append(f"| {r['label']} ({qid}) | {r['entries']:,} | {r['entities']:,} | {r['mean_minimum_set_facts']:.1f} | {top or '–'} |")
    return "\n".join(lines)
