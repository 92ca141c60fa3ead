"""`kalma kg import` and `kalma kg serve` as a user runs them (issue 54): a file that is no dump,
bytes that are not UTF-8, lines the columns dropped, a malformed claim beside `#directClaim> <`,
a retry after a failed `--overwrite`, a symlink, other options, and the serve command's errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perf.dumpgen import write_dump
from tests.e2e.test_first_contact_6 import _ok, _run, _tree

pytest.importorskip("duckdb")

WD, WDT = "<http://www.wikidata.org/entity/", "<http://www.wikidata.org/prop/direct/"
LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"


def _fails(args: list[str], *said: str) -> str:
    """A refusal: a non-zero exit and one line on stderr, saying each of `said`."""
    code, out, err = _run(args)
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, out + err
    for s in said:
        assert s in err, err
    return err


def _rows(store: Path, table: str) -> list[tuple]:
    import duckdb

    return duckdb.connect().execute(f"SELECT * FROM read_parquet('{store / table}/*.parquet') ORDER BY ALL").fetchall()


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    """A generated truthy dump of 12 people, plain."""
    path = tmp_path_factory.mktemp("dump") / "latest-truthy.nt"
    write_dump(path, 12, "nt", seed=2, with_release=False, named_only=True)
    return path


def _with(dump: Path, folder: Path, lines: list[bytes]) -> Path:
    """`dump` with `lines` after it, about a person Q7 (an instance of Q5): a new file."""
    path = folder / "with.nt"
    person = f"{WD}Q7> {WDT}P31> {WD}Q5> .\n".encode()
    path.write_bytes(dump.read_bytes() + person + b"".join(line + b"\n" for line in lines))
    return path


# ---------------------------------------------------------------- §1: what the import reads and counts


def test_a_file_that_is_no_dump_is_refused_and_nothing_is_left(tmp_path, dump):
    """A JSON Lines dataset and a two-line text file: the same refusal, one line naming the file
    and why, before anything is written (with --overwrite, the store is as it was)."""
    _ok(["dataset", "demo", "-o", str(tmp_path / "dataset.jsonl")])
    (tmp_path / "notes.txt").write_text("two lines\nof text\n")
    before = set(os.listdir(tmp_path))
    for path, why in (
        (tmp_path / "dataset.jsonl", "its first line is no entity of Wikidata's JSON dump (an object with the keys kalma)"),
        (tmp_path / "notes.txt", "no N-Triples line about a Wikidata entity"),
    ):
        _fails(["kg", "import", str(path), "-o", str(tmp_path / "store"), "--threads", "1"], f"{path}: not a Wikidata dump: {why}", "nothing was imported")
        assert set(os.listdir(tmp_path)) == before
    _ok(["kg", "import", str(dump), "-o", str(tmp_path / "good"), "--threads", "1"])
    kept, before = _tree(tmp_path / "good"), set(os.listdir(tmp_path))
    _fails(["kg", "import", str(tmp_path / "notes.txt"), "-o", str(tmp_path / "good"), "--overwrite"], "not a Wikidata dump")
    assert _tree(tmp_path / "good") == kept and set(os.listdir(tmp_path)) == before


@pytest.mark.parametrize("how", ["pattern parser", "columns", "columns, a subset"])
def test_bytes_that_are_not_utf8_are_read_as_u_fffd_and_counted(tmp_path, dump, how, monkeypatch):
    """A byte that is not UTF-8 in a label and in a claim: read as U+FFFD, each line counted and
    named, the import finished; by the pattern parser, by the columns, and by the columns with a
    subset (which hand such a block to the pattern parser whole)."""
    if how == "pattern parser":
        monkeypatch.setattr("kalma.kg.store.COLUMNAR", False)
    path = _with(dump, tmp_path, [f'{WD}Q7> {LABEL} "Caf\xe9"@en .'.encode("latin-1"), f'{WD}Q7> {WDT}P1476> "Le Caf\xe9"@fr .'.encode("latin-1")])
    store = tmp_path / "store"
    out = _ok(["kg", "import", str(path), "-o", str(store), "--threads", "1", *(["--classes", "Q5"] if how.endswith("subset") else [])])
    assert "2 malformed lines" in out and "bytes that are not UTF-8 (read as U+FFFD)" in out and f"{path}:{len(path.read_bytes().splitlines()) - 1}:" in out
    assert ("Q7", "label", "en", "Caf\ufffd") in _rows(store, "labels")
    assert ("Q7", "P1476", "Le Caf\ufffd", "literal", "", "fr", None, None) in _rows(store, "claims")
    assert sorted(os.listdir(store)) == ["claims", "labels", "meta.json", "properties", "redirects"]


@pytest.mark.parametrize("columnar", [True, False])
def test_the_lines_the_columns_dropped_are_imported(tmp_path, dump, columnar, monkeypatch):
    """Two spaces before the final dot of a label, a property type and a direct predicate, and a
    claim whose literal holds `#directClaim> <` on a line ending in `. `: all imported."""
    monkeypatch.setattr("kalma.kg.store.COLUMNAR", columnar)
    lines = [
        f'{WD}Q7> {LABEL} "Two spaces"@en  .',
        f"{WD}P9999> <http://wikiba.se/ontology#propertyType> <http://wikiba.se/ontology#String>  .",
        f"{WD}P9999> <http://wikiba.se/ontology#directClaim> {WDT}P9999>  .",
        f'{WD}Q7> {WDT}P1476> "see #directClaim> <here"@en . ',
    ]
    path = _with(dump, tmp_path, [line.encode() for line in lines])
    out = _ok(["kg", "import", str(path), "-o", str(tmp_path / "store"), "--threads", "1"])
    assert "; 0 malformed lines" in out
    assert ("Q7", "label", "en", "Two spaces") in _rows(tmp_path / "store", "labels")
    assert ("P9999", "String", True) in _rows(tmp_path / "store", "properties")
    assert ("Q7", "P1476", "see #directClaim> <here", "literal", "", "en", None, None) in _rows(tmp_path / "store", "claims")


@pytest.mark.parametrize("classes", [[], ["--classes", "Q5"]])
def test_a_malformed_claim_is_counted_beside_a_line_holding_directclaim(tmp_path, dump, classes, monkeypatch):
    """A label holding `#directClaim> <` does not cancel the count of a malformed claim in its
    block: by the pattern parser, and by the columns with a subset (the block read whole)."""
    if not classes:
        monkeypatch.setattr("kalma.kg.store.COLUMNAR", False)
    lines = [f'{WD}Q7> {LABEL} "see #directClaim> <here"@en .', f"{WD}Q7> {WDT}P19> {WD}Q5>"]  # the claim: no final dot
    path = _with(dump, tmp_path, [line.encode() for line in lines])
    out = _ok(["kg", "import", str(path), "-o", str(tmp_path / "store"), "--threads", "1", *classes])
    assert "; 1 malformed line\n" in out and f"{path}:{len(path.read_bytes().splitlines())}: a claim that is not an N-Triples line" in out


# ---------------------------------------------------------------- §2 and the guarded behaviours of --overwrite


def test_a_failed_overwrite_is_retried_with_overwrite(tmp_path):
    """A download cut short fails `kg import --overwrite` midway; once the download is whole, the
    same command replaces the store (the half import hidden beside it is not "another dump")."""
    whole = tmp_path / "whole.nt.gz"
    write_dump(whole, 300, "nt", seed=4, with_release=False)  # some 1.5 MB: more than the first MiB read before any work
    small, store = tmp_path / "small.nt", tmp_path / "store"
    write_dump(small, 5, "nt", seed=4, with_release=False, named_only=True)
    _ok(["kg", "import", str(small), "-o", str(store), "--threads", "1"])
    kept = _tree(store)
    download = tmp_path / "latest-truthy.nt.gz"
    download.write_bytes(whole.read_bytes()[: whole.stat().st_size * 2 // 3])
    _fails(["kg", "import", str(download), "-o", str(store), "--overwrite", "--threads", "1"], f"{download}: not a readable gz stream")
    assert _tree(store) == kept
    download.write_bytes(whole.read_bytes())
    _ok(["kg", "import", str(download), "-o", str(store), "--overwrite", "--threads", "1"])
    assert len({r[0] for r in _rows(store, "claims")}) > 300 and sorted(p for p in os.listdir(tmp_path) if p.startswith(".")) == []


def test_overwrite_replaces_the_store_whole_and_leaves_nothing_beside_it(tmp_path, dump):
    store = tmp_path / "store"
    _ok(["kg", "import", str(dump), "-o", str(store), "--threads", "1"])
    other = tmp_path / "other.nt"
    write_dump(other, 3, "nt", seed=9, with_release=False, named_only=True)
    _ok(["kg", "import", str(other), "-o", str(store), "--overwrite", "--threads", "1"])
    import json

    assert json.loads((store / "meta.json").read_text())["dump"]["path"] == str(other.resolve())
    assert sorted(os.listdir(tmp_path)) == ["other.nt", "store"]


def test_overwrite_never_follows_a_symlink(tmp_path, dump):
    store, link = tmp_path / "store", tmp_path / "link"
    _ok(["kg", "import", str(dump), "-o", str(store), "--threads", "1"])
    link.symlink_to(store)
    kept = _tree(store)
    _fails(["kg", "import", str(dump), "-o", str(link), "--overwrite", "--lang", "de", "--threads", "1"], f"{link} is not a folder kalma kg import wrote")
    assert link.is_symlink() and _tree(store) == kept


def test_a_store_of_other_options_is_refused_not_taken_for_done(tmp_path, dump):
    store = tmp_path / "store"
    _ok(["kg", "import", str(dump), "-o", str(store), "--threads", "1"])
    for other in (["--lang", "de"], ["--classes", "Q5"]):
        _fails(["kg", "import", str(dump), "-o", str(store), "--threads", "1", *other], "holds a finished import of another dump or other options")
    assert "already holds this import" in _ok(["kg", "import", str(dump), "-o", str(store), "--threads", "1"])


# ---------------------------------------------------------------- §3: kg serve, dumpgen


def test_kg_serve_names_what_is_wrong_in_a_snapshot_and_only_its_own_options(tmp_path):
    (tmp_path / "bad.nt").write_text('<http://a.example/s> <http://a.example/p> "never closed .\n')
    err = _fails(["kg", "serve", "--kg", str(tmp_path / "bad.nt")], f"{tmp_path / 'bad.nt'}: oxigraph could not load it: Parser error", "line 1")
    assert "--lenient" not in err
    _fails(["kg", "serve", str(tmp_path / "a.nt"), "--kg", str(tmp_path / "b.nt")], "two snapshots given")
    _fails(["kg", "serve"], "give the snapshot to serve: --kg")
    _fails(["kg", "serve", str(tmp_path / "none.nt")], "no such snapshot file")  # the older spelling still read


def test_dumpgen_says_what_each_option_does():
    from perf.dumpgen import parser

    assert all(a.help for a in parser()._actions), [a.dest for a in parser()._actions if not a.help]
