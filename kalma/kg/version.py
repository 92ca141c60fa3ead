"""A knowledge graph's identity, for provenance: which KG, as of when, with which content.

A dataset is true of the KG it was built on; to say later whether it still holds (`kalma dataset
check`) or what it was refreshed against, its header records that KG's version:

| key | what |
|---|---|
| `spec` | the spec it was opened with |
| `kind` | the source's registry name (`rdflib`, `oxigraph`, `wikidata-local`, `sparql`, …) |
| `dump_date` | the date of the dump a local store was imported from (its `meta.json`); None otherwise |
| `digest` | a snapshot file's sha256; a store's from its meta and table files (cheap: see `store_digest`); None for an endpoint |
| `languages` | the label languages it holds (a store's import options) or answers in |

Two versions with the same digest are the same KG; None as a digest is never equal to anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..registry import parse_spec
from ..resume import path_digest, value_digest

LIVE = ("sparql", "wikidata")  # endpoints: no dump date, no digest


def kg_version(spec: str) -> dict[str, Any]:
    """The version of the KG `spec` names (see the module docstring); nothing is opened but
    the files that identify it."""
    from . import _full_spec, demo_snapshot_path

    kind, argument, options = parse_spec(_full_spec(spec))
    languages = [options.get("lang", "en")]
    dump_date, digest = None, None
    if kind == "demo":
        digest = path_digest(demo_snapshot_path())
    elif kind == "wikidata-local":
        from .store import read_meta

        meta = read_meta(Path(argument))
        dump_date = meta.get("dump", {}).get("date")
        languages = list(meta.get("options", {}).get("languages", languages))
        digest = store_digest(Path(argument), meta)
    elif kind not in LIVE and Path(argument).is_file():
        digest = path_digest(argument)
    elif kind not in LIVE and Path(argument).is_dir():  # an Oxigraph store folder: its files by name and size
        digest = value_digest(sorted((p.relative_to(argument).as_posix(), p.stat().st_size) for p in Path(argument).rglob("*") if p.is_file()))
    return {"spec": spec, "kind": kind, "dump_date": dump_date, "digest": digest, "languages": languages}


def store_digest(store: Path, meta: dict[str, Any]) -> str:
    """A local store's identity: what its meta says of the dump, options and rows (not when or how
    fast it was imported: a re-import of the same dump is the same store), and its tables' files by
    name and size."""
    dump = {k: v for k, v in meta.get("dump", {}).items() if k in ("size", "date", "compression")}
    files = sorted((p.relative_to(store).as_posix(), p.stat().st_size) for t in ("labels", "claims", "properties") for p in (store / t).glob("*.parquet"))
    return value_digest({"store": meta.get("kalma_store"), "dump": dump, "options": meta.get("options"), "rows": meta.get("rows"), "files": files})


def dataset_kg_version(header: dict[str, Any]) -> dict[str, Any] | None:
    """The version of the KG a dataset holds true for, as its header (`read_header`'s) records it:
    its newest refresh's, else its build's; None for a dataset made before kalma recorded it."""
    made = header.get("provenance")
    made = made if isinstance(made, dict) else {}
    refreshed = made.get("refreshed")
    found = (refreshed.get("kg_version") if isinstance(refreshed, dict) else None) or made.get("kg_version")
    return found if isinstance(found, dict) else None


def same_kg(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two recorded versions name the same content (an endpoint's never does)."""
    return bool(a and b and a.get("digest") and a.get("digest") == b.get("digest"))


def describe(version: dict[str, Any]) -> str:
    """One line for a card or a changelog: `wikidata-local:STORE (dump 2026-11-18, sha256:1a2b3c4d5e6f)`."""
    facts = [f"dump {version['dump_date']}" if version.get("dump_date") else "", (version.get("digest") or "no digest: a live endpoint")[:19]]
    return f"{version['spec']} ({', '.join(f for f in facts if f)})"
