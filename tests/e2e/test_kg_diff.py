"""Two dumps, what changed: `perf.dumpgen --evolve` writes a second dump from a first with a list
of its changes, and a plain rdflib comparison of the two dumps (written here, apart from both)
must find exactly what the list says."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kalma.kg import ntriples as nt
from perf.dumpgen import LANGUAGES, write_dump
from perf.evolve import SAME_AS, evolve, read_changes

LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
STORE_LANGUAGES = ("en", "fr")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A dump of people, cities and organizations, and a second evolved from it (8 % of its facts)."""
    work = tmp_path_factory.mktemp("kg-diff")
    first, second = work / "wikidata-20260101-truthy.nt", work / "wikidata-20260201-truthy.nt"
    write_dump(first, 80, "nt", seed=2, with_release=False, organizations=20, cities=20)
    evolve(first, second, 0.08, seed=5)
    return first, second


@pytest.fixture(scope="module")
def stores(pair: tuple[Path, Path]) -> tuple[Path, Path]:
    """Both dumps imported (English and French), as `kalma kg import` does."""
    from kalma.kg.store import import_dump

    out = []
    for dump in pair:
        store = dump.with_suffix(".store")
        import_dump(dump, store, languages=STORE_LANGUAGES, threads=2, progress=False)
        out.append(store)
    return out[0], out[1]


def _value(term: Any) -> str:
    """An rdflib term as a store keeps it: an entity's id, an IRI, a literal's lexical form."""
    from rdflib import URIRef

    return nt.short(str(term)) if isinstance(term, URIRef) else str(term)


def rdflib_changes(first: Path, second: Path, languages: tuple[str, ...] = ("en",)) -> list[dict[str, Any]]:
    """What changed from `first` to `second`, by rdflib alone: per subject and property the values
    removed and added (both: `changed`), items merged (a redirect in `second` whose old id had
    claims) or deleted (nothing left and no redirect), and labels changed."""
    import logging

    import rdflib
    from rdflib import Graph, Literal

    # lexical forms as written (rdflib would rewrite `…Z` as `+00:00`), and BCE dates, which
    # Python's datetime cannot hold, read without a warning each
    normalize, rdflib.NORMALIZE_LITERALS = rdflib.NORMALIZE_LITERALS, False
    logging.getLogger("rdflib.term").setLevel(logging.ERROR)
    facts: list[dict[tuple[str, str], set[str]]] = []
    labels: list[dict[tuple[str, str], set[str]]] = []
    named: list[set[str]] = []
    redirects: dict[str, str] = {}
    for path in (first, second):
        g = Graph()
        g.parse(path, format="nt")
        f: dict[tuple[str, str], set[str]] = {}
        la: dict[tuple[str, str], set[str]] = {}
        for s, p, o in g:
            subject = nt.short(str(s))
            if str(p).startswith(nt.DIRECT) and nt.is_entity(subject):
                f.setdefault((subject, str(p)[len(nt.DIRECT) :]), set()).add(_value(o))
            elif str(p) == LABEL and isinstance(o, Literal) and o.language in languages:
                la.setdefault((subject, o.language), set()).add(str(o))
            elif str(p) == SAME_AS and path == second:
                redirects[subject] = nt.short(str(o))
        facts.append(f)
        labels.append(la)
        named.append({s for s, _ in f} | {s for s, _ in la})
    rdflib.NORMALIZE_LITERALS = normalize
    out: list[dict[str, Any]] = []
    with_claims = {s for s, _ in facts[0]}
    gone = named[0] - named[1]
    for old, new in redirects.items():
        if old in with_claims:
            out.append({"kind": "merged", "subject": old, "pid": None, "old": [], "new": [new], "lang": None})
    out += [{"kind": "deleted", "subject": s, "pid": None, "old": [], "new": [], "lang": None} for s in sorted(gone - set(redirects))]
    for key in sorted(set(facts[0]) | set(facts[1])):
        if key[0] in gone:
            continue
        before, after = facts[0].get(key, set()), facts[1].get(key, set())
        removed, added = sorted(before - after), sorted(after - before)
        if removed or added:
            kind = "changed" if removed and added else "added" if added else "removed"
            out.append({"kind": kind, "subject": key[0], "pid": key[1], "old": removed, "new": added, "lang": None})
    for key in sorted(set(labels[0]) | set(labels[1])):
        before, after = labels[0].get(key, set()), labels[1].get(key, set())
        if key[0] not in gone and before != after:
            out.append({"kind": "label", "subject": key[0], "pid": None, "old": sorted(before - after), "new": sorted(after - before), "lang": key[1]})
    return out


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["kind"], row["subject"], row["pid"] or "", row["lang"] or "", tuple(sorted(row["old"])), tuple(sorted(row["new"])))


@pytest.fixture(scope="module")
def oracle(pair: tuple[Path, Path]) -> list[dict[str, Any]]:
    """What rdflib finds changed from the first dump to the second, labels in every language."""
    return rdflib_changes(*pair, languages=LANGUAGES)


def test_the_evolved_dump_changes_exactly_what_its_list_says(pair: tuple[Path, Path], oracle: list[dict[str, Any]]) -> None:
    first, second = pair
    header, listed = read_changes(second)
    found = oracle
    assert sorted(map(_key, found)) == sorted(map(_key, listed))
    counts = Counter(r["kind"] for r in listed)
    assert header["counts"] == {k: counts[k] for k in header["counts"]} and header["seed"] == 5 and header["share"] == 0.08
    assert all(counts[k] >= 3 for k in ("changed", "added", "removed", "label", "merged", "deleted")), counts
    # a changed item value stays of its class: a person's birthplace another place, a city's mayor another person
    assert sum(1 for r in listed if r["kind"] == "changed" and r["pid"] in ("P19", "P6", "P40", "P22", "P25", "P26")) >= 1
    claims = header["claims"]
    assert claims > 1000 and abs(sum(counts[k] for k in ("changed", "removed", "merged", "deleted", "label")) - 0.08 * claims) < 0.04 * claims


def test_evolving_twice_with_one_seed_writes_the_same_bytes(pair: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = pair
    again = tmp_path / "again.nt"
    evolve(first, again, 0.08, seed=5)
    assert again.read_bytes() == second.read_bytes()
    assert read_changes(again)[1] == read_changes(second)[1]


def test_the_import_keeps_the_redirects_and_a_store_made_before_them_still_opens(pair: tuple[Path, Path], stores: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    from kalma.kg.store import LocalWikidata

    merged = {r["subject"]: r["new"][0] for r in read_changes(pair[1])[1] if r["kind"] == "merged"}
    old, new = LocalWikidata(stores[0]), LocalWikidata(stores[1])
    asked = [*merged, "Q5", next(iter(merged.values()))]
    assert new.redirects(asked) == merged and old.redirects(asked) == {}
    assert json_rows(stores[1])["redirects"] == len(merged) > 0
    before = tmp_path / "before-redirects"
    shutil.copytree(stores[1], before)
    shutil.rmtree(before / "redirects")  # as a store imported before the table was
    assert LocalWikidata(before).redirects(asked) == {} and LocalWikidata(before).labels(["Q5"]) == {"Q5": "human"}


def json_rows(store: Path) -> dict[str, int]:
    import json

    return dict(json.loads((store / "meta.json").read_text())["rows"])
