"""Wikidata's dumps read as Wikidata writes them: real entities (tests/fixtures/wikidata) as a JSON
dump and as truthy N-Triples, plain and compressed; the truthy rules (preferred, then normal,
never deprecated; unknown values kept, no values left out; lexemes skipped); malformed lines
counted and named; a killed import resumed with nothing lost or doubled; subsets by class."""

from __future__ import annotations

import bz2
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kalma.kg.dumps import GENID, Filter, entity_nt
from kalma.kg.store import connect, import_dump
from tests.conftest import ROOT
from tests.unit.test_ntriples_fuzz import every_malformed_line  # noqa: F401 - a fixture

FIXTURES = ROOT / "tests" / "fixtures" / "wikidata"
DUMP_ENTITIES = ["Q1.json", "Q4115189.json", "Q4132785.json", "Q22002395.json", "P3035.json", "L525.json"]


def entities() -> list[dict]:
    return [json.loads((FIXTURES / name).read_text(encoding="utf-8")) for name in DUMP_ENTITIES]


def write_json_dump(path: Path, items: list[dict]) -> Path:
    """One entity a line inside one array, as latest-all.json is laid out."""
    lines = ["["] + [json.dumps(e, ensure_ascii=False, separators=(",", ":")) + ("," if i < len(items) - 1 else "") for i, e in enumerate(items)] + ["]"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_nt_dump(path: Path, items: list[dict], languages=("en",)) -> Path:
    path.write_text("".join(line + "\n" for e in items for line in entity_nt(e, languages)), encoding="utf-8")
    return path


def table(store: Path, name: str, columns: str = "*") -> list[tuple]:
    con = connect(1)
    return sorted(con.execute(f"SELECT {columns} FROM read_parquet('{store / name}/*.parquet')").fetchall(), key=repr)


def claims_of(store: Path, subject: str, pid: str) -> list[tuple]:
    return [c for c in table(store, "claims") if c[0] == subject and c[1] == pid]


@pytest.fixture(scope="module")
def json_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("json")
    import_dump(write_json_dump(root / "latest-all.json", entities()), root / "store", progress=False)
    return root / "store"


def test_the_truthy_statements_of_real_entities(json_store):
    # preferred beats normal, deprecated never counts
    assert [c[2] for c in claims_of(json_store, "Q4115189", "P135")] == ["Q2044250"]
    born = claims_of(json_store, "Q4115189", "P569")
    assert born == [
        ("Q4115189", "P569", "1291-01-01T00:00:00Z", "literal", "http://www.w3.org/2001/XMLSchema#dateTime", "", 9, "http://www.wikidata.org/entity/Q1985786")
    ]
    assert claims_of(json_store, "Q4115189", "P6604")[0][2] == "\\relative { c d e f g e }"
    # a BCE date keeps its sign and its precision (years, here billions of them)
    (start,) = claims_of(json_store, "Q1", "P580")
    assert start[2] == "-13798000000-01-01T00:00:00Z" and start[6] == 3
    # unknown authors are genid IRIs beside the known ones; a quantity is a decimal
    authors = [c[2] for c in claims_of(json_store, "Q22002395", "P50")]
    assert sorted(a for a in authors if a.startswith("Q")) == ["Q1128109", "Q1181545", "Q1747747"] and sum(a.startswith(GENID) for a in authors) == 2
    assert claims_of(json_store, "Q22002395", "P1104")[0][2:5] == ("144", "literal", "http://www.w3.org/2001/XMLSchema#decimal")
    # the older numeric-id form, several values of one property, strings
    assert [c[2] for c in claims_of(json_store, "Q4132785", "P921")] == ["Q253732", "Q8676"]
    assert sorted(c[2] for c in claims_of(json_store, "Q4132785", "P212")) == ["978-0-345-40502-9", "978-84-270-1284-4"]
    # a property: its type and its own claims; a lexeme: nothing
    assert ("P3035", "ExternalId", True) in table(json_store, "properties")
    assert [c[2] for c in claims_of(json_store, "P3035", "P1659")] == ["P212", "P3097", "P3193", "P957"]
    assert not any("L525" in repr(row) for name in ("labels", "claims") for row in table(json_store, name))
    # labels in the languages asked only (English by default)
    assert [r for r in table(json_store, "labels") if r[0] == "Q4132785"] == [("Q4132785", "label", "en", "Bring the Jubilee")]


def test_no_value_is_left_out_and_an_unknown_value_kept(tmp_path):
    dump = write_json_dump(tmp_path / "d.json", [json.loads((FIXTURES / "Q4115189-no-and-unknown-values.json").read_text())])
    import_dump(dump, tmp_path / "store", progress=False)
    values = [c[2] for c in claims_of(tmp_path / "store", "Q4115189", "P3984")]
    assert len(values) == 2 and "bacasable" in values and sum(v.startswith(GENID) for v in values) == 1


def test_the_truthy_n_triples_give_the_same_store(json_store, tmp_path):
    """The same entities written as the truthy dump writes them (labels three times, non-ASCII as
    \\u escapes, property types and direct-claim predicates) import to the same rows; only the
    JSON dump knows a date's precision and calendar."""
    nt = write_nt_dump(tmp_path / "latest-truthy.nt", entities())
    assert '"Bring the Jubilee"@en' in nt.read_text() and "skos/core#prefLabel" in nt.read_text()
    import_dump(nt, tmp_path / "store", progress=False)
    for name, cols in (("labels", "*"), ("properties", "*"), ("claims", "subject, pid, value, value_type, datatype, lang")):
        assert table(tmp_path / "store", name, cols) == table(json_store, name, cols), name


@pytest.mark.parametrize("compression", ["gz", "bz2", "zst"])
def test_compressed_dumps_read_alike(json_store, tmp_path, compression):
    import zstandard

    plain = write_nt_dump(tmp_path / "d.nt", entities()).read_bytes()
    path = tmp_path / f"latest-truthy.nt.{compression}"
    path.write_bytes({"gz": gzip.compress, "bz2": bz2.compress, "zst": zstandard.ZstdCompressor().compress}[compression](plain))
    import_dump(path, tmp_path / "store", progress=False)
    cols = "subject, pid, value, value_type, datatype, lang"
    assert table(tmp_path / "store", "claims", cols) == table(json_store, "claims", cols)


def test_malformed_lines_are_counted_named_and_passed_over(tmp_path):
    lines = write_nt_dump(tmp_path / "good.nt", entities()).read_text().splitlines()
    broken = lines[:3] + ["<http://www.wikidata.org/entity/Q9> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5>"] + lines[3:]
    (tmp_path / "bad.nt").write_text("\n".join(broken) + "\n")
    meta = import_dump(tmp_path / "bad.nt", tmp_path / "store", progress=False)
    assert meta["malformed"]["lines"] == 1 and "bad.nt:4:" in meta["malformed"]["first"][0] and "entity/Q9" in meta["malformed"]["first"][0]
    assert meta["rows"]["claims"] == len(table(tmp_path / "store", "claims")) > 0  # the rest imported
    # in later blocks too, each named by its line in the file, not in its block
    bad = "<http://www.wikidata.org/entity/Q9> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5>"
    many = lines[:3] + [bad] + lines[3:] + [bad] + lines + [bad]
    (tmp_path / "blocks.nt").write_text("\n".join(many) + "\n")
    meta = import_dump(tmp_path / "blocks.nt", tmp_path / "store-blocks", progress=False, block_size=1024)
    at = [i + 1 for i, line in enumerate(many) if line == bad]
    assert at[-1] > 40 and meta["malformed"]["lines"] == 3
    assert [x.split(": ")[0] for x in meta["malformed"]["first"]] == [f"{tmp_path / 'blocks.nt'}:{n}" for n in at]
    items = entities()
    (tmp_path / "bad.json").write_text("[\n" + json.dumps(items[0]) + ',\n{"id": "Q2", "claims": {\n' + json.dumps(items[1]) + "\n]\n")
    meta = import_dump(tmp_path / "bad.json", tmp_path / "store2", progress=False)
    assert meta["malformed"]["lines"] == 1 and "not a JSON entity" in meta["malformed"]["first"][0]


def test_a_killed_import_resumes_with_no_row_lost_or_doubled(json_store, tmp_path):
    for fmt, write in (("json", write_json_dump), ("nt", write_nt_dump)):
        dump = write(tmp_path / f"latest.{fmt}", entities())
        store = tmp_path / f"store-{fmt}"
        # blocks of 1 kB, a part and a checkpoint after each: the kill comes after the second
        with pytest.raises(Stopped) as stop:
            import_dump(dump, store, progress=False, part_rows=1, block_size=1024, on_checkpoint=stop_at(2))
        stopped = json.loads((store / "parts" / "checkpoint.json").read_text())
        assert stop.value.state.parts == stopped["parts"] == 2 and not stopped["done"] and 0 < stopped["offset"] < dump.stat().st_size
        (store / "parts" / f"claims-{stopped['parts']:05d}.parquet").write_bytes(b"a part written after the checkpoint, torn")
        meta = import_dump(dump, store, progress=False, part_rows=1, block_size=1024)
        assert meta["read"]["decompressed_bytes"] == dump.stat().st_size
        cols = "subject, pid, value, value_type, datatype, lang"  # the N-Triples know no precision or calendar
        for name, wanted in (("labels", "*"), ("properties", "*"), ("claims", cols)):
            assert table(store, name, wanted) == table(json_store, name, wanted), (fmt, name)
        assert meta["rows"] == {name: len(table(json_store, name)) for name in ("labels", "claims", "properties", "redirects")}
        # the raw rows, before the final step deduplicates: the same as an import never killed
        once = import_dump(dump, tmp_path / f"once-{fmt}", progress=False, part_rows=1, block_size=1024)
        assert once["read"]["rows_before_dedup"] == meta["read"]["rows_before_dedup"] and once["rows"] == meta["rows"]
        assert not (store / "parts").exists()  # the tables hold it all


class Stopped(Exception):
    """Raised at a checkpoint to stop an import there, as a kill would."""

    def __init__(self, state: Any):
        self.state = state


def stop_at(parts: int) -> Callable[[Any], None]:
    """An `on_checkpoint` that stops the import once `parts` parts are handed to the writer."""

    def check(state: Any) -> None:
        if state.parts >= parts:
            raise Stopped(state)

    return check


def test_a_part_that_cannot_be_written_stops_the_import_and_no_checkpoint_counts_it(tmp_path):
    """A part the writer cannot write (a full disk; here a folder where its file goes) stops the
    import with that error, and no checkpoint counts its rows or any after them: once the way is
    clear, the same import resumes into the store of an import never stopped."""
    dump = write_nt_dump(tmp_path / "d.nt", entities())
    store, obstacles = tmp_path / "store", [tmp_path / "store" / "parts" / f"{t}-00002.tmp" for t in ("labels", "claims", "properties")]

    def block_the_third(state: Any) -> None:
        if state.parts == 1:
            for path in obstacles:
                path.mkdir()

    with pytest.raises(IsADirectoryError):
        import_dump(dump, store, progress=False, part_rows=1, block_size=1024, on_checkpoint=block_the_third)
    assert json.loads((store / "parts" / "checkpoint.json").read_text())["parts"] == 2
    for path in obstacles:
        path.rmdir()
    resumed = import_dump(dump, store, progress=False, part_rows=1, block_size=1024)
    once = import_dump(dump, tmp_path / "once", progress=False, part_rows=1, block_size=1024)
    assert resumed["read"]["rows_before_dedup"] == once["read"]["rows_before_dedup"] and resumed["rows"] == once["rows"]


def test_finalize_closes_its_connection_when_a_part_is_damaged(tmp_path):
    """The final step's DuckDB connection (and its spill folder) does not outlive a failure."""
    import duckdb

    from kalma.errors import ConfigError
    from kalma.kg.store import finalize

    dump, store = write_nt_dump(tmp_path / "d.nt", entities()), tmp_path / "store"
    with pytest.raises(Stopped):
        import_dump(dump, store, progress=False, part_rows=1, block_size=1024, on_checkpoint=stop_at(2))
    sorted((store / "parts").glob("*-00000.parquet"))[0].write_bytes(b"PAR1 torn")
    with pytest.raises(ConfigError, match="a part is damaged") as failed:
        finalize(store)
    tb, frames = failed.tb, []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    (con,) = [f.f_locals["con"] for f in frames if f.f_code.co_name == "finalize"]
    with pytest.raises(duckdb.ConnectionException, match="closed"):
        con.execute("SELECT 1")
    assert not (store / ".duckdb-spill").exists()


def test_a_subset_by_class_keeps_its_claims_and_what_they_name(tmp_path):
    """--classes Q571 (book): the two books keep their claims; the universe and the sandbox do not;
    labels are kept for what the kept claims name, in both dump formats."""
    for fmt, write in (("json", write_json_dump), ("nt", write_nt_dump)):
        dump = write(tmp_path / f"d.{fmt}", entities())
        import_dump(dump, tmp_path / fmt, keep=Filter(classes=frozenset({"Q571"})), progress=False)
        subjects = {c[0] for c in table(tmp_path / fmt, "claims")}
        assert subjects == {"Q4132785", "Q22002395", "P3035"}, fmt
        assert {r[0] for r in table(tmp_path / fmt, "labels")} == {"Q4132785"}  # the only labelled entity named


WD, WDT = "<http://www.wikidata.org/entity/", "<http://www.wikidata.org/prop/direct/"
LABEL, DIRECT_CLAIM, PROPERTY_TYPE = (
    "<http://www.w3.org/2000/01/rdf-schema#label>",
    "<http://wikiba.se/ontology#directClaim>",
    "<http://wikiba.se/ontology#propertyType>",
)
HOSTILE = [
    f'{WD}Q7> {LABEL} "Caf\\u00e9 \\"Le Q\\"" @en .',
    f'{WD}Q7> {LABEL} "Caf\\u00e9 \\"Le Q\\""@en .',
    f'{WD}Q7> {LABEL} "He said "hi""@en .',  # unescaped quotes: no label
    f'{WD}Q7> <http://schema.org/description> "a café, twice."@en .\r',
    f'{WD}Q7> <http://www.w3.org/2004/02/skos/core#altLabel> "Kaffee"@de .',
    f"{WD}Q7> {WDT}P31> {WD}Q5>  .",
    f'{WD}Q7> {WDT}P1476> "Le \\"Q\\""@fr .',
    f'{WD}Q7> {WDT}P1082> "+42"^^<http://www.w3.org/2001/XMLSchema#decimal> .',
    f'{WD}Q7> {WDT}P1448> "plain"^^<http://www.w3.org/2001/XMLSchema#string> .',
    f"{WD}Q7> {WDT}P570> _:b0 .",
    f"{WD}Q7> {WDT}P856> <https://example.org/a b> .",
    f"{WD}Q7> {WDT}P18> <http://x/a>b> .",  # 12, malformed: a `>` inside an IRI
    f'{WD}Q7> {WDT}P19> "torn',  # 13, malformed
    f"{WD}Q8> {WDT}P31> {WD}Q5> . ",
    f"{WD}L5> {WDT}P5185> {WD}Q1084> .",
    f"{WD}P31> {DIRECT_CLAIM} {WDT}P31> .",
    f"{WD}P31> {PROPERTY_TYPE} <http://wikiba.se/ontology#WikibaseItem> .",
    # a claim whose literal holds a directClaim line's words: still a claim
    f'{WD}Q8> {WDT}P1476> "see #directClaim> <here"@en .',
    # a tab inside the subject: no N-Triples line, named malformed for its claim predicate
    f"{WD}Q9\tx> {WDT}P31> {WD}Q5> .",  # 19
    # a claim predicate's words inside labels: a French one (not read), an English one (read)
    f'{WD}Q9> {LABEL} "a> {WDT}P1 b"@fr .',
    f'{WD}Q9> {LABEL} "a> {WDT}P1 b"@en .',
    # digits outside ASCII make no entity id
    f"{WD}Q9> {WDT}P31> {WD}Q²> .",
    # two spaces or a tab before the final dot, none, one after it: read all the same
    f'{WD}Q7> {LABEL} "Two spaces"@en  .',
    f'{WD}Q7> <http://schema.org/description> "a tab"@en\t.',
    f'{WD}Q7> {LABEL} "no space"@en.',
    f"{WD}P31> {PROPERTY_TYPE} <http://wikiba.se/ontology#WikibaseItem>  .",
    f"{WD}P31> {DIRECT_CLAIM} {WDT}P31>  .",
    f'{WD}Q8> {WDT}P1476> "see #directClaim> <there"@en . ',
    f"{WD}Q8> {WDT}P31> {WD}Q5>.",
    # terms the columns leave to the pattern parser, which names each claim malformed
    f"<> {WDT}P31> {WD}Q5> .",  # 30: an empty subject
    f"{WD}Q7> {WDT}P570> _: .",  # 31: a blank node without a label
    f"{WD}Q7> {WDT}P570> _:b 0 .",  # 32: a blank node with a space
    f'{WD}Q7> {WDT}P1476> "x"@en US .',  # 33: a language tag with a space
    f"{WD}Q7> {WDT}P31x> {WD}Q5> .",  # 34: no property id
    f"{WD}P31> {DIRECT_CLAIM} {WDT}P32> .",  # another property's direct predicate: not P31's
    f'{WD}Q7> {LABEL} "\\uD800 half"@en .',  # half a UTF-16 pair alone: U+FFFD
    f"<http://x/a>b> {WDT}P31> {WD}Q5> .",  # 37: a `>` inside the subject
]
MALFORMED = [
    (12, "an object"),
    (13, "a claim t"),
    (19, "a claim t"),
    (30, "a claim t"),
    (31, "an object"),
    (32, "an object"),
    (33, "an object"),
    (34, "a claim t"),
    (37, "a claim t"),
]


class _ReadOnly:
    """A stream with `read` and nothing else (no `readinto`), as some decoders are."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def read(self, size: int = -1) -> bytes:
        out = self.data[self.at : self.at + (size if size >= 0 else len(self.data))]
        self.at += len(out)
        return out


@pytest.mark.parametrize("size", [7, 100, 1000, 1 << 20])
def test_blocks_end_where_a_subject_ends_and_lose_no_byte(tmp_path, size):
    """The blocks of a dump, filled in place and cut by truncation, are the dump: in order, each
    at its offset, each ending at a line end and, where the block holds more than one subject,
    where a subject's lines end; the same from a stream with only `read`, and from an offset."""
    import io

    from kalma.kg.dumps import NTriples, blocks

    data = write_nt_dump(tmp_path / "d.nt", entities()).read_bytes()
    got = list(blocks(io.BytesIO(data), cut=NTriples.cut, size=size))
    assert b"".join(b for _, b in got) == data and [o for o, _ in got] == [sum(len(b) for _, b in got[:i]) for i in range(len(got))]
    for (_, block), (_, after) in zip(got, got[1:]):
        last = block[block.rstrip(b"\n").rfind(b"\n") + 1 :].split(b" ")[0]
        assert block.endswith(b"\n") and (not after.startswith(last + b" ") or block.count(b"\n") == 1 or block.startswith(last + b" "))
    assert list(blocks(_ReadOnly(data), cut=NTriples.cut, size=size)) == got
    middle = got[len(got) // 2][0]
    assert list(blocks(io.BytesIO(data), middle, cut=NTriples.cut, size=size)) == got[len(got) // 2 :]


@pytest.mark.parametrize("keep", [Filter(), Filter(classes=frozenset({"Q5"})), Filter(qids=frozenset({"Q8"}))])
def test_the_columnar_parser_reads_what_the_pattern_parser_reads(tmp_path, keep):
    """Column by column (polars) or by the compiled pattern: the same rows and the same malformed
    lines, on real entities and on lines of every shape the dumps can hold."""
    from perf.ntriples_lines import read_both

    real = write_nt_dump(tmp_path / "real.nt", entities(), languages=("en", "de")).read_text()
    ended = (real + "\n".join(HOSTILE) + "\n").encode()
    for languages, block in ((("en",), ended), (("en", "de"), ended), (("en",), ended[:-1])):  # the last: no newline at its end
        pattern, columns, bad_pattern, bad_columns = read_both(block, languages, keep)
        assert columns == pattern and bad_columns == bad_pattern and len(bad_pattern) == 5, (languages, keep)


@pytest.mark.usefixtures("every_malformed_line")
def test_the_lines_of_the_grammars_edges_are_read_as_it_says():
    """What each parser reads from the hostile lines, as the grammar (kalma.kg.ntriples) says: what
    the columns dropped uncounted before (two spaces before the dot, a claim's literal holding
    `#directClaim> <` on a line ending in `. `), the terms they must leave to the pattern parser, and
    the malformed claims, each counted once, whatever else the block holds."""
    from perf.ntriples_lines import read_both

    block = ("\n".join(HOSTILE) + "\n").encode()
    for keep in (Filter(), Filter(classes=frozenset({"Q5"}))):
        pattern, columns, bad_pattern, bad_columns = read_both(block, ("en",), keep)
        assert columns == pattern and bad_columns == bad_pattern
        labels, claims, props = pattern["labels"], pattern["claims"], pattern["properties"]
        assert ("Q7", "label", "en", "Two spaces") in labels and ("Q7", "description", "en", "a tab") in labels
        assert ("Q7", "label", "en", "no space") in labels and ("Q7", "label", "en", "\ufffd half") in labels
        assert ("P31", "WikibaseItem", False) in props and ("P31", "", True) in props and ("P32", "", True) not in props
        assert ("Q8", "P1476", "see #directClaim> <there", "literal", "", "en", None, None) in claims
        assert ("Q8", "P31", "Q5", "item", "", "", None, None) in claims
        assert not [c for c in claims if c[0] in ("", "http://x/a>b") or c[2] in ("_:", "_:b 0") or c[5] == "en US"]
        assert [(n, why[:9]) for n, why in bad_pattern] == [(n, why[:9]) for n, why in MALFORMED], bad_pattern


def test_a_block_of_many_lines_counts_each_malformed_claim_once():
    """A line that is no claim but holds `#directClaim> <` (a label, here) does not cancel a
    malformed claim's count, in a block the pattern parser reads whole."""
    from kalma.kg.dumps import Malformed, NTriples, Rows

    label = '<http://www.wikidata.org/entity/Q7> <http://www.w3.org/2000/01/rdf-schema#label> "see #directClaim> <here"@en .'
    torn = "<http://www.wikidata.org/entity/Q9> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5>"
    bad = Malformed()
    NTriples().parse(f"{label}\n{torn}\n".encode(), Rows(), bad)
    assert bad.count == 1 and bad.first[0][:2] == (2, "a claim that is not an N-Triples line")


def test_bytes_that_are_no_utf8_are_read_as_replacement_characters_and_counted():
    """A torn or foreign byte in a dump costs its character, not the import: both parsers read it as
    U+FFFD, as Python's `replace` does, and count the line (the pattern parser when it reads a
    block whole, as with a subset, too); every other line is read as before."""
    from perf.ntriples_lines import read_both

    block = (
        b'<http://www.wikidata.org/entity/Q7> <http://www.w3.org/2000/01/rdf-schema#label> "Caf\xe9"@en .\n'
        b"<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5> .\n"
        b'<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P1476> "\xff\xfe"@en .\n'
        b"<http://www.wikidata.org/entity/Q7> <http://schema.org/about> <http://x/\xe9> .\n"  # no line the store reads
    )
    for keep in (Filter(), Filter(classes=frozenset({"Q5"}))):
        pattern, columns, bad_pattern, bad_columns = read_both(block, ("en",), keep)
        assert columns == pattern and bad_columns == bad_pattern == [
            (1, "bytes that are not UTF-8 (read as U+FFFD)"),
            (3, "bytes that are not UTF-8 (read as U+FFFD)"),
        ]
        assert pattern["labels"] == [("Q7", "label", "en", "Caf\ufffd")]
        assert {c[2] for c in pattern["claims"]} == {"Q5", "\ufffd\ufffd"}
