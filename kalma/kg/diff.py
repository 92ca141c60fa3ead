"""`kalma kg diff OLD NEW -o DIFF`: what changed between two knowledge graphs, triple by triple.

OLD and NEW are two local Wikidata stores (`kalma kg import`), or any two snapshots (a `.ttl` or
`.nt` file, an Oxigraph store folder), or a store and a snapshot. A store's tables are read where
they lie; a snapshot's triples are read by the store's own N-Triples parser (`kalma.kg.dumps`)
into the same columns. Then the same SQL runs on both, in DuckDB: set differences and joins over
the tables, never Python sets.

- **Facts**, per subject and property: the values OLD holds and NEW does not are *removed*, those
  NEW holds and OLD does not are *added*; both at once make one `changed` row (the old values
  and the new ones), one side alone an `added` or a `removed` row. A value is its lexical form
  with its kind, datatype and language (`kalma.kg.store`).
- **Merged** items: a redirect in NEW (`wd:OLD owl:sameAs wd:NEW`) whose old id had claims in
  OLD; **deleted** items: an entity with claims or labels in OLD, nothing in NEW, and no
  redirect. Neither is reported fact by fact: their facts went with them. What a merge gave the
  surviving item is (its new values are `added` to it).
- **Labels**, aliases and descriptions, per entity, kind and language: the texts removed and
  added, as one `label` row (`label_kind` says which).

Each row carries the subject's class (its P31 in NEW, else in OLD), and the counts go per kind,
per property and per class.

The output is a folder: `changes.parquet`, one row per change (`COLUMNS`), and `meta.json`
(`kalma_diff` version, both KGs' identity as `kalma.kg.version` records it, with their paths and
languages, the counts, and what produced it); or with `--jsonl`, one JSON Lines file whose header
holds the same meta. Either is written whole or not at all. `read_diff(path)` reads both.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from . import ntriples as nt

DIFF_VERSION = 1
KIND = "kg_diff"  # the JSON Lines header's kind
KINDS = ("changed", "added", "removed", "merged", "deleted", "label")
WRITES = ("changes.parquet", "meta.json")  # all a DIFF folder holds: --overwrite replaces nothing else
COLUMNS = ("kind", "subject", "pid", "old", "new", "lang", "label_kind", "class")
# a label, alias or description line's language tag: which languages a snapshot holds
_LABEL_LANG = re.compile(f'^<[^>]*> <(?:{"|".join(re.escape(p) for p in nt.LABELS)})> ".*"@({nt.LANG}) *\\.'.encode(), re.M)


@dataclass
class Side:
    """One of the two KGs: where it lies, what it is, and its tables' SQL names once loaded."""

    role: str  # OLD or NEW, as the command line names it
    path: Path
    kind: str  # store | snapshot | oxigraph
    languages: list[str]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> str:
        return {"store": "wikidata-local:", "oxigraph": "oxigraph:", "snapshot": ""}[self.kind] + str(self.path)


def open_side(role: str, path: str | Path) -> Side:
    """What `path` is, checked before any work: a store, a snapshot file, or an Oxigraph store."""
    from .store import STORE_VERSION

    p = Path(path)
    if p.is_dir() and (p / "meta.json").is_file():
        try:
            meta = json.loads((p / "meta.json").read_text())
        except ValueError as exc:
            raise ConfigError(f"{p / 'meta.json'}: not readable JSON ({exc}); the store is damaged: import it again") from None
        if meta.get("kalma_store") != STORE_VERSION:
            raise ConfigError(f"{p}: a store of version {meta.get('kalma_store')!r}; this kalma reads {STORE_VERSION}: import it again")
        return Side(role, p, "store", list(meta.get("options", {}).get("languages", ["en"])), meta)
    if p.is_dir() and (p / "CURRENT").is_file():  # RocksDB's: an Oxigraph store (never created here)
        return Side(role, p, "oxigraph", [])
    if p.is_file() and p.suffix.lower() in (".nt", ".ntriples", ".ttl", ".turtle"):
        return Side(role, p, "snapshot", [])
    what = "a folder that is no store (no meta.json)" if p.is_dir() else "no such file or folder" if not p.exists() else "a file that is no snapshot"
    raise ConfigError(
        f"{role} {p}: {what}; give a local Wikidata store (a compressed dump: `kalma kg import` it first), a .ttl or .nt snapshot, or an Oxigraph store folder"
    )


def check_pair(old: Side, new: Side) -> None:
    """Refuse, in one line, two KGs that cannot be compared fact for fact."""
    if old.path.resolve() == new.path.resolve():
        raise ConfigError(f"OLD and NEW are the same KG ({old.path}): nothing to compare")
    if old.kind == new.kind == "store":
        a, b = old.meta.get("options", {}), new.meta.get("options", {})
        if a.get("format") != b.get("format"):
            raise ConfigError(
                f"OLD {old.path} was imported from a {a.get('format')} dump and NEW {new.path} from a {b.get('format')} dump: "
                "their values are written differently (a JSON dump's dates keep their precision); import both from the same format"
            )
        for key in ("classes", "qids"):
            if a.get(key) != b.get(key):
                raise ConfigError(f"OLD {old.path} and NEW {new.path} keep different subsets ({key}: {a.get(key)} against {b.get(key)}): import both alike")


def _snapshot_rows(side: Side) -> dict[str, Any]:
    """A snapshot's triples as the store's tables (Arrow), read by the store's N-Triples parser;
    its languages are those of its labels."""
    import pyoxigraph as ox

    from .dumps import Filter, Malformed, NTriples, Rows
    from .store import COLUMNAR, arrow_table

    try:
        if side.kind == "oxigraph":
            data = ox.Store.read_only(str(side.path)).dump(format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph())
        else:
            fmt = ox.RdfFormat.N_TRIPLES if side.path.suffix.lower() in (".nt", ".ntriples") else ox.RdfFormat.TURTLE
            data = ox.serialize(ox.parse(path=str(side.path), format=fmt), format=ox.RdfFormat.N_TRIPLES)
    except (SyntaxError, OSError, ValueError, RuntimeError) as exc:
        from ..errors import one_line

        raise ConfigError(f"{side.role} {side.path}: not a readable snapshot ({one_line(exc)[:200]})") from None
    assert data is not None
    side.languages = sorted({m.decode() for m in _LABEL_LANG.findall(data)})
    languages = tuple(side.languages) or ("en",)
    if COLUMNAR:  # as the import reads N-Triples where polars is installed
        from .columnar import parse_block

        return parse_block(data, 1, languages, Filter())[0]
    parser, rows = NTriples(languages, Filter()), Rows()
    parser.parse(data, rows, Malformed())
    parser.finish(rows)
    return {"labels": arrow_table("labels", rows.labels), "claims": arrow_table("claims", rows.claims), "redirects": arrow_table("redirects", rows.redirects)}


def _load(con: Any, side: Side, prefix: str) -> None:
    """`{prefix}_claims`, `{prefix}_labels`, `{prefix}_redirects`: the side's tables in DuckDB."""
    if side.kind == "store":
        from .store import table_view

        for table in ("claims", "labels", "redirects"):
            table_view(con, side.path, table, f"{prefix}_{table}")
        return
    for table, data in _snapshot_rows(side).items():
        con.register(f"{prefix}_{table}_arrow", data)
        con.execute(f"CREATE VIEW {prefix}_{table} AS SELECT * FROM {prefix}_{table}_arrow")


VALUE = "subject, pid, value, value_type, datatype, lang"  # what makes a value: not a JSON dump's precision or calendar
# Every change, one row each (the module docstring's rules), over o_* and n_* tables.
CHANGES_SQL = f"""
CREATE TEMP TABLE o_ids AS SELECT DISTINCT subject AS id FROM o_claims UNION SELECT id FROM o_labels;
CREATE TEMP TABLE n_ids AS SELECT DISTINCT subject AS id FROM n_claims UNION SELECT id FROM n_labels;
CREATE TEMP TABLE gone AS SELECT id FROM o_ids WHERE regexp_full_match(id, '[QP][0-9]+') EXCEPT SELECT id FROM n_ids;
CREATE TEMP TABLE merged AS
  SELECT old_id AS subject, min(new_id) AS target FROM n_redirects WHERE old_id IN (SELECT subject FROM o_claims) GROUP BY old_id;
CREATE TEMP TABLE classes AS
  SELECT coalesce(n.subject, o.subject) AS subject, coalesce(n.class, o.class) AS class
  FROM (SELECT subject, min(value) AS class FROM n_claims WHERE pid = 'P31' GROUP BY subject) n
  FULL OUTER JOIN (SELECT subject, min(value) AS class FROM o_claims WHERE pid = 'P31' GROUP BY subject) o USING (subject);
CREATE TEMP TABLE facts AS
  WITH o AS (SELECT {VALUE} FROM o_claims ANTI JOIN gone ON o_claims.subject = gone.id),
       n AS (SELECT {VALUE} FROM n_claims ANTI JOIN gone ON n_claims.subject = gone.id),
       removed AS (SELECT subject, pid, list_sort(list_distinct(list(value))) AS vals FROM (SELECT * FROM o EXCEPT SELECT * FROM n) GROUP BY subject, pid),
       added AS (SELECT subject, pid, list_sort(list_distinct(list(value))) AS vals FROM (SELECT * FROM n EXCEPT SELECT * FROM o) GROUP BY subject, pid)
  SELECT CASE WHEN removed.vals IS NULL THEN 'added' WHEN added.vals IS NULL THEN 'removed' ELSE 'changed' END AS kind,
         coalesce(removed.subject, added.subject) AS subject, coalesce(removed.pid, added.pid) AS pid,
         coalesce(removed.vals, []::VARCHAR[]) AS old, coalesce(added.vals, []::VARCHAR[]) AS new
  FROM removed FULL OUTER JOIN added ON removed.subject = added.subject AND removed.pid = added.pid;
CREATE TEMP TABLE label_changes AS
  WITH o AS (SELECT id, kind, lang, text FROM o_labels ANTI JOIN gone USING (id)),
       n AS (SELECT id, kind, lang, text FROM n_labels ANTI JOIN gone USING (id)),
       removed AS (SELECT id, kind, lang, list_sort(list(text)) AS texts FROM (SELECT * FROM o EXCEPT SELECT * FROM n) GROUP BY id, kind, lang),
       added AS (SELECT id, kind, lang, list_sort(list(text)) AS texts FROM (SELECT * FROM n EXCEPT SELECT * FROM o) GROUP BY id, kind, lang)
  SELECT id, kind, lang, coalesce(removed.texts, []::VARCHAR[]) AS old, coalesce(added.texts, []::VARCHAR[]) AS new
  FROM removed FULL OUTER JOIN added USING (id, kind, lang);
CREATE TEMP TABLE changes AS
  SELECT c.*, classes.class AS class FROM (
    SELECT kind, subject, pid, old, new, NULL::VARCHAR AS lang, NULL::VARCHAR AS label_kind FROM facts
    UNION ALL SELECT 'merged', subject, NULL, []::VARCHAR[], [target], NULL, NULL FROM merged
    UNION ALL SELECT 'deleted', id, NULL, []::VARCHAR[], []::VARCHAR[], NULL, NULL FROM gone WHERE id NOT IN (SELECT old_id FROM n_redirects)
    UNION ALL SELECT 'label', id, NULL, old, new, lang, kind FROM label_changes
  ) c LEFT JOIN classes USING (subject);
"""
ORDER = "kind, subject, pid NULLS FIRST, label_kind NULLS FIRST, lang NULLS FIRST"  # one order, whatever the engine's threads


def compute(old: Side, new: Side, threads: int | None = None, spill: Path | None = None) -> tuple[Any, dict[str, Any]]:
    """The changes (an Arrow table, `COLUMNS`) and their counts: per kind, per property, per class."""
    from .store import DUCKDB_MEMORY, connect

    # past its memory limit DuckDB spills to `spill`, as the import's final step does
    con = connect(threads, os.environ.get("KALMA_DUCKDB_MEMORY", DUCKDB_MEMORY), spill)
    con.execute("SET enable_progress_bar = false")  # (DuckDB's bar goes to stdout, where the command says what it wrote)
    try:
        _load(con, old, "o")
        _load(con, new, "n")
        if old.kind != "store" or new.kind != "store":  # a snapshot's languages are known once read
            _check_languages(old, new)
        con.execute(CHANGES_SQL)
        table = con.sql(f"SELECT {', '.join(COLUMNS)} FROM changes ORDER BY {ORDER}").to_arrow_table()
        counts: dict[str, Any] = {"kinds": dict.fromkeys(KINDS, 0), "properties": {}, "classes": {}}
        for kind, n in con.execute("SELECT kind, count(*) FROM changes GROUP BY kind").fetchall():
            counts["kinds"][kind] = n
        for by, column in (("properties", "pid"), ("classes", "class")):
            for key, kind, n in con.execute(f"SELECT {column}, kind, count(*) FROM changes WHERE {column} IS NOT NULL GROUP BY ALL ORDER BY ALL").fetchall():
                counts[by].setdefault(key, {})[kind] = n
        return table, counts
    finally:
        con.close()


def _check_languages(old: Side, new: Side) -> None:
    if old.languages != new.languages:
        said = {s.role: ", ".join(s.languages) or "none" for s in (old, new)}
        raise ConfigError(
            f"OLD {old.path} holds labels in {said['OLD']} and NEW {new.path} in {said['NEW']}: "
            "a label missing on one side would read as a change; compare two KGs of the same languages"
        )


def identity(side: Side) -> dict[str, Any]:
    """A KG's identity as `kalma.kg.version` records it, with its path and languages."""
    from .version import kg_version

    return {**kg_version(side.spec), "path": str(side.path.resolve()), "languages": side.languages, "source": side.kind}


def diff(
    old_path: str | Path, new_path: str | Path, output: str | Path, jsonl: bool = False, overwrite: bool = False, threads: int | None = None
) -> dict[str, Any]:
    """Compare OLD with NEW and write DIFF (see the module docstring); returns its meta."""
    from ..folders import check_replaceable
    from ..provenance import provenance

    old, new = open_side("OLD", old_path), open_side("NEW", new_path)
    check_pair(old, new)
    if old.kind == new.kind == "store":
        _check_languages(old, new)
    output = Path(output)
    if jsonl:
        if os.path.lexists(output) and (not overwrite or output.is_dir()):
            raise ConfigError(f"{output} exists{' and is a folder' if output.is_dir() else ''}; nothing was written (pass --overwrite to replace a diff file)")
    else:
        check_replaceable(output, overwrite, WRITES, "kalma kg diff")
    where = output.parent if output.parent.is_dir() else None  # beside DIFF: its disk, not /tmp's
    with tempfile.TemporaryDirectory(prefix=f".{output.name}.spill-", dir=where) as spill:
        table, counts = compute(old, new, threads, Path(spill))
    meta = {
        "kalma_diff": DIFF_VERSION,
        "old": identity(old),
        "new": identity(new),
        "rows": table.num_rows,
        "counts": counts,
        "provenance": provenance(command="kalma kg diff", threads=threads),
    }
    if jsonl:
        _write_jsonl(output, meta, table)
    else:
        _write_folder(output, meta, table, overwrite)
    return meta


def _write_folder(output: Path, meta: dict[str, Any], table: Any, overwrite: bool) -> None:
    import pyarrow.parquet as pq

    from ..folders import replacing
    from ..jsonl import dumps

    with replacing(output, overwrite, WRITES, "kalma kg diff") as tmp:
        pq.write_table(table, tmp / "changes.parquet")
        (tmp / "meta.json").write_text(dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_jsonl(output: Path, meta: dict[str, Any], table: Any) -> None:
    from ..jsonl import dumps, make_header

    tmp = output.with_name(f".{output.name}.tmp")
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            said = {k: v for k, v in meta.items() if k != "provenance"}
            fh.write(dumps(make_header(KIND, meta["provenance"], diff=said), ensure_ascii=False) + "\n")
            for batch in table.to_batches(65536):
                fh.writelines(dumps(row, ensure_ascii=False) + "\n" for row in batch.to_pylist())
        os.replace(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)


# ---------------------------------------------------------------- reading a diff


@dataclass
class Diff:
    """A diff as written: its meta (`kalma_diff`, `old`, `new`, `rows`, `counts`, `provenance`) and
    its changes, one dict per row (`COLUMNS`)."""

    meta: dict[str, Any]
    changes: list[dict[str, Any]]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.changes)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [c for c in self.changes if c["kind"] == kind]

    def facts(self) -> dict[tuple[str, str], dict[str, Any]]:
        """{(subject, pid): its changed, added or removed row}."""
        return {(c["subject"], c["pid"]): c for c in self.changes if c["pid"] is not None}

    def merged(self) -> dict[str, str]:
        """{old id: the id it was merged into}."""
        return {c["subject"]: c["new"][0] for c in self.of("merged")}

    def deleted(self) -> set[str]:
        return {c["subject"] for c in self.of("deleted")}

    def labels(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        """{(id, label_kind, lang): its row}."""
        return {(c["subject"], c["label_kind"], c["lang"]): c for c in self.of("label")}


def read_diff(path: str | Path) -> Diff:
    """A DIFF folder or `--jsonl` file as `kalma kg diff` wrote it; one line naming it otherwise."""
    from ..jsonl import HEADER_KEY, read_header

    p = Path(path)
    if p.is_dir():
        if not (p / "meta.json").is_file() or not (p / "changes.parquet").is_file():
            raise ConfigError(f"{p}: not a diff written by `kalma kg diff` (no meta.json and changes.parquet)")
        import pyarrow.parquet as pq

        meta = json.loads((p / "meta.json").read_text(encoding="utf-8"))
        changes = pq.read_table(p / "changes.parquet").to_pylist()
    elif p.is_file():
        header = read_header(p)
        if header.get("kind") != KIND:
            raise ConfigError(f"{p}:1: not a diff written by `kalma kg diff --jsonl` (its header's kind is {header.get('kind')!r})")
        meta = {**header["diff"], "provenance": header.get("provenance", {})}
        with p.open(encoding="utf-8") as fh:
            changes = [json.loads(line) for line in fh if line.strip() and not line.startswith(f'{{"{HEADER_KEY}"')]
    else:
        raise ConfigError(f"{p}: no such diff (a folder or a .jsonl file `kalma kg diff` wrote)")
    if meta.get("kalma_diff") != DIFF_VERSION:
        raise ConfigError(f"{p}: a diff of version {meta.get('kalma_diff')!r}; this kalma reads {DIFF_VERSION}")
    if len(changes) != meta.get("rows"):
        raise ConfigError(f"{p}: {len(changes)} changes where its meta counts {meta.get('rows')}: the diff is damaged; write it again")
    return Diff(meta, changes)
