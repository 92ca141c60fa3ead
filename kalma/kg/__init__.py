"""Knowledge-graph sources behind one protocol.

Open one with a spec string:

| spec | source |
|---|---|
| `path.ttl`, `path.nt`, `rdflib:PATH` | a snapshot file in rdflib (default) |
| `oxigraph:PATH` | a snapshot file or store directory in pyoxigraph, for large snapshots |
| `sparql:URL` | any SPARQL 1.1 endpoint |
| `wikidata` | Wikidata's query service |
| `demo` | the bundled demo snapshot |

A new source is one class plus one entry in `SOURCES`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from .base import KnowledgeSource, SparqlSource

DEMO_SNAPSHOT = "demo_kg.ttl"


def demo_snapshot_path() -> Path:
    return Path(str(resources.files("kalma") / "data" / DEMO_SNAPSHOT))


def _rdflib(arg: str) -> SparqlSource:
    from .local import RdflibSource

    return RdflibSource(arg)


def _oxigraph(arg: str) -> SparqlSource:
    from .local import OxigraphSource

    return OxigraphSource(arg)


def _sparql(arg: str) -> SparqlSource:
    from .remote import EndpointSource

    return EndpointSource(arg)


def _wikidata(arg: str) -> SparqlSource:
    from .remote import WIKIDATA_ENDPOINT, EndpointSource

    return EndpointSource(WIKIDATA_ENDPOINT)


def _demo(arg: str) -> SparqlSource:
    from .local import RdflibSource

    return RdflibSource(demo_snapshot_path())


SOURCES: dict[str, Callable[[str], SparqlSource]] = {
    "rdflib": _rdflib,
    "oxigraph": _oxigraph,
    "sparql": _sparql,
    "wikidata": _wikidata,
    "demo": _demo,
}


def open_source(spec: str) -> SparqlSource:
    """Open a knowledge source from its spec string (see the module docstring)."""
    kind, sep, arg = spec.partition(":")
    if kind in SOURCES and (sep or kind in {"wikidata", "demo"}):
        return SOURCES[kind](arg)
    if (not sep or Path(spec).exists()) and Path(spec).suffix.lower() in {".ttl", ".nt", ".turtle", ".ntriples"}:
        return _rdflib(spec)
    close = difflib.get_close_matches(kind, SOURCES, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"unknown knowledge source {spec!r}: use one of {sorted(SOURCES)} or a .ttl/.nt path.{hint}")


__all__ = ["KnowledgeSource", "SparqlSource", "open_source", "SOURCES", "demo_snapshot_path"]
