"""Property identity: which property a citation's relation names, whatever it was called.

A citation names a property, not a string. `[Q367360, date_of_birth: 1563-07-19]` (the authors'
release key), `[Q367360, date of birth: 1563-07-19]` (Wikidata's label) and
`[Q367360, P569: 1563-07-19]` cite the same fact. A `Vocabulary` maps every name it knows
(labels, aliases, release keys, the PID itself) to one identity: the PID where it is known,
else `label:<normalised label>`. Names are matched case-insensitively, with `_` read as a
space; values are never loosened (they stay exact after NFC and whitespace normalisation).

The entity's own name is a fact too: `[Q212657, name: Artemisia Gentileschi]` cites the
entity's label (`rdfs:label`), and is judged like any other triple.

A vocabulary is built from, in rising priority: the built-in table below, then the knowledge
of an entry (its pool, minimum set, the KG given, the absent set): each triple's PID and
label, and each graph's `property_aliases` (Wikidata's `skos:altLabel`, fetched by the KG
sources). It also records the values the entry knows per (subject, property), which lets the
citation parser keep `Love, Death: Robots` whole when the KG holds that value.

>>> v = Vocabulary.builtin()
>>> v.identity("date_of_birth"), v.identity("Place of Birth"), v.identity("notable works"), v.identity("P569")
('P569', 'P19', 'P800', 'P569')
>>> v.identity("favourite colour")
'label:favourite colour'
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

from .schema import EntityGraph, KnowledgeGraph, Triple, normalize_text

NAME_RELATION = "name"
NAME_IDENTITY = "rdfs:label"
_PID = re.compile(r"^[Pp](\d+)$")

# PID -> (Wikidata's English label, other names a model may have been shown for it). The other
# names are the KaLMA release's keys and labels (`notable works`, `alma mater`,
# `date_of_birth`), older Wikidata labels (`religion`) and a few unambiguous aliases.
PROPERTIES: dict[str, tuple[str, ...]] = {
    "P19": ("place of birth", "birthplace", "birth place", "born in"),
    "P20": ("place of death", "deathplace", "death place", "died in"),
    "P21": ("sex or gender", "sex", "gender"),
    "P22": ("father",),
    "P25": ("mother",),
    "P26": ("spouse", "husband", "wife"),
    "P27": ("country of citizenship", "citizenship", "nationality"),
    "P31": ("instance of",),
    "P39": ("position held",),
    "P40": ("child",),
    "P54": ("member of sports team",),
    "P69": ("educated at", "alma mater"),
    "P101": ("field of work",),
    "P102": ("member of political party",),
    "P103": ("native language",),
    "P106": ("occupation", "profession"),
    "P108": ("employer",),
    "P119": ("place of burial", "burial place"),
    "P135": ("movement",),
    "P136": ("genre",),
    "P140": ("religion or worldview", "religion"),
    "P166": ("award received", "award", "awards"),
    "P172": ("ethnic group", "ethnicity"),
    "P184": ("doctoral advisor",),
    "P185": ("doctoral student",),
    "P413": ("position played on team / speciality", "position played on team"),
    "P463": ("member of",),
    "P509": ("cause of death",),
    "P551": ("residence",),
    "P569": ("date of birth", "date_of_birth", "birth date"),
    "P570": ("date of death", "date_of_death", "death date"),
    "P641": ("sport",),
    "P734": ("family name", "surname"),
    "P735": ("given name", "first name"),
    "P800": ("notable work", "notable works"),
    "P802": ("student",),
    "P910": ("topic's main category",),
    "P937": ("work location",),
    "P1038": ("relative",),
    "P1050": ("medical condition",),
    "P1066": ("student of",),
    "P1196": ("manner of death",),
    "P1343": ("described by source",),
    "P1411": ("nominated for",),
    "P1412": ("languages spoken, written or signed", "languages spoken"),
    "P3373": ("sibling",),
}


# Properties that state one fact from either end, for sources that give no inverse-property
# statements (Wikidata's P1696) of their own: `Artemisia father Orazio` and `Orazio child
# Artemisia` are one fact. Spouse and sibling are symmetric: Wikidata marks them by a
# constraint, not by P1696, so they are only here.
INVERSE_PROPERTIES: dict[str, tuple[str, ...]] = {
    "P22": ("P40",),  # father -> child
    "P25": ("P40",),  # mother -> child
    "P40": ("P22", "P25"),  # child -> father, mother
    "P26": ("P26",),  # spouse
    "P3373": ("P3373",),  # sibling
    "P1066": ("P802",),  # student of -> student
    "P802": ("P1066",),
    "P184": ("P185",),  # doctoral advisor -> doctoral student
    "P185": ("P184",),
}


@functools.lru_cache(maxsize=65536)  # labels repeat: a long answer names a few relations many times
def relation_norm(name: str) -> str:
    """How relation names are compared: NFC, case-folded, `_` as a space, spaces collapsed.

    >>> relation_norm("  Date_of_Birth ")
    'date of birth'
    """
    text = unicodedata.normalize("NFC", name).replace("_", " ")
    return " ".join(text.casefold().split())


class Vocabulary:
    """Relation names -> property identities, plus the values known per (subject, property)."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._rank: dict[str, int] = {}
        self._values: dict[tuple[str, str], set[str]] = {}
        self._any_values: dict[str, set[str]] = {}
        self.max_label_len = 0
        self.max_value_len = 0
        self._comma_index: dict[tuple[str, str], list[str]] | None = None

    # ------------------------------------------------------------ building

    def _name(self, name: str, identity: str, rank: int) -> None:
        key = relation_norm(name)
        if key and rank >= self._rank.get(key, -1):
            self._ids[key], self._rank[key] = identity, rank
            self.max_label_len = max(self.max_label_len, len(key))

    def add_property(self, pid: str, names: Iterable[str], *, rank: int = 1) -> None:
        """Map `names` to `pid`. Ranks: built-in aliases 0 < the KG's aliases 1 < built-in
        labels 2 < the KG's labels 3: a label (unique on Wikidata) always beats an alias, and
        the entry's own knowledge beats the table."""
        for name in names:
            self._name(name, pid, rank)

    def _value(self, subject: str, identity: str, value: str) -> None:
        v = normalize_text(value)
        self._values.setdefault((subject, identity), set()).add(v)
        self._any_values.setdefault(identity, set()).add(v)
        self.max_value_len = max(self.max_value_len, len(v))
        self._comma_index = None

    def add_triples(self, triples: Iterable[Triple]) -> None:
        for t in triples:
            if t.relation:
                self._name(t.relation_label, t.relation, rank=3)
            elif not self.knows_label(t.relation_label):  # an imported graph's relation with no PID is known all the same
                self._name(t.relation_label, self.identity(t.relation_label), rank=3)
            self._value(t.subject, self.triple_identity(t), t.value_label)

    def add_graph(self, graph: EntityGraph) -> None:
        for pid, names in graph.property_aliases.items():
            self.add_property(pid, names, rank=1)
        self.add_triples(graph.triples)
        self._value(graph.qid, NAME_IDENTITY, graph.label)

    def copy(self) -> Vocabulary:
        out = Vocabulary()
        out._ids, out._rank = dict(self._ids), dict(self._rank)
        out._values = {k: set(v) for k, v in self._values.items()}
        out._any_values = {k: set(v) for k, v in self._any_values.items()}
        out.max_label_len, out.max_value_len = self.max_label_len, self.max_value_len
        return out

    @classmethod
    @functools.cache
    def _builtin(cls) -> Vocabulary:
        v = cls()
        for pid, (label, *others) in PROPERTIES.items():
            v.add_property(pid, others, rank=0)
            v.add_property(pid, [label], rank=2)
        v._name(NAME_RELATION, NAME_IDENTITY, rank=9)
        return v

    @classmethod
    def builtin(cls) -> Vocabulary:
        """The built-in table alone (a fresh copy: callers may extend it)."""
        return cls._builtin().copy()

    @classmethod
    def default(cls) -> Vocabulary:
        """The shared built-in table, for reading only."""
        return cls._builtin()

    @classmethod
    def of(cls, *sources: KnowledgeGraph | EntityGraph | Iterable[Triple] | None) -> Vocabulary:
        """The built-in table extended by every graph or triple list given (None is skipped)."""
        v = cls.builtin()
        for src in sources:
            if src is None:
                continue
            if isinstance(src, KnowledgeGraph):
                for g in src.entities:
                    v.add_graph(g)
            elif isinstance(src, EntityGraph):
                v.add_graph(src)
            else:
                v.add_triples(src)
        return v

    @classmethod
    def from_labels(cls, labels: Iterable[str]) -> Vocabulary:
        """The built-in table plus bare relation labels (no PIDs, no values)."""
        v = cls.builtin()
        for label in labels:
            if relation_norm(label) not in v._ids:
                v._name(label, "label:" + relation_norm(label), rank=3)
        return v

    # ------------------------------------------------------------ questions

    def identity(self, relation: str) -> str:
        key = relation_norm(relation)
        if key in self._ids:
            return self._ids[key]
        m = _PID.match(key)
        return f"P{m.group(1)}" if m else "label:" + key

    def knows_label(self, relation: str) -> bool:
        return relation_norm(relation) in self._ids

    def triple_identity(self, t: Triple) -> str:
        return t.relation or self.identity(t.relation_label)

    def triple_key(self, t: Triple) -> tuple[str, str, str]:
        return (t.subject, self.triple_identity(t), normalize_text(t.value_label))

    def citation_key(self, qid: str, relation: str, value: str) -> tuple[str, str, str]:
        return (qid, self.identity(relation), normalize_text(value))

    def comma_values(self, relation: str, head: str) -> list[str]:
        """The known values of `relation` (of any subject) that hold a comma and whose text
        before the first comma is `head`: what a citation's value cut at a comma may be the
        start of (`Love, Death: Robots`). Indexed once per vocabulary, in its size."""
        if self._comma_index is None:
            index: dict[tuple[str, str], list[str]] = {}
            for identity, values in self._any_values.items():
                for v in values:
                    if "," in v:
                        index.setdefault((identity, v.partition(",")[0].strip()), []).append(v)
            self._comma_index = index
        return self._comma_index.get((self.identity(relation), normalize_text(head)), [])

    def is_value(self, qid: str, relation: str, value: str) -> bool:
        """Whether the entry knows `value` for this relation: of this subject, or of any."""
        identity, v = self.identity(relation), normalize_text(value)
        return v in self._values.get((qid, identity), ()) or v in self._any_values.get(identity, ())

    def kg_keys(self, kg: KnowledgeGraph) -> set[tuple[str, str, str]]:
        """Every citable fact of `kg`: its triples and each entity's name."""
        keys = {self.triple_key(t) for t in kg.triples()}
        keys |= {(e.qid, NAME_IDENTITY, normalize_text(e.label)) for e in kg.entities}
        return keys
