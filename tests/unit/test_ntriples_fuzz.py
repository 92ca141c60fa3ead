"""The two N-Triples parsers against each other and against rdflib's N-Triples parser, on lines
generated over the grammar's edges (issue 54; the generator and the check are in
`perf/ntriples_lines.py`, which `python -m perf.ntriples_fuzz` runs for minutes). `make test` runs
`BLOCKS` blocks of seed `SEED` (a few seconds), each read under every filter.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from perf.ntriples_lines import BLOCKS, SEED, block, fuzz


@pytest.fixture
def every_malformed_line(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every malformed line named, not the first five: what the parsers name is compared whole;
    and rdflib's literals as written (it normalizes a date's lexical form, and logs a traceback
    for each it cannot read as a Python date)."""
    from kalma.kg.local import quiet_rdflib

    monkeypatch.setattr("kalma.kg.dumps.EXAMPLES", 10**6)
    monkeypatch.setattr("rdflib.NORMALIZE_LITERALS", False)
    with quiet_rdflib():
        yield


def test_the_parsers_agree_with_each_other_and_with_rdflib(every_malformed_line):
    pytest.importorskip("polars")
    seen = fuzz(SEED, BLOCKS)
    # the generator reaches what it is for: well-formed and malformed lines, rows of every table
    assert seen["well-formed lines"] > seen["lines"] // 2 and seen["malformed"] > 50 and seen["rows"] > 1000, seen


def test_the_generator_covers_the_edges():
    """Every edge of the module docstring is in the lines `fuzz` reads."""
    rng = random.Random(SEED)
    data = b"".join(block(rng) + b"\n" for _ in range(BLOCKS))
    for edge in [
        b"  .\n",
        b"\t.\n",
        b">.\n",
        b" . \n",
        b" .\r\n",
        b"<http://x/a>b>",
        b"_:b 0",
        b"@en US",
        b"#directClaim> <",
        b"\\u00e9",
        b"\\uD83D\\uDE00",
        b"\\b",
        b"\\f",
        b"@es-419",
        b"owl#sameAs> <http://www.wikidata.org/entity/Q",  # a redirect
        b"owl#sameAs> <http://www.wikidata.org/prop/direct/P31>",  # an owl:sameAs that is none
    ]:
        assert edge in data, edge
    assert any(not c.endswith(b"\n") for c in _blocks(SEED)), "a block whose last line has no newline"
    with pytest.raises(UnicodeDecodeError):
        data.decode()


def _blocks(seed: int) -> Iterator[bytes]:
    rng = random.Random(seed)
    for _ in range(BLOCKS):
        yield block(rng)
