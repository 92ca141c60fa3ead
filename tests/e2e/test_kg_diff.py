"""Two dumps, what changed: `perf.dumpgen --evolve` writes a second dump from a first with a list
of its changes; `kalma kg diff` compares the two imported stores (and the two dumps as
snapshots); a plain rdflib comparison of the two dumps, written here apart from both, must find
exactly what the list says and what `kg diff` writes. Bad input ends in one line."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kalma.cli import main
from kalma.kg import ntriples as nt
from kalma.kg.diff import KINDS, read_diff
from perf.dumpgen import LANGUAGES, write_dump
from perf.evolve import SAME_AS, evolve, read_changes

pytest.importorskip("duckdb")

STORE_LANGUAGES = ("en", "fr")
LABEL_KINDS = {p: kind for p, kind in nt.LABELS.items()}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A dump of people, cities and organizations, and a second evolved from it (8 % of its facts)."""
    work = tmp_path_factory.mktemp("kg-diff")
    first, second = work / "wikidata-20260101-truthy.nt", work / "wikidata-20260201-truthy.nt"
    write_dump(first, 80, "nt", seed=2, with_release=False, named_only=True, organizations=20, cities=20)
    evolve(first, second, 0.08, seed=5)
    return first, second


@pytest.fixture(scope="module")
def stores(pair: tuple[Path, Path]) -> tuple[Path, Path]:
    """Both dumps imported (English and French), as `kalma kg import` does."""
    out = []
    merged = sum(r["kind"] == "merged" for r in read_changes(pair[1])[1])
    for dump, redirects in zip(pair, (0, merged)):
        store = dump.with_suffix(".store")
        res = CliRunner().invoke(main, ["kg", "import", str(dump), "-o", str(store), "--languages", ",".join(STORE_LANGUAGES), "--threads", "2"])
        assert res.exit_code == 0 and f" properties, {redirects:,} redirects from " in res.output, res.output
        out.append(store)
    return out[0], out[1]


@pytest.fixture(scope="module")
def graphs(pair: tuple[Path, Path]) -> tuple[list[Any], list[Any]]:
    """Both dumps' triples as rdflib's N-Triples parser reads them, literals as written (rdflib
    would rewrite `…Z` as `+00:00`); no graph is built, nothing here needs its indexes."""
    import rdflib
    from rdflib.plugins.parsers.ntriples import DummySink, W3CNTriplesParser

    from kalma.kg.local import quiet_rdflib

    class Sink(DummySink):
        def __init__(self) -> None:
            self.triples: list[Any] = []

        def triple(self, s: Any, p: Any, o: Any) -> None:
            self.triples.append((s, p, o))

    normalize, rdflib.NORMALIZE_LITERALS = rdflib.NORMALIZE_LITERALS, False
    out = []
    try:
        with quiet_rdflib():  # BCE dates, which Python's datetime cannot hold
            for path in pair:
                sink = Sink()
                with path.open("rb") as fh:
                    W3CNTriplesParser(sink).parse(fh)
                out.append(sink.triples)
    finally:
        rdflib.NORMALIZE_LITERALS = normalize
    return out[0], out[1]


@pytest.fixture(scope="module")
def every_language(graphs: tuple[Any, Any]) -> list[dict[str, Any]]:
    """What rdflib finds changed, labels in every language the dumps hold."""
    return rdflib_changes(graphs, LANGUAGES)


@pytest.fixture(scope="module")
def stores_diff(stores: tuple[Path, Path]) -> Path:
    out = stores[0].parent / "stores.diff"
    res = CliRunner().invoke(main, ["kg", "diff", str(stores[0]), str(stores[1]), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _value(term: Any) -> str:
    """An rdflib term as a store keeps it: an entity's id, an IRI, a literal's lexical form."""
    from rdflib import URIRef

    return nt.short(str(term)) if isinstance(term, URIRef) else str(term)


def rdflib_changes(graphs: tuple[Any, Any], languages: tuple[str, ...]) -> list[dict[str, Any]]:
    """What changed from the first graph to the second, by rdflib alone: per subject and property
    the values removed and added (both: `changed`), items merged (a redirect in the second whose
    old id had claims in the first) or deleted (nothing left, no redirect), labels, aliases and
    descriptions changed; each row with its subject's class (P31 in the second, else the first)."""
    from rdflib import Literal

    facts: list[dict[tuple[str, str], set[str]]] = []
    labels: list[dict[tuple[str, str, str], set[str]]] = []
    named: list[set[str]] = []
    redirects: dict[str, str] = {}
    for g in graphs:
        f: dict[tuple[str, str], set[str]] = {}
        la: dict[tuple[str, str, str], set[str]] = {}
        for s, p, o in g:
            subject = nt.short(str(s))
            if str(p).startswith(nt.DIRECT) and nt.is_entity(subject):
                f.setdefault((subject, str(p)[len(nt.DIRECT) :]), set()).add(_value(o))
            elif str(p) in LABEL_KINDS and isinstance(o, Literal) and o.language in languages:
                la.setdefault((subject, LABEL_KINDS[str(p)], o.language), set()).add(str(o))
            elif str(p) == SAME_AS and g is graphs[1]:
                redirects[subject] = nt.short(str(o))
        facts.append(f)
        labels.append(la)
        named.append({s for s, _ in f} | {s for s, _, _ in la})
    classes = {
        **{s: min(v) for (s, p), v in facts[0].items() if p == "P31"},
        **{s: min(v) for (s, p), v in facts[1].items() if p == "P31"},
    }  # the second's first
    out: list[dict[str, Any]] = []

    def row(kind: str, subject: str, pid: str | None = None, old: Any = (), new: Any = (), lang: str | None = None, label_kind: str | None = None) -> None:
        out.append({"kind": kind, "subject": subject, "pid": pid, "old": sorted(old), "new": sorted(new), "lang": lang, "label_kind": label_kind})
        out[-1]["class"] = classes.get(subject)

    with_claims = {s for s, _ in facts[0]}
    gone = named[0] - named[1]
    for old, new in redirects.items():
        if old in with_claims:
            row("merged", old, new=[new])
    for s in gone - set(redirects):
        row("deleted", s)
    for key in set(facts[0]) | set(facts[1]):
        before, after = facts[0].get(key, set()), facts[1].get(key, set())
        if key[0] not in gone and before != after:
            removed, added = before - after, after - before
            row("changed" if removed and added else "added" if added else "removed", key[0], key[1], removed, added)
    for ident, kind, lang in set(labels[0]) | set(labels[1]):
        before, after = labels[0].get((ident, kind, lang), set()), labels[1].get((ident, kind, lang), set())
        if ident not in gone and before != after:
            row("label", ident, old=before - after, new=after - before, lang=lang, label_kind=kind)
    return out


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        str(row.get(k) or "") if k not in ("old", "new") else tuple(sorted(row[k])) for k in ("kind", "subject", "pid", "lang", "label_kind", "old", "new")
    )


def _listed(second: Path, languages: tuple[str, ...]) -> list[dict[str, Any]]:
    """The generator's list, its label rows in `languages` (a store holds no other)."""
    rows = read_changes(second)[1]
    return [{**r, "label_kind": "label" if r["kind"] == "label" else None} for r in rows if r["lang"] in (None, *languages)]


# ---------------------------------------------------------------- the generator


def test_the_evolved_dump_changes_exactly_what_its_list_says(pair: tuple[Path, Path], every_language: list[dict[str, Any]]) -> None:
    header, listed = read_changes(pair[1])
    assert sorted(map(_key, every_language)) == sorted(map(_key, _listed(pair[1], LANGUAGES)))
    counts = Counter(r["kind"] for r in listed)
    assert header["counts"] == {k: counts[k] for k in header["counts"]} and header["seed"] == 5 and header["share"] == 0.08
    assert all(counts[k] >= 3 for k in KINDS), counts
    # a changed item value stays of its class: a person's birthplace another place, a city's mayor another person
    assert any(r["kind"] == "changed" and r["pid"] in ("P19", "P6", "P40", "P22", "P25", "P26") for r in listed)
    claims = header["claims"]
    assert claims > 1000 and abs(sum(counts[k] for k in ("changed", "removed", "merged", "deleted", "label")) - 0.08 * claims) < 0.04 * claims


def test_evolving_twice_with_one_seed_writes_the_same_bytes(pair: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = pair
    again = tmp_path / "again.nt"
    evolve(first, again, 0.08, seed=5)
    assert again.read_bytes() == second.read_bytes()
    assert read_changes(again)[1] == read_changes(second)[1]


# ---------------------------------------------------------------- redirects in the store


def test_the_import_keeps_the_redirects_and_a_store_made_before_them_still_opens(pair: tuple[Path, Path], stores: tuple[Path, Path], tmp_path: Path) -> None:
    from kalma.kg.store import LocalWikidata

    merged = {r["subject"]: r["new"][0] for r in read_changes(pair[1])[1] if r["kind"] == "merged"}
    old, new = LocalWikidata(stores[0]), LocalWikidata(stores[1])
    asked = [*merged, "Q5", next(iter(merged.values()))]
    assert new.redirects(asked) == merged and old.redirects(asked) == {}
    assert json.loads((stores[1] / "meta.json").read_text())["rows"]["redirects"] == len(merged) > 0
    before = tmp_path / "before-redirects"
    shutil.copytree(stores[1], before)
    shutil.rmtree(before / "redirects")  # as a store imported before the table was
    assert LocalWikidata(before).redirects(asked) == {} and LocalWikidata(before).labels(["Q5"]) == {"Q5": "human"}


# ---------------------------------------------------------------- kg diff


def test_kg_diff_of_two_stores_equals_a_plain_rdflib_comparison(stores_diff: Path, graphs: tuple[Any, Any]) -> None:
    found = read_diff(stores_diff)
    want = rdflib_changes(graphs, STORE_LANGUAGES)
    assert sorted(map(_key, found)) == sorted(map(_key, want))
    assert {_key(r): r["class"] for r in found} == {_key(r): r["class"] for r in want}  # each row's class, the P31 of its subject


def test_kg_diff_finds_exactly_the_changes_the_generator_listed(pair: tuple[Path, Path], stores_diff: Path) -> None:
    found = read_diff(stores_diff)
    listed = _listed(pair[1], STORE_LANGUAGES)
    assert sorted(map(_key, found)) == sorted(map(_key, listed))
    kinds = Counter(r["kind"] for r in listed)
    assert found.meta["counts"]["kinds"] == {k: kinds[k] for k in KINDS} and all(kinds[k] for k in KINDS)
    # a changed value is one row (old and new), never a removal beside an addition
    changed = next(r for r in listed if r["kind"] == "changed")
    assert found.facts()[(changed["subject"], changed["pid"])]["kind"] == "changed"
    assert found.merged() == {r["subject"]: r["new"][0] for r in listed if r["kind"] == "merged"}
    assert found.deleted() == {r["subject"] for r in listed if r["kind"] == "deleted"}
    # counts per property and per class add up to the rows that have one
    per_pid = Counter(r["pid"] for r in found if r["pid"])
    assert {p: sum(k.values()) for p, k in found.meta["counts"]["properties"].items()} == per_pid
    assert sum(sum(k.values()) for k in found.meta["counts"]["classes"].values()) == sum(1 for r in found if r["class"])
    assert "Q5" in found.meta["counts"]["classes"] and "Q515" in found.meta["counts"]["classes"]


def test_the_diff_says_which_kgs_it_compares_and_reads_back_alike_as_jsonl(stores: tuple[Path, Path], stores_diff: Path, tmp_path: Path) -> None:
    meta = read_diff(stores_diff).meta
    assert meta["kalma_diff"] == 1 and meta["rows"] == len(read_diff(stores_diff).changes)
    for side, store, date in (("old", stores[0], "2026-01-01"), ("new", stores[1], "2026-02-01")):
        assert meta[side]["path"] == str(store.resolve()) and meta[side]["dump_date"] == date
        assert meta[side]["languages"] == list(STORE_LANGUAGES) and meta[side]["digest"].startswith("sha256:")
    assert meta["old"]["digest"] != meta["new"]["digest"] and meta["provenance"]["kalma_version"]
    out = tmp_path / "diff.jsonl"
    res = CliRunner().invoke(main, ["kg", "diff", str(stores[0]), str(stores[1]), "-o", str(out), "--jsonl"])
    assert res.exit_code == 0, res.output
    assert f"{meta['rows']:,} changes" in res.output
    again = read_diff(out)
    assert again.changes == read_diff(stores_diff).changes
    assert {k: v for k, v in again.meta.items() if k != "provenance"} == {k: v for k, v in meta.items() if k != "provenance"}


def test_kg_diff_of_two_snapshots_equals_the_rdflib_comparison(pair: tuple[Path, Path], every_language: list[dict[str, Any]], tmp_path: Path) -> None:
    """The two dumps themselves as snapshots (every label language they hold), the first as Turtle."""
    import pyoxigraph as ox

    turtle = tmp_path / "first.ttl"
    ox.serialize(ox.parse(path=str(pair[0]), format=ox.RdfFormat.N_TRIPLES), turtle, ox.RdfFormat.TURTLE, prefixes={"wd": nt.WD, "wdt": nt.DIRECT})
    out = tmp_path / "snapshots.diff"
    res = CliRunner().invoke(main, ["kg", "diff", str(turtle), str(pair[1]), "-o", str(out)])
    assert res.exit_code == 0, res.output
    found = read_diff(out)
    assert sorted(map(_key, found)) == sorted(map(_key, every_language))
    assert found.meta["old"]["languages"] == sorted(LANGUAGES) and found.meta["old"]["source"] == "snapshot"
    # the second as an Oxigraph store folder: the same changes
    store = ox.Store(str(tmp_path / "second.oxigraph"))
    store.bulk_load(path=str(pair[1]), format=ox.RdfFormat.N_TRIPLES)
    del store  # closed: the diff opens it read-only
    res = CliRunner().invoke(main, ["kg", "diff", str(turtle), str(tmp_path / "second.oxigraph"), "-o", str(tmp_path / "ox.diff")])
    assert res.exit_code == 0, res.output
    assert read_diff(tmp_path / "ox.diff").changes == found.changes


# ---------------------------------------------------------------- bad input


def _refused(args: list[str], *said: str) -> None:
    res = CliRunner().invoke(main, ["kg", "diff", *args])
    assert res.exit_code != 0 and "Traceback" not in res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    for part in said:
        assert part in lines[0], (part, lines[0])


def test_bad_input_ends_in_one_line_and_writes_nothing(pair: tuple[Path, Path], stores: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = (str(s) for s in stores)
    out = tmp_path / "out"
    english = tmp_path / "english.store"
    assert CliRunner().invoke(main, ["kg", "import", str(pair[1]), "-o", str(english), "--threads", "2"]).exit_code == 0
    _refused([old, str(english), "-o", str(out)], "en, fr", "en", "same languages")
    # a store against a snapshot of other languages: the snapshot's are known once it is read
    _refused([old, str(pair[1]), "-o", str(out)], "en, fr", "de, en, es")
    as_json = tmp_path / "first.json"
    write_dump(as_json, 80, "json", seed=2, with_release=False, named_only=True, organizations=20, cities=20)
    json_store = tmp_path / "json.store"
    assert CliRunner().invoke(main, ["kg", "import", str(as_json), "-o", str(json_store), "--languages", "en,fr", "--threads", "2"]).exit_code == 0
    _refused([str(json_store), new, "-o", str(out)], "json dump", "nt dump", "same format")
    (tmp_path / "folder").mkdir()
    _refused([str(tmp_path / "folder"), new, "-o", str(out)], "OLD", "no store")
    _refused([old, str(tmp_path / "missing"), "-o", str(out)], "NEW", "no such file")
    (tmp_path / "notes.txt").write_text("not a KG")
    _refused([str(tmp_path / "notes.txt"), new, "-o", str(out)], "no snapshot")
    _refused([old, old, "-o", str(out)], "same KG")
    (tmp_path / "torn.ttl").write_text("@prefix wd: <http://www.wikidata.org/entity/> .\nwd:Q1 wd:P31 ")
    _refused([str(tmp_path / "torn.ttl"), new, "-o", str(out)], "OLD", "torn.ttl", "not a readable snapshot")
    assert not out.exists()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "thesis.tex").write_text("mine")
    _refused([old, new, "-o", str(tmp_path / "taken")], "exists", "--overwrite")
    _refused([old, new, "-o", str(tmp_path / "taken"), "--overwrite"], "thesis.tex")
    assert (tmp_path / "taken" / "thesis.tex").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["english.store", "first.json", "folder", "json.store", "notes.txt", "taken", "torn.ttl"]
