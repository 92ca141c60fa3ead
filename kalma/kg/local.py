"""Local snapshot files: rdflib in memory (default), pyoxigraph for large snapshots."""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ConfigError, one_line
from .base import Row, SparqlSource, Term


def _format_for(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in {".nt", ".ntriples"}:
        return "nt"
    if suffix in {".ttl", ".turtle"}:
        return "turtle"
    raise ConfigError(f"{path}: snapshot must be Turtle (.ttl) or N-Triples (.nt)")


def _readable(path: Path) -> Path:
    if not path.exists():
        raise ConfigError(f"{path}: no such snapshot file or store")
    return path


@contextmanager
def quiet_rdflib() -> Iterator[None]:
    """rdflib logs a traceback for every BCE xsd:dateTime (Python's datetime has no year < 1);
    the lexical form is kept intact, so the noise is dropped."""
    logger = logging.getLogger("rdflib.term")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


class RdflibSource(SparqlSource):
    """A snapshot loaded into an rdflib Graph: simple, pure Python, fine up to ~10^5 triples."""

    name = "rdflib"

    def __init__(self, path: str | Path, lang: str = "en", fallback: str | None = None):
        super().__init__(lang, fallback)
        import rdflib

        self.path = _readable(Path(path))
        self.graph = rdflib.Graph()
        try:
            with quiet_rdflib():
                self.graph.parse(str(self.path), format=_format_for(self.path))
        except (SyntaxError, ValueError, UnicodeDecodeError) as exc:  # rdflib's parse errors derive from these
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{self.path}: not a valid {_format_for(self.path)} snapshot ({one_line(exc)})") from None

    def _select(self, query: str, required: Sequence[str] = (), allowed: Mapping[str, Collection[str]] | None = None) -> list[Row]:
        from rdflib import BNode, Literal, URIRef
        from rdflib.query import ResultRow

        def term(t: object) -> Term:
            if isinstance(t, URIRef):
                return {"type": "uri", "value": str(t)}
            if isinstance(t, BNode):
                return {"type": "bnode", "value": str(t)}
            assert isinstance(t, Literal)
            out: Term = {"type": "literal", "value": str(t)}
            if t.language:
                out["lang"] = t.language
            elif t.datatype:
                out["datatype"] = str(t.datatype)
            return out

        with quiet_rdflib():
            res = self.graph.query(_prepared(query))
        names = [str(v) for v in res.vars or []]
        rows = [row for row in res if isinstance(row, ResultRow)]
        return [{n: term(row[i]) for i, n in enumerate(names) if row[i] is not None} for row in rows]

    def _construct(self, query: str) -> str:
        graph = self.graph.query(query).graph
        if graph is None:
            raise ValueError("not a CONSTRUCT query")
        return graph.serialize(format="nt")


@functools.lru_cache(maxsize=64)
def _prepared(query: str) -> Any:
    """`query` parsed once per process: rdflib parses a query's text anew on every call (with
    pyparsing, two fifths of the time the demo dataset takes), and the same queries recur."""
    from rdflib.plugins.sparql import prepareQuery

    with quiet_rdflib():
        return prepareQuery(query)


def demo(lang: str = "en", fallback: str | None = None) -> RdflibSource:
    """`demo`: the bundled snapshot of the paper's people (its labels are English)."""
    from . import demo_snapshot_path

    return RdflibSource(demo_snapshot_path(), lang, fallback)


class OxigraphSource(SparqlSource):
    """A snapshot in a pyoxigraph store: a file bulk-loaded into memory, or an on-disk store
    directory (created by `oxigraph load` or an earlier run) opened as is."""

    name = "oxigraph"

    def __init__(self, path: str | Path, lang: str = "en", fallback: str | None = None):
        super().__init__(lang, fallback)
        import pyoxigraph as ox

        self.path = _readable(Path(path))
        try:
            if self.path.is_dir():
                self.store = ox.Store(str(self.path))
            else:
                fmt = ox.RdfFormat.N_TRIPLES if _format_for(self.path) == "nt" else ox.RdfFormat.TURTLE
                self.store = ox.Store()
                self.store.bulk_load(path=str(self.path), format=fmt)
        except (SyntaxError, OSError, ValueError, RuntimeError) as exc:  # pyoxigraph: SyntaxError for bad RDF, OSError or RuntimeError for a bad store
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{self.path}: not a readable snapshot or Oxigraph store ({one_line(exc)})") from None

    def _select(self, query: str, required: Sequence[str] = (), allowed: Mapping[str, Collection[str]] | None = None) -> list[Row]:
        import pyoxigraph as ox

        def term(t: object) -> Term:
            if isinstance(t, ox.NamedNode):
                return {"type": "uri", "value": t.value}
            if isinstance(t, ox.BlankNode):
                return {"type": "bnode", "value": t.value}
            assert isinstance(t, ox.Literal)
            out: Term = {"type": "literal", "value": t.value}
            if t.language:
                out["lang"] = t.language
            elif t.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
                out["datatype"] = t.datatype.value
            return out

        res = self.store.query(query)
        if not isinstance(res, ox.QuerySolutions):
            raise ValueError("not a SELECT query")
        names = [v.value for v in res.variables]
        return [{n: term(sol[n]) for n in names if sol[n] is not None} for sol in res]

    def _construct(self, query: str) -> str:
        import pyoxigraph as ox

        res = self.store.query(query)
        if not isinstance(res, ox.QueryTriples):
            raise ValueError("not a CONSTRUCT query")
        data = res.serialize(format=ox.RdfFormat.N_TRIPLES)
        assert data is not None  # None only when given an output to write to
        return data.decode("utf-8")
