"""Knowledge-graph sources behind one protocol.

Open one with a spec string:

| spec | source |
|---|---|
| `path.ttl`, `path.nt`, `rdflib:PATH` | a snapshot file in rdflib (default) |
| `oxigraph:PATH` | a snapshot file or store directory in pyoxigraph, for large snapshots |
| `sparql:URL` | any SPARQL 1.1 endpoint |
| `wikidata` | Wikidata's query service |
| `wikidata-local:STORE` | a local Wikidata built from its dumps (`kalma kg import`), answered by DuckDB |
| `demo` | the bundled demo snapshot |

A new source is one class plus one `SOURCES.add` line (or a `kalma.kg` entry point in another
package). Remote sources take retry options: `sparql:URL,attempts=3,timeout=30`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..registry import Registry
from .base import KnowledgeSource, SparqlSource

DEMO_SNAPSHOT = "demo_kg.ttl"


def demo_snapshot_path() -> Path:
    return Path(str(resources.files("kalma") / "data" / DEMO_SNAPSHOT))


SOURCES: Registry[KnowledgeSource] = Registry("knowledge source", "kalma.kg")
SOURCES.add("rdflib", "kalma.kg.local:RdflibSource")
SOURCES.add("oxigraph", "kalma.kg.local:OxigraphSource")
SOURCES.add("sparql", "kalma.kg.remote:endpoint")
SOURCES.add("wikidata", "kalma.kg.remote:wikidata", argument="none")
SOURCES.add("demo", "kalma.kg.local:demo", argument="none")
SOURCES.add("wikidata-local", "kalma.kg.store:LocalWikidata")
_SNAPSHOT_SUFFIXES = {".ttl", ".nt", ".turtle", ".ntriples"}


def _full_spec(spec: str) -> str:
    """A bare `.ttl`/`.nt` path is an rdflib snapshot."""
    name = spec.partition(":")[0].partition(",")[0]
    if name not in SOURCES.names() and Path(spec).suffix.lower() in _SNAPSHOT_SUFFIXES and (":" not in spec or Path(spec).exists()):
        return f"rdflib:{spec}"
    return spec


def open_source(spec: str, language: str | None = None, label_fallback: str | None = None) -> KnowledgeSource:
    """Open a knowledge source from its spec string (see the module docstring), answering in
    `language` (a stage's `--language`; the spec's own `lang=` option must agree with it; None:
    as the spec says, English by default) and, where `label_fallback` is given, in that language
    for what has no label in `language`."""
    return SOURCES.build(_full_spec(spec), **language_options(spec, language, label_fallback))


def language_options(spec: str, language: str | None = None, label_fallback: str | None = None) -> dict[str, str]:
    """The `lang` and `fallback` options a stage adds to `spec`; nothing for English with no
    fallback, so that every source, another package's too, opens as it did before languages."""
    from ..errors import ConfigError
    from ..languages import check_tag
    from ..registry import parse_spec

    full = _full_spec(spec)
    _, _, given = parse_spec(full, SOURCES.entry(full.partition(":")[0].partition(",")[0]).raw)
    out = {}
    for key, value, option in (
        ("lang", language and check_tag(language), "--language"),
        ("fallback", label_fallback and check_tag(label_fallback, "--label-fallback"), "--label-fallback"),
    ):
        if key in given and value and check_tag(given[key], f"--kg {spec}: {key}") != value:
            raise ConfigError(f"--kg {spec}: {key}={given[key]} but {option} {value}: give one")
        if key not in given and value and (key, value) != ("lang", "en"):
            out[key] = value
    return out


def check_source(spec: str) -> None:
    """The ConfigError `open_source` would raise for the spec itself, without opening anything."""
    SOURCES.check(_full_spec(spec))


__all__ = ["KnowledgeSource", "SparqlSource", "open_source", "check_source", "SOURCES", "demo_snapshot_path"]
