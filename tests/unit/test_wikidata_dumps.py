"""Wikidata's dumps read as Wikidata writes them: real entities (tests/fixtures/wikidata) as a JSON
dump and as truthy N-Triples, plain and compressed; the truthy rules (preferred, then normal,
never deprecated; unknown values kept, no values left out; lexemes skipped); malformed lines
counted and named; a killed import resumed with nothing lost or doubled; subsets by class."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import pytest

from kalma.kg.dumps import GENID, Filter, entity_nt
from kalma.kg.store import connect, import_dump
from tests.conftest import ROOT

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
        stopped = import_dump(dump, store, progress=False, part_rows=1, stop_after=2, block_size=1024)
        assert not stopped["done"] and stopped["parts"] == 2 and 0 < stopped["offset"] < dump.stat().st_size
        (store / "parts" / f"claims-{stopped['parts']:05d}.parquet").write_bytes(b"a part written after the checkpoint, torn")
        meta = import_dump(dump, store, progress=False, part_rows=1, block_size=1024)
        assert meta["read"]["decompressed_bytes"] == dump.stat().st_size
        cols = "subject, pid, value, value_type, datatype, lang"  # the N-Triples know no precision or calendar
        for name, wanted in (("labels", "*"), ("properties", "*"), ("claims", cols)):
            assert table(store, name, wanted) == table(json_store, name, wanted), (fmt, name)
        assert meta["rows"] == {name: len(table(json_store, name)) for name in ("labels", "claims", "properties")}
        # the raw rows, before the final step deduplicates: the same as an import never killed
        once = import_dump(dump, tmp_path / f"once-{fmt}", progress=False, part_rows=1, block_size=1024)
        assert once["read"]["rows_before_dedup"] == meta["read"]["rows_before_dedup"] and once["rows"] == meta["rows"]
        assert not (store / "parts").exists()  # the tables hold it all


def test_a_subset_by_class_keeps_its_claims_and_what_they_name(tmp_path):
    """--classes Q571 (book): the two books keep their claims; the universe and the sandbox do not;
    labels are kept for what the kept claims name, in both dump formats."""
    for fmt, write in (("json", write_json_dump), ("nt", write_nt_dump)):
        dump = write(tmp_path / f"d.{fmt}", entities())
        import_dump(dump, tmp_path / fmt, keep=Filter(classes=frozenset({"Q571"})), progress=False)
        subjects = {c[0] for c in table(tmp_path / fmt, "claims")}
        assert subjects == {"Q4132785", "Q22002395", "P3035"}, fmt
        assert {r[0] for r in table(tmp_path / fmt, "labels")} == {"Q4132785"}  # the only labelled entity named


HOSTILE = [
    '<http://www.wikidata.org/entity/Q7> <http://www.w3.org/2000/01/rdf-schema#label> "Caf\\u00e9 \\"Le Q\\"" @en .',
    '<http://www.wikidata.org/entity/Q7> <http://www.w3.org/2000/01/rdf-schema#label> "Caf\\u00e9 \\"Le Q\\""@en .',
    '<http://www.wikidata.org/entity/Q7> <http://www.w3.org/2000/01/rdf-schema#label> "He said "hi""@en .',  # unescaped quotes: no label
    '<http://www.wikidata.org/entity/Q7> <http://schema.org/description> "a café, twice."@en .\r',
    '<http://www.wikidata.org/entity/Q7> <http://www.w3.org/2004/02/skos/core#altLabel> "Kaffee"@de .',
    "<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5>  .",
    '<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P1476> "Le \\"Q\\""@fr .',
    '<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P1082> "+42"^^<http://www.w3.org/2001/XMLSchema#decimal> .',
    '<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P1448> "plain"^^<http://www.w3.org/2001/XMLSchema#string> .',
    "<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P570> _:b0 .",
    "<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P856> <https://example.org/a b> .",
    "<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P18> <http://x/a>b> .",  # malformed
    '<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P19> "torn',  # malformed
    "<http://www.wikidata.org/entity/Q8> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5> . ",
    "<http://www.wikidata.org/entity/L5> <http://www.wikidata.org/prop/direct/P5185> <http://www.wikidata.org/entity/Q1084> .",
    "<http://www.wikidata.org/entity/P31> <http://wikiba.se/ontology#directClaim> <http://www.wikidata.org/prop/direct/P31> .",
    "<http://www.wikidata.org/entity/P31> <http://wikiba.se/ontology#propertyType> <http://wikiba.se/ontology#WikibaseItem> .",
    # a claim whose literal holds a directClaim line's words: still a claim
    '<http://www.wikidata.org/entity/Q8> <http://www.wikidata.org/prop/direct/P1476> "see #directClaim> <here"@en .',
    # a tab inside the subject: no N-Triples line, named malformed for its claim predicate
    "<http://www.wikidata.org/entity/Q9\tx> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5> .",
    # a claim predicate's words inside labels: a French one (not read, named), an English one (read)
    '<http://www.wikidata.org/entity/Q9> <http://www.w3.org/2000/01/rdf-schema#label> "a> <http://www.wikidata.org/prop/direct/P1 b"@fr .',
    '<http://www.wikidata.org/entity/Q9> <http://www.w3.org/2000/01/rdf-schema#label> "a> <http://www.wikidata.org/prop/direct/P1 b"@en .',
    # digits outside ASCII make no entity id
    "<http://www.wikidata.org/entity/Q9> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q²> .",
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


def test_bytes_that_are_no_utf8_are_read_as_replacement_characters():
    """A torn or foreign byte in a dump costs its character, not the block: the columns read it as
    U+FFFD, as the Python decoder's `replace` does, and every other line as before."""
    pytest.importorskip("polars")
    from kalma.kg.columnar import parse_block

    block = (
        b'<http://www.wikidata.org/entity/Q7> <http://www.w3.org/2000/01/rdf-schema#label> "Caf\xe9"@en .\n'
        b"<http://www.wikidata.org/entity/Q7> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5> .\n"
    )
    tables, found, lines = parse_block(block, 1, ("en",), Filter(), "d.nt")
    assert tables["labels"].to_pylist() == [{"id": "Q7", "kind": "label", "lang": "en", "text": "Caf\ufffd"}]
    assert tables["claims"].column("value").to_pylist() == ["Q5"] and found.count == 0 and lines == 2


@pytest.mark.parametrize("keep", [Filter(), Filter(classes=frozenset({"Q5"})), Filter(qids=frozenset({"Q8"}))])
def test_the_columnar_parser_reads_what_the_pattern_parser_reads(tmp_path, keep):
    """Column by column (polars) or by the compiled pattern: the same rows and the same malformed
    lines, on real entities and on lines of every shape the dumps can hold."""
    pytest.importorskip("polars")
    import pyarrow as pa

    from kalma.kg.columnar import parse_block
    from kalma.kg.dumps import Malformed, NTriples, Rows
    from kalma.kg.store import arrow_table

    real = write_nt_dump(tmp_path / "real.nt", entities(), languages=("en", "de")).read_text()
    ended = (real + "\n".join(HOSTILE) + "\n").encode()
    for languages, block in ((("en",), ended), (("en", "de"), ended), (("en",), ended[:-1])):  # the last: no newline at its end
        parser, rows, bad = NTriples(languages, keep), Rows(), Malformed()
        parser.parse(block, rows, bad, "d.nt", 1)
        parser.finish(rows)
        tables, found, lines = parse_block(block, 1, languages, keep, "d.nt")
        want = {"labels": rows.labels, "claims": rows.claims, "properties": rows.props}
        for name, got in tables.items():
            key = lambda r: tuple((v is None, v) for v in r.values())  # noqa: E731
            assert sorted(got.to_pylist(), key=key) == sorted(pa.Table.to_pylist(arrow_table(name, want[name])), key=key), (name, languages)
        assert (found.count, sorted(found.examples)) == (bad.count, sorted(bad.examples)) and found.count >= 2 and lines == block.count(b"\n")
