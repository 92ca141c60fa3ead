"""Knowledge pools (paper §2.2) and what a minimum knowledge set may hold (the spec's rules).

- A pool is the one-hop subgraphs of both people, with every value of multi-valued
  properties, less the values that have no label: `Q987654099` is not knowledge a question can
  be about (a source returns the bare id when Wikidata has no English label). How many were
  left out is counted.
- One fact, one triple: `Artemisia father Orazio` and `Orazio child Artemisia` state one fact,
  as do the two directions of a spouse or sibling link. `Facts` keeps one of them, by the
  inverse-property statements the source makes (Wikidata's P1696) and, for sources without
  them and for the symmetric properties Wikidata marks by a constraint instead, by the table
  `kalma.properties.INVERSE_PROPERTIES`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kalma.kg.base import KnowledgeSource
from kalma.properties import INVERSE_PROPERTIES, Vocabulary
from kalma.schema import QID_RE, EntityGraph, KnowledgeGraph, Triple

Key = tuple[str, str, str]


def has_label(t: Triple) -> bool:
    """False for an item value shown by its bare id (a QID or an IRI): it has no label."""
    if t.value_type != "item":
        return True
    return not (QID_RE.match(t.value_label) or (t.value_label == t.value and t.value.startswith(("http://", "https://"))))


def make_pool(graphs: Sequence[EntityGraph]) -> tuple[KnowledgeGraph, int]:
    """The pool of the given people's graphs, and how many unlabelled values were left out."""
    kept, dropped = [], 0
    for g in graphs:
        triples = [t for t in g.triples if has_label(t)]
        dropped += len(g.triples) - len(triples)
        kept.append(g if len(triples) == len(g.triples) else g.model_copy(update={"triples": triples}))
    return KnowledgeGraph(entities=kept), dropped


def inverse_table(source: KnowledgeSource, pids: Iterable[str]) -> dict[str, frozenset[str]]:
    """{PID: the properties stating its facts from the other end}: the source's own statements,
    then the built-in table, each read in both directions."""
    table: dict[str, set[str]] = {}
    stated = source.inverse_properties(sorted(set(pids)))
    for p, qs in list(stated.items()) + list(INVERSE_PROPERTIES.items()):
        for q in qs:
            table.setdefault(p, set()).add(q)
            table.setdefault(q, set()).add(p)
    return {p: frozenset(qs) for p, qs in table.items()}


class Facts:
    """A set of facts where a triple and its inverse are one fact.

    >>> from kalma.schema import Triple
    >>> t = lambda s, p, label, v: Triple(subject=s, relation=p, relation_label=label, value=v, value_label=v)
    >>> facts = Facts({"P22": frozenset({"P40"}), "P40": frozenset({"P22"})}, Vocabulary.builtin())
    >>> facts.add(t("Q1", "P22", "father", "Q2")), facts.add(t("Q2", "P40", "child", "Q1")), len(facts)
    (True, False, 1)
    """

    def __init__(self, inverses: Mapping[str, frozenset[str]], vocab: Vocabulary):
        self.inverses, self.vocab = inverses, vocab
        self._seen: set[Key] = set()
        self.triples: list[Triple] = []

    def forms(self, t: Triple) -> set[Key]:
        """Every way the fact of `t` can be written: itself, and its inverses when the value is an entity."""
        own = self.vocab.triple_key(t)
        if not (t.value_type == "item" and QID_RE.match(t.value) and t.relation in self.inverses):
            return {own}
        return {own} | {(t.value, q, t.subject) for q in self.inverses[t.relation]} | {(t.subject, t.relation, t.value)}

    def __contains__(self, t: Triple) -> bool:
        return bool(self.forms(t) & self._seen)

    def add(self, t: Triple) -> bool:
        """Keep `t` unless its fact is already kept; True when it was added."""
        if t in self:
            return False
        self._seen |= self.forms(t)
        self.triples.append(t)
        return True

    def __len__(self) -> int:
        return len(self.triples)
