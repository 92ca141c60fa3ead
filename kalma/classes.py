"""Classes of Wikidata entities: what the builder and the baseline assume of an entity is a
property of its class, never a branch in their code.

A class says how an entity of it is named in a question (`noun`), whether the complete-name rule
and "Who" questions apply (`person`: people only), which relations say nothing specific about one
(`trivial_pids`, `trivial_labels`), the properties that link two of them (`properties`, what `kalma records
from-kg` draws by default) and the spaCy NER types its names are tagged with (`ner_types`). Its
noun in other languages and the sentences that state its facts in each language (by property:
"X is a city in Y") are the language's text (`kalma.languages.phrasing`, keyed by the class).

The registry (`CLASSES`) holds the classes this suite knows; any other class gets a generic one
(`entity_class`) whose trivial relations come from the KG itself (`frequent_relations`): what
every entity of the class states, with the same value, says nothing about one of them.

>>> entity_class("Q515").noun, entity_class("Q5").person, entity_class("Q12345", "lighthouse").noun
('city', True, 'lighthouse')
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .languages.phrasing import phrasing
from .schema import Triple

CLASS_ID = re.compile(r"Q[0-9]+")
PROPERTY_ID = re.compile(r"P[0-9]+")

# Relations that say nothing specific about any entity: its class, its pages and pictures.
GENERIC_TRIVIAL_PIDS = frozenset({"P31", "P279", "P910", "P1343", "P18", "P373", "P154", "P41", "P94", "P242", "P1448"})
GENERIC_TRIVIAL_LABELS = frozenset(
    {"instance of", "subclass of", "topic's main category", "described by source", "wikimedia category", "image", "commons category", "logo image"}
)


@dataclass(frozen=True)
class EntityClass:
    qid: str
    label: str
    noun: str  # how a question names an entity of it: "the city Lyon"
    person: bool = False  # the complete-name rule and "Who" questions apply
    trivial_pids: frozenset[str] = GENERIC_TRIVIAL_PIDS
    trivial_labels: frozenset[str] = GENERIC_TRIVIAL_LABELS
    properties: tuple[str, ...] = ()
    ner_types: tuple[str, ...] = ()

    def noun_in(self, language: str = "en") -> str:
        """How a question names an entity of it in `language` (`kalma.languages.phrasing`): the
        registry's noun there, else, for a class the registry does not name, its label."""
        return self.noun if language == "en" else phrasing(language).noun(self.qid, self.label).word

    def is_trivial(self, t: Triple) -> bool:
        return self.trivial_relation(t.relation, t.relation_label)

    def trivial_relation(self, pid: str, label: str) -> bool:
        """Whether a relation, by its id or its label, is one this class's entities all state alike."""
        return pid in self.trivial_pids or label.strip().lower() in self.trivial_labels

    def with_trivial(self, pids: Iterable[str]) -> EntityClass:
        """This class with `pids` trivial too (those the KG shows to be, `frequent_relations`)."""
        return replace(self, trivial_pids=self.trivial_pids | frozenset(pids))


HUMAN = EntityClass(
    "Q5",
    "human",
    "person",
    person=True,
    # the paper's list, plus identifiers of pages: exactly what the builder used before classes
    trivial_pids=frozenset({"P21", "P735", "P734", "P31", "P910", "P1343"}),
    trivial_labels=frozenset(
        {"sex or gender", "given name", "family name", "instance of", "topic's main category", "described by source", "wikimedia category", "surname"}
    ),
    properties=("P22", "P25", "P26", "P40", "P3373", "P1066", "P802", "P184", "P185", "P1038"),
    ner_types=("PERSON",),
)
CLASSES: dict[str, EntityClass] = {
    c.qid: c
    for c in (
        HUMAN,
        EntityClass(
            "Q43229",
            "organization",
            "organization",
            trivial_pids=GENERIC_TRIVIAL_PIDS | {"P856", "P2002", "P4264", "P1454"},  # website, accounts, legal form
            properties=("P159", "P112", "P452", "P127", "P749", "P355"),
            ner_types=("ORG",),
        ),
        EntityClass("Q4830453", "business", "company", ner_types=("ORG",)),
        EntityClass(
            "Q515",
            "city",
            "city",
            trivial_pids=GENERIC_TRIVIAL_PIDS | {"P856", "P625", "P1082", "P2046", "P421"},  # website, coordinates, population, area, time zone
            properties=("P17", "P6", "P190", "P131", "P36"),
            ner_types=("GPE",),
        ),
        EntityClass("Q6256", "country", "country", properties=("P36", "P47", "P37"), ner_types=("GPE",)),
        EntityClass("Q3624078", "sovereign state", "country", ner_types=("GPE",)),
        EntityClass("Q1549591", "big city", "city", ner_types=("GPE",)),
        EntityClass("Q82794", "geographic region", "region", ner_types=("LOC",)),
        EntityClass("Q2221906", "geographic location", "place", ner_types=("LOC",)),
        EntityClass("Q8502", "mountain", "mountain", ner_types=("LOC",)),
        EntityClass("Q41176", "building", "building", ner_types=("FAC",)),
        EntityClass("Q3918", "university", "university", ner_types=("ORG",)),
        EntityClass("Q476028", "association football club", "football club", ner_types=("ORG",)),
        EntityClass(
            "Q7725634",
            "literary work",
            "work",
            properties=("P50", "P136", "P123", "P407"),
            ner_types=("WORK_OF_ART",),
        ),
        EntityClass("Q11424", "film", "film", properties=("P57", "P161", "P136"), ner_types=("WORK_OF_ART",)),
        EntityClass("Q2424752", "product", "product", properties=("P176", "P178"), ner_types=("PRODUCT",)),
        EntityClass("Q12140", "medication", "drug", properties=("P2175", "P769"), ner_types=("PRODUCT",)),
        EntityClass("Q8054", "protein", "protein", properties=("P702", "P680", "P682")),
    )
}
ANY = EntityClass("", "entity", "entity")  # an entity whose class is not known


def entity_class(qid: str, label: str = "") -> EntityClass:
    """The registry's class `qid`, else a generic one named by its label."""
    if qid in CLASSES:
        return CLASSES[qid]
    return replace(ANY, qid=qid, label=label or qid, noun=label or "entity") if qid else ANY


def ner_classes() -> dict[str, tuple[str, ...]]:
    """{spaCy NER type: the classes whose names it tags}: the baseline's retrieval filter."""
    out: dict[str, list[str]] = {}
    for c in CLASSES.values():
        for t in c.ner_types:
            out.setdefault(t, []).append(c.qid)
    return {t: tuple(qs) for t, qs in out.items()}


def frequent_relations(graphs: Iterable[Iterable[Triple]], share: float = 0.5) -> set[str]:
    """The PIDs that at least `share` of the graphs state, with the same value in
    more than `share` of those: what the class's entities all say alike (a generic class's trivial relations).

    >>> t = lambda s, p, v: Triple(subject=s, relation=p, relation_label=p, value=v, value_label=v)
    >>> sorted(frequent_relations([[t("Q1", "P17", "Q9"), t("Q1", "P6", "Q7")], [t("Q2", "P17", "Q9"), t("Q2", "P6", "Q8")]]))
    ['P17']
    """
    having: Counter[str] = Counter()
    values: dict[str, Counter[str]] = {}
    n = 0
    for triples in graphs:
        n += 1
        seen = {(t.relation, t.value) for t in triples if t.relation}
        having.update({p for p, _ in seen})
        for p, v in seen:
            values.setdefault(p, Counter())[v] += 1
    return {p for p, k in having.items() if k >= share * n and values[p].most_common(1)[0][1] > share * k}
