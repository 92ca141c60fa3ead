"""A local Wikidata: a store built from Wikidata's dumps (`kalma kg import`), answered by DuckDB.

The store is a folder of Parquet tables, the layout both the one-machine import and the Spark
job (`kalma.kg.spark_import`) write:

| table | columns | sorted by |
|---|---|---|
| `labels/` | id, kind (label, alias, description), lang, text | id |
| `claims/` | subject, pid, value, value_type (item, uri, literal, bnode), datatype, lang, precision, calendar | subject |
| `properties/` | pid, type (`ExternalId`, `WikibaseItem`, …), direct (its `wdt:` predicate is stated) | pid |

plus `meta.json` (the dump it came from, the languages, the filter, the counts, what it
skipped as malformed). An entity of Wikidata is its id (`Q42`, `P31`); any other IRI is written
whole. Values keep their lexical form and datatype as the truthy dump writes them (dates with
their sign; from the JSON dump also their precision and calendar model).

The import streams the dump once (`kalma.kg.dumps`), writing parts under `parts/` and a
checkpoint after each; killed, it resumes from the last checkpoint with no row lost or doubled
(the parts written after it are removed). Its last step (`finalize`) has DuckDB deduplicate and
sort each table, and with a subset (`--classes Q5`, `--qids`) keep the labels of what the kept
claims name, and nothing else.

`LocalWikidata` (`wikidata-local:STORE`) answers the knowledge-source protocol from the store
with one SQL query per call, whatever the number of entities asked, and assembles its answers
with the same code as the SPARQL sources (`kalma.kg.base`): it answers as Oxigraph or an
endpoint do on the same triples (the contract tests hold it to that).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import sys
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import closing
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..folders import check_replaceable
from ..jsonl import dumps
from ..schema import EntityGraph, Triple
from . import ntriples as nt
from .base import Info, LabelNotes, Row, Term, assemble_graphs, best_labelled, class_status, entity_info, label_languages, row_to_triple
from .dumps import BLOCK, EXAMPLES, Block, JsonEntities, Malformed, NTriples, Rows, blocks, check_dump, decoder_name, dump_format, open_dump
from .dumps import Filter as Filter

STORE_VERSION = 1
TABLES = ("labels", "claims", "properties", "redirects")
WRITES = ("meta.json", "parts", ".duckdb-spill", *TABLES)  # all a store holds: --overwrite replaces nothing else
COLUMNS = {
    "labels": (("id", "string"), ("kind", "string"), ("lang", "string"), ("text", "string")),
    "claims": (
        ("subject", "string"),
        ("pid", "string"),
        ("value", "string"),
        ("value_type", "string"),
        ("datatype", "string"),
        ("lang", "string"),
        ("precision", "int8"),
        ("calendar", "string"),
    ),
    "properties": (("pid", "string"), ("type", "string"), ("direct", "bool")),
    "redirects": (("old_id", "string"), ("new_id", "string")),
}
OPTIONAL = {"redirects"}  # tables a store made before them lacks: read as empty
SORT = {"labels": "id, kind, lang, text", "claims": "subject, pid, value, value_type, datatype, lang", "properties": "pid", "redirects": "old_id, new_id"}
PART_ROWS = 2_000_000  # rows buffered before a part (and a checkpoint) is written
# N-Triples column by column where polars is installed; KALMA_COLUMNAR=0 takes the pattern parser
COLUMNAR = os.environ.get("KALMA_COLUMNAR", "1") != "0" and importlib.util.find_spec("polars") is not None
LOG_EVERY = 30.0  # seconds between progress lines when stderr is not a terminal
DUCKDB_MEMORY = "4GB"  # the final step's limit (KALMA_DUCKDB_MEMORY overrides)


def arrow_schema(table: str) -> Any:
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, "bool_" if kind == "bool" else kind)()) for name, kind in COLUMNS[table]])


def arrow_table(table: str, rows: list[tuple[Any, ...]]) -> Any:
    """Rows of `table` (columns as `COLUMNS` says) as an Arrow table."""
    import pyarrow as pa

    names = [n for n, _ in COLUMNS[table]]
    columns: list[Any] = list(zip(*rows)) if rows else [() for _ in names]
    return pa.table({n: list(c) for n, c in zip(names, columns)}, schema=arrow_schema(table))


def write_part(folder: Path, table: str, data: Any, index: int) -> Path:
    """One Parquet part of `table` (an Arrow table, or several), written whole or not at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(data, list):
        data = pa.concat_tables(data) if data else arrow_table(table, [])
    path = folder / f"{table}-{index:05d}.parquet"
    tmp = path.with_suffix(".tmp")
    # LZ4: a part lives until the final step, and Snappy cost the streaming pass 1.1 CPU-s per GB
    # of input against 0.65 (perf/wikidata_scale --steps stages)
    pq.write_table(data, tmp, compression="lz4")
    os.replace(tmp, path)
    return path


@dataclass
class Progress:
    """Where an import stands: what the checkpoint records, and what the report says."""

    dump: dict[str, Any]
    options: dict[str, Any]
    offset: int = 0  # decompressed bytes parsed, up to a block end
    lines: int = 0
    parts: int = 0
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    malformed: int = 0
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0
    done: bool = False


def _dump_identity(path: Path) -> dict[str, Any]:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def import_dump(
    dump: str | Path,
    store: str | Path,
    languages: Sequence[str] = ("en",),
    keep: Filter | None = None,
    threads: int | None = None,
    progress: bool = True,
    part_rows: int = PART_ROWS,
    block_size: int = BLOCK,
    on_checkpoint: Callable[[Progress], None] | None = None,
    replace_other: bool = False,
) -> dict[str, Any]:
    """Import `dump` into `store` (see the module docstring); returns its `meta.json`. This thread
    decodes the dump and cuts it into blocks; `threads` workers (default: one per core) parse them
    (`_parsed`) and their rows come back in dump order, so a checkpoint always covers a prefix of
    the dump; parts and checkpoints are written by a thread of their own (`_Writer`).

    `on_checkpoint(state)` is called as each part is handed to the writer: what it raises stops
    the import there, as a kill would, with that part and its checkpoint written (the resume tests
    stop imports so). With `replace_other`, an import of another dump or with other options found
    in `store` is removed, not refused: the staging folder of `kg import --overwrite`, which that
    command alone writes."""
    dump, store, keep = Path(dump), Path(store), keep or Filter()
    if not dump.is_file():
        raise ConfigError(f"{dump}: no such dump file")
    fmt, compression = dump_format(dump)
    check_dump(dump, fmt, compression)  # before anything is written: a file that is no dump leaves nothing
    identity = _dump_identity(dump)
    options = {"languages": list(languages), "classes": sorted(keep.classes), "qids": len(keep.qids), "format": fmt}
    finished = _finished(store, identity, options, replace_other)
    if finished is not None:
        return {**finished, "already": True}
    state = _resume(store, identity, options, replace_other)
    if state.parts and progress:
        print(f"resuming the import into {store} after {state.lines:,} lines ({state.offset / 1e6:,.0f} MB decompressed, part {state.parts})", file=sys.stderr)
    (store / "parts").mkdir(parents=True, exist_ok=True)
    if not (store / "parts" / "checkpoint.json").is_file():  # at once: a kill from here on leaves an import the same command resumes
        _save(store, state)
    setup = (fmt, tuple(languages), keep)
    cut = NTriples.cut if fmt == "nt" else JsonEntities.cut
    pending: dict[str, list[Any]] = {t: [] for t in TABLES}
    began = time.monotonic() - state.seconds
    bar = _bar(progress, state.offset, decoder_name(compression, threads))
    workers = threads or os.cpu_count() or 1
    # with stderr not a terminal the bar is off: a line every LOG_EVERY seconds says the import lives
    logged = time.monotonic() if progress and not sys.stderr.isatty() else None
    writer = _Writer(store)
    main_thread = time.thread_time()  # this thread's CPU alone: what bounds the import on many cores
    try:
        # (closed on the way out of an error too: the parsers stop, not only when collected)
        with open_dump(dump, compression, threads) as stream, closing(_parsed(blocks(stream, state.offset, cut, block_size), setup, workers)) as parsed:
            for tables, found, end, lines in parsed:
                for table, rows in tables.items():
                    if rows.num_rows:
                        pending[table].append(rows)
                state.malformed += found.count
                state.examples += found.named(str(dump), state.lines)[: EXAMPLES - len(state.examples)]
                bar.update(end - state.offset)
                state.offset, state.lines = end, state.lines + lines
                if logged is not None and time.monotonic() - logged >= LOG_EVERY:
                    logged = time.monotonic()
                    print(f"import: {state.lines:,} lines, {state.offset / 1e6:,.0f} MB decompressed, {_rate(state, began)}", file=sys.stderr, flush=True)
                if sum(t.num_rows for ts in pending.values() for t in ts) >= part_rows:
                    writer.submit(_checkpoint(state, pending, began))
                    bar.set_postfix_str(_rate(state, began))
                    if on_checkpoint is not None:
                        on_checkpoint(state)
        state.done = True
        writer.submit(_checkpoint(state, pending, began))
    except BaseException:
        writer.close(check=False)  # the part in flight is still written: a rerun resumes from its checkpoint
        raise
    finally:
        bar.close()
    writer.close()
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    (store / "parts" / "reading.json").write_text(  # the streaming pass's own figures, before DuckDB's step
        dumps(
            {
                "peak_rss_mb": me.ru_maxrss // 1024,
                "cpu_s_main": round(me.ru_utime + me.ru_stime, 3),
                "cpu_s_main_thread": round(time.thread_time() - main_thread, 3),
                "cpu_s_workers": round(kids.ru_utime + kids.ru_stime, 3),
            }
        )
    )
    return finalize(store, keep, threads, decoder=decoder_name(compression, threads), compression=compression, workers=workers)


Parsed = tuple[dict[str, Any], Malformed, int, int]  # a block's tables, what was malformed, where it ends, its lines
_PARSER: Any = None  # each worker's parser, made once (`_start`)


def _start(fmt: str, languages: tuple[str, ...], keep: Filter) -> None:
    global _PARSER
    _die_with_parent()
    _PARSER = NTriples(languages, keep) if fmt == "nt" else JsonEntities(languages, keep)


def _die_with_parent() -> None:
    """A parser process ends when the import does, even killed (SIGKILL runs no cleanup): Linux's
    parent-death signal. Elsewhere the pool's own shutdown is all there is."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the signal was set
        os._exit(1)


def _parse_one(job: tuple[int, Block]) -> Parsed:
    """One block's rows as Arrow tables (cheap to send back), what was malformed, where the block
    ends in the decompressed stream, and its lines."""
    offset, block = job
    rows, bad = Rows(), Malformed()
    _PARSER.parse(block, rows, bad)
    _PARSER.finish(rows)
    tables: dict[str, list[Any]] = {"labels": rows.labels, "claims": rows.claims, "properties": rows.props, "redirects": rows.redirects}
    return {t: arrow_table(t, r) for t, r in tables.items()}, bad, offset + len(block), block.count(b"\n")


def _columnar_one(job: tuple[int, Block], setup: tuple[Any, ...]) -> Parsed:
    """`_parse_one` for N-Triples, column by column (`kalma.kg.columnar`): safe in threads."""
    from .columnar import parse_block

    offset, block = job
    _, languages, keep = setup
    tables, found, lines = parse_block(block, 1, languages, keep)
    return tables, found, offset + len(block), lines


def _in_order(submit: Callable[[Any], Future[Parsed]], jobs: Iterable[Any], depth: int) -> Iterator[Parsed]:
    """Each job's result in the jobs' order, with at most `depth` jobs submitted and not yet
    taken, so memory stays flat however far the workers run ahead."""
    flight: deque[Future[Parsed]] = deque()
    for job in jobs:
        flight.append(submit(job))
        if len(flight) >= depth:
            yield flight.popleft().result()
    while flight:
        yield flight.popleft().result()


def _parsed(source: Iterable[tuple[int, Block]], setup: tuple[Any, ...], workers: int) -> Generator[Parsed, None, None]:
    """Every block's rows, in order, two blocks a worker in flight at most, each block's lines
    numbered from 1 (the caller, which counts lines, moves the malformed ones on: this thread need
    not scan every block for its newlines, 0.3 CPU-s per GB). N-Triples are parsed column by
    column in `workers` threads where polars is installed (it releases the GIL, and no row is
    pickled; a forked process would inherit its thread pool locked), else by `_parse_one` in this
    process for one worker or in a pool of `workers` processes."""
    if setup[0] == "nt" and COLUMNAR:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as threads:
            yield from _in_order(lambda job: threads.submit(_columnar_one, job, setup), source, 2 * workers)
    elif workers <= 1:
        _start(*setup)
        yield from map(_parse_one, source)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_start, initargs=setup) as pool:
            yield from _in_order(lambda job: pool.submit(_parse_one, job), source, 2 * workers)


def _bar(progress: bool, start: int, decoder: str) -> Any:
    from tqdm import tqdm

    desc = f"import ({decoder}; bytes decompressed)"
    return tqdm(initial=start, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, disable=None if progress else True, mininterval=1)


def _rate(state: Progress, began: float) -> str:
    seconds = max(time.monotonic() - began, 1e-9)
    triples = sum(state.rows.values())
    return f"{triples / seconds:,.0f} rows/s, {state.offset / seconds / 1e6:,.0f} MB/s decompressed"


def _finished(store: Path, dump: dict[str, Any], options: dict[str, Any], replace_other: bool) -> dict[str, Any] | None:
    """The meta of a finished import of the same dump with the same options into `store`, if
    that is what it holds (a rerun is then done, not refused)."""
    meta = store / "meta.json"
    if not meta.is_file():
        return None
    try:
        found = json.loads(meta.read_text())
    except ValueError as exc:
        if replace_other:
            _discard(store)
            return None
        raise ConfigError(f"{meta}: not readable JSON ({exc}); the store is damaged: import again with --overwrite") from None
    same = {k: found.get("dump", {}).get(k) for k in dump} == dump and found.get("options") == options
    if not same:
        if replace_other:
            _discard(store)
            return None
        raise ConfigError(f"{store} holds a finished import of another dump or other options; give another folder (or --overwrite to replace it)")
    return dict(found)


def _resume(store: Path, dump: dict[str, Any], options: dict[str, Any], replace_other: bool) -> Progress:
    """The checkpoint of an import of the same dump with the same options, parts after it
    removed; else a fresh start (an import of anything else into the folder is refused, or with
    `replace_other` removed)."""
    check = store / "parts" / "checkpoint.json"
    if check.is_file():
        state = Progress(**json.loads(check.read_text()))
        if state.dump != dump or state.options != options:
            if not replace_other:
                raise ConfigError(f"{store} holds an import of another dump or other options ({state.dump['path']}); give another folder (or --overwrite)")
            _discard(store)
            return Progress(dump, options)
        for stale in (store / "parts").glob("*-*.parquet"):
            if int(stale.stem.rsplit("-", 1)[1]) >= state.parts:
                stale.unlink()
        for tmp in (store / "parts").glob("*.tmp"):
            tmp.unlink()
        return state
    if store.exists() and any(p.name != "parts" or any((store / "parts").iterdir()) for p in store.iterdir()):
        if not replace_other:
            raise ConfigError(f"{store} exists and is not an import under way; give a new folder (or --overwrite)")
        _discard(store)
    return Progress(dump, options)  # nothing, or the empty `parts/` of an import killed before its first checkpoint


def _discard(store: Path) -> None:
    """Remove what an earlier import left in `store` (see `replace_other`), if it holds nothing
    an import does not write."""
    check_replaceable(store, True, WRITES, "kalma kg import")
    shutil.rmtree(store)


def _checkpoint(state: Progress, pending: dict[str, list[Any]], began: float) -> tuple[int, dict[str, list[Any]], Progress]:
    """Count the pending rows into `state` as its next part, and empty `pending`; what the writer
    then puts on disk: (part number, the rows by table, the checkpoint that counts them)."""
    index, rows = state.parts, {}
    for table, found in pending.items():
        if n := sum(t.num_rows for t in found):
            rows[table] = list(found)
            state.rows[table] = state.rows.get(table, 0) + n  # (a checkpoint written before a table counts none of it)
        found.clear()
    state.parts += 1
    state.seconds = time.monotonic() - began
    return index, rows, copy.deepcopy(state)  # the writer saves it while this thread goes on


class _Writer:
    """Writes parts, then the checkpoint that counts them, in a thread of its own and in order,
    one part in flight at most: the main thread, which decodes and cuts the dump and hands out
    the blocks, does not wait on Parquet (pyarrow writes it without the GIL). A part is handed
    over only once the one before is on disk: a checkpoint never counts a part that failed. A
    kill between a part and its checkpoint leaves parts the next run removes and redoes."""

    def __init__(self, store: Path):
        from concurrent.futures import ThreadPoolExecutor

        self.store, self.pool = store, ThreadPoolExecutor(1, thread_name_prefix="kalma-parts")
        self.last: Future[None] | None = None

    def submit(self, part: tuple[int, dict[str, list[Any]], Progress]) -> None:
        if self.last is not None:
            self.last.result()  # the one before is on disk, or its error is raised here
        self.last = self.pool.submit(self._write, *part)

    def _write(self, index: int, rows: dict[str, list[Any]], state: Progress) -> None:
        for table, found in rows.items():
            write_part(self.store / "parts", table, found, index)
        _save(self.store, state)

    def close(self, check: bool = True) -> None:
        """Wait for the last part, raising its error (`check=False`: on the way out of an error
        elsewhere, which stands), and stop."""
        self.pool.shutdown(wait=True)
        if check and self.last is not None:
            self.last.result()


def _save(store: Path, state: Progress) -> None:
    """The checkpoint, written whole or not at all."""
    check = store / "parts" / "checkpoint.json"
    tmp = check.with_suffix(".tmp")
    tmp.write_text(dumps(asdict(state), indent=1))
    os.replace(tmp, check)


def connect(threads: int | None = None, memory: str | None = None, spill: Path | None = None) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads or os.cpu_count() or 1)}")
    if memory:
        con.execute(f"SET memory_limit = '{memory}'")
    if spill is not None:
        con.execute(f"SET temp_directory = '{_sql_path(spill)}'")
    con.execute("SET preserve_insertion_order = false")
    return con


def _sql_path(path: Path | str) -> str:
    return str(path).replace("'", "''")


def finalize(store: str | Path, keep: Filter | None = None, threads: int | None = None, **dump_facts: Any) -> dict[str, Any]:
    """The store's tables from its parts: deduplicated, sorted, and with a subset, the labels of
    the entities the kept claims name (their subjects, properties and values) and no other."""
    store, keep = Path(store), keep or Filter()
    parts = store / "parts"
    state = Progress(**json.loads((parts / "checkpoint.json").read_text()))
    reading = json.loads((parts / "reading.json").read_text()) if (parts / "reading.json").is_file() else {}
    # DuckDB spills past its limit: a fixed default keeps the import's memory flat in the dump's size
    spill = store / ".duckdb-spill"
    try:
        with connect(threads, os.environ.get("KALMA_DUCKDB_MEMORY", DUCKDB_MEMORY), spill) as con:  # closed on a failure too
            counts = _write_tables(store, con, _views(con, parts, state, keep))
    except Exception as exc:  # duckdb.Error: a part on disk that is not whole Parquet
        if "duckdb" not in type(exc).__module__:
            raise
        from ..errors import one_line

        raise ConfigError(f"{parts}: a part is damaged ({one_line(exc)[:300]}); import again with --overwrite") from None
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    meta = {
        "kalma_store": STORE_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "dump": {**state.dump, **dump_facts, "date": dump_date(state.dump["path"])},
        "options": state.options,
        "rows": counts,
        "read": {"decompressed_bytes": state.offset, "lines": state.lines, "seconds": round(state.seconds, 2), "rows_before_dedup": state.rows, **reading},
        "malformed": {"lines": state.malformed, "first": state.examples},
    }
    (store / "meta.json").write_text(dumps(meta, indent=1) + "\n")
    shutil.rmtree(parts)  # the tables hold it all now: the parts would double the store's size
    return meta


def import_warnings(store: str | Path, meta: dict[str, Any], classes: Sequence[str], languages: Sequence[str]) -> list[str]:
    """What a finished import found that a user would not expect, in words: no item of the classes
    asked for, no label in a language asked for, claims with no property known to be direct."""
    rows, said = meta["rows"], []
    con = connect()
    claims = f"read_parquet('{_sql_path(Path(store) / 'claims' / '*.parquet')}')"
    labels = f"read_parquet('{_sql_path(Path(store) / 'labels' / '*.parquet')}')"
    if classes:
        items = con.execute(f"SELECT count(DISTINCT subject) FROM {claims} WHERE subject LIKE 'Q%'").fetchone()[0]
        if not items:
            said.append(f"no item in the dump is an instance (P31) of {', '.join(classes)}: the store holds {rows['claims']:,} claims, none about an item")
    found = {lang for (lang,) in con.execute(f"SELECT DISTINCT lang FROM {labels}").fetchall()}
    for lang in languages:
        if lang not in found:
            said.append(f"no label, alias or description in language {lang!r} (--lang): entities will be shown by their ids")
    props = f"read_parquet('{_sql_path(Path(store) / 'properties' / '*.parquet')}')"
    if rows["claims"] and not con.execute(f"SELECT count(*) FROM {props} WHERE direct").fetchone()[0]:
        said.append("the dump has no wikibase:directClaim lines: no property is known, so `kg show` and snapshots show none of its claims")
    con.close()
    return said


def _views(con: Any, parts: Path, state: Progress, keep: Filter) -> dict[str, str]:
    """The parts as DuckDB views, and each table's query over them."""
    for table in TABLES:
        found = sorted(parts.glob(f"{table}-*.parquet"))
        if not found:  # an empty table still has its columns
            found = [write_part(parts, table, arrow_table(table, []), state.parts)]
        con.execute(f"CREATE VIEW raw_{table} AS SELECT * FROM read_parquet({[str(p) for p in found]})")
    named = "SELECT subject FROM raw_claims UNION SELECT value FROM raw_claims WHERE value_type IN ('item', 'uri') UNION SELECT pid FROM raw_claims"
    subset = "" if keep.everything else f" WHERE id IN ({named} UNION SELECT pid FROM raw_properties)"
    queries = {
        "labels": f"SELECT DISTINCT * FROM raw_labels{subset}",
        "claims": "SELECT subject, pid, value, value_type, datatype, lang, max(precision) AS precision, max(calendar) AS calendar FROM raw_claims "
        "GROUP BY subject, pid, value, value_type, datatype, lang",
        "properties": "SELECT pid, max(type) AS type, bool_or(direct) AS direct FROM raw_properties GROUP BY pid",
        "redirects": "SELECT DISTINCT * FROM raw_redirects",
    }
    return queries


def _write_tables(store: Path, con: Any, queries: dict[str, str]) -> dict[str, int]:
    """Each table from its query, sorted, as one Parquet file; their row counts."""
    counts = {}
    for table in TABLES:
        target = store / table
        if target.exists():
            shutil.rmtree(target)
        target.mkdir()
        out = target / "part-00000.parquet"
        con.execute(f"COPY (SELECT * FROM ({queries[table]}) ORDER BY {SORT[table]}) TO '{_sql_path(out)}' (FORMAT parquet, ROW_GROUP_SIZE 100000)")
        counts[table] = con.execute(f"SELECT count(*) FROM read_parquet('{_sql_path(out)}')").fetchone()[0]
    return counts


def table_view(con: Any, store: Path, table: str, name: str | None = None) -> None:
    """The view `name` (default: the table's own) of a store's `table`; an `OPTIONAL` table that
    a store made before it lacks is an empty one (none known)."""
    files = sorted((store / table).glob("*.parquet"))
    if not files and table in OPTIONAL:
        columns = ", ".join(f"NULL::VARCHAR AS {column}" for column, _ in COLUMNS[table])
        con.execute(f"CREATE VIEW {name or table} AS SELECT {columns} WHERE false")
    elif not files:
        raise ConfigError(f"{store}: no {table} table (an import that did not finish?)")
    else:
        con.execute(f"CREATE VIEW {name or table} AS SELECT * FROM read_parquet({[str(p) for p in files]})")


def dump_date(path: str) -> str:
    """The date in a dump's file name (`wikidata-20261118-truthy-BETA.nt.gz`), when it has one."""
    import re

    m = re.search(r"(20\d{6})", Path(path).name)
    return f"{m.group(1)[:4]}-{m.group(1)[4:6]}-{m.group(1)[6:]}" if m else "not in the file name"


# ---------------------------------------------------------------- the source


def read_meta(store: Path) -> dict[str, Any]:
    """A store's `meta.json`, or one line saying why `store` is no store (its identity, for
    provenance, is read from it before the store is opened)."""
    meta = store / "meta.json"
    if not meta.is_file():
        raise ConfigError(f"{store}: not a local Wikidata store (no meta.json): build one with `kalma kg import DUMP -o {store}`")
    try:
        found = json.loads(meta.read_text())
    except ValueError as exc:
        raise ConfigError(f"{meta}: not readable JSON ({exc}); the store is damaged: import it again with --overwrite") from None
    return found if isinstance(found, dict) else {}


class LocalWikidata:
    """`wikidata-local:STORE`: the knowledge-source protocol over a store (see the module docstring)."""

    name = "wikidata-local"

    def __init__(self, store: str | Path, lang: str = "en", threads: int | None = None, fallback: str | None = None):
        from ..languages import check_tag

        self.path = Path(store)
        self.meta = read_meta(self.path)
        if self.meta.get("kalma_store") != STORE_VERSION:
            raise ConfigError(f"{self.path}: a store of version {self.meta.get('kalma_store')!r}; this kalma reads {STORE_VERSION}: import it again")
        self.lang = check_tag(lang, f"{self.name}: lang")
        self.fallback = check_tag(fallback, f"{self.name}: fallback") if fallback else None
        held = store_languages(self.meta)
        for asked in dict.fromkeys((self.lang, *([self.fallback] if self.fallback else []))):
            if asked not in held:
                raise ConfigError(
                    f"{self.path}: the store holds labels in {', '.join(held)}, not {asked}: import the dump again with --languages {','.join([*held, asked])}"
                )
        self.langs = label_languages(self.lang, self.fallback)
        self.notes = LabelNotes(self.lang, self.fallback)
        self.round_trips = 0
        self.con = connect(threads)
        for table in TABLES:
            table_view(self.con, self.path, table)

    def _rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        self.round_trips += 1
        return list(self.con.execute(sql, list(params)).fetchall())

    # ------------------------------------------------------------ protocol

    def lookup(self, names: Iterable[str], classes: Iterable[str] = ()) -> dict[str, list[str]]:
        """{name: sorted QIDs whose label or alias in the store's languages equals it}; every name is a key."""
        names = list(dict.fromkeys(names))
        out: dict[str, set[str]] = {n: set() for n in names}
        if not names:
            return {}
        cls = list(classes)
        sql = (
            "SELECT DISTINCT l.text, l.id FROM labels l WHERE l.kind IN ('label', 'alias') AND l.lang IN (SELECT unnest(?::VARCHAR[])) "
            "AND l.text IN (SELECT unnest(?::VARCHAR[])) AND regexp_full_match(l.id, '[QP][0-9]+')"
        )
        params: list[Any] = [list(self.langs), names]
        if cls:
            sql = f"{SUBCLASSES} {sql} AND l.id IN (SELECT subject FROM claims WHERE pid = 'P31' AND value_type = 'item' AND value IN (SELECT c FROM sub))"
            params.insert(0, cls)
        for name, qid in self._rows(sql, *params):
            out[name].add(qid)
        return {n: sorted(q, key=_num) for n, q in out.items()}

    def class_status(self, qids: Iterable[str]) -> dict[str, str]:
        qids = list(dict.fromkeys(qids))
        out = {}
        for q in qids:
            instances = f"{SUBCLASSES} SELECT count(*) FROM (SELECT 1 FROM claims WHERE pid = 'P31' AND value IN (SELECT c FROM sub) LIMIT 1)"
            with_instances = self._rows(instances, [q])
            subclass = self._rows("SELECT count(*) FROM (SELECT 1 FROM claims WHERE pid = 'P279' AND (subject = ? OR value = ?) LIMIT 1)", q, q)
            out[q] = class_status(bool(with_instances[0][0]), bool(subclass[0][0]))
        return out

    def type_constraints(self, pids: Iterable[str]) -> dict[str, dict[str, list[str]]]:
        """None: the import keeps a statement's main value, and the constraints' classes are
        qualifiers (the truthy dump holds none)."""
        return {}

    def pairs(self, classes_a: Sequence[str], pids: Sequence[str], classes_b: Sequence[str] = ()) -> list[tuple[str, str, str]]:
        b_filter = "AND c.value IN (SELECT subject FROM instances_b)" if classes_b else ""
        found = self._rows(
            f"WITH RECURSIVE sub_a(c) AS ({_WALK.format(sub='sub_a')}), sub_b(c) AS ({_WALK.format(sub='sub_b')}), "
            "instances_b AS (SELECT subject FROM claims WHERE pid = 'P31' AND value IN (SELECT c FROM sub_b)) "
            "SELECT DISTINCT c.subject, c.pid, c.value FROM claims c WHERE c.pid IN (SELECT unnest(?::VARCHAR[])) AND c.value_type = 'item' "
            "AND regexp_full_match(c.value, 'Q[0-9]+') "
            f"AND c.subject IN (SELECT subject FROM claims WHERE pid = 'P31' AND value IN (SELECT c FROM sub_a)) {b_filter}",
            list(classes_a),
            list(classes_b),
            list(pids),
        )
        return sorted(((a, p, b) for a, p, b in found), key=lambda x: (_num(x[0]), _num(x[1]), _num(x[2])))

    def _info(self, qids: Sequence[str]) -> Info:
        found = self._rows(
            "SELECT id, kind, lang, text FROM labels WHERE id IN (SELECT unnest(?::VARCHAR[])) AND lang IN (SELECT unnest(?::VARCHAR[])) "
            "AND regexp_full_match(id, '[QP][0-9]+')",
            list(qids),
            list(self.langs),
        )
        return entity_info(found, qids, self.langs, self.notes)

    def subgraphs(self, qids: Iterable[str]) -> dict[str, EntityGraph]:
        """One-hop graphs of many entities, in two queries whatever their number."""
        from . import sparql

        qids = list(dict.fromkeys(qids))
        for q in qids:
            sparql.entity(q)  # a malformed id is refused, as the SPARQL sources refuse it
        if not qids:
            return {}
        info = self._info(qids)
        langs = list(self.langs)
        claims = self._rows(
            "SELECT c.subject, c.pid, c.value, c.value_type, c.datatype, c.lang, pl.lang, pl.text, vl.lang, vl.text FROM claims c "
            "JOIN properties p ON p.pid = c.pid AND p.direct AND coalesce(p.type, '') <> 'ExternalId' "
            "LEFT JOIN labels pl ON pl.id = c.pid AND pl.kind = 'label' AND pl.lang IN (SELECT unnest(?::VARCHAR[])) "
            "LEFT JOIN labels vl ON vl.id = c.value AND c.value_type IN ('item', 'uri') AND vl.kind = 'label' AND vl.lang IN (SELECT unnest(?::VARCHAR[])) "
            "WHERE c.subject IN (SELECT unnest(?::VARCHAR[]))",
            langs,
            langs,
            qids,
        )
        rows: list[Row] = []
        for subject, pid, value, vtype, datatype, lang, plang, plabel, vlang, vlabel in claims:
            row: Row = {"item": _uri(subject), "prop": _uri(pid), "value": _term(value, vtype, datatype, lang)}
            if plabel is not None:
                row["propLabel"] = {"type": "literal", "value": plabel, "lang": plang}
            if vlabel is not None:
                row["valueLabel"] = {"type": "literal", "value": vlabel, "lang": vlang}
            rows.append(row)
        triples: dict[str, list[Triple]] = {q: [] for q in qids}
        for row in best_labelled(rows, self.langs, self.notes):
            t = row_to_triple(row, info, self.lang)
            if t is not None:
                triples[t.subject].append(t)
        aliases = self.property_aliases({t.relation for ts in triples.values() for t in ts if t.relation})
        return assemble_graphs(qids, info, triples, aliases)

    def subgraph(self, qid: str) -> EntityGraph | None:
        return self.subgraphs([qid]).get(qid)

    def property_aliases(self, pids: Iterable[str]) -> dict[str, list[str]]:
        pids = sorted(set(pids))
        if not pids:
            return {}
        out: dict[str, set[str]] = {}
        for pid, alias in self._rows(
            "SELECT id, text FROM labels WHERE kind = 'alias' AND lang IN (SELECT unnest(?::VARCHAR[])) AND id IN (SELECT unnest(?::VARCHAR[]))",
            list(self.langs),
            pids,
        ):
            out.setdefault(pid, set()).add(alias)
        return {p: sorted(a) for p, a in out.items()}

    def inverse_properties(self, pids: Iterable[str]) -> dict[str, list[str]]:
        """{PID: the properties that state its facts from the other end} (P1696), both ways."""
        pids = sorted(set(pids))
        out: dict[str, set[str]] = {}
        if not pids:
            return {}
        for p, q in self._rows(
            "SELECT subject, value FROM claims WHERE pid = 'P1696' AND value_type = 'item' AND subject IN (SELECT unnest(?::VARCHAR[]))", pids
        ):
            if p.startswith("P") and q.startswith("P"):
                out.setdefault(p, set()).add(q)
                out.setdefault(q, set()).add(p)
        return {p: sorted(q, key=_num) for p, q in out.items()}

    def linked(self, triples: Iterable[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """The (a, PID, b) among `triples` that hold in either direction."""
        from . import sparql

        asked = list(dict.fromkeys(triples))
        for a, p, b in asked:
            sparql.entity(a), sparql.entity(p), sparql.entity(b)
        if not asked:
            return set()
        subjects, pids, objects = (list(x) for x in zip(*asked))
        found = self._rows(
            "WITH asked AS (SELECT unnest(?::VARCHAR[]) AS a, unnest(?::VARCHAR[]) AS p, unnest(?::VARCHAR[]) AS b) "
            "SELECT x.a, x.p, x.b FROM asked x JOIN claims c ON c.pid = x.p AND c.value_type = 'item' AND c.subject = x.a AND c.value = x.b "
            "UNION SELECT x.a, x.p, x.b FROM asked x JOIN claims c ON c.pid = x.p AND c.value_type = 'item' AND c.subject = x.b AND c.value = x.a",
            subjects,
            pids,
            objects,
        )
        return {(x, y, z) for x, y, z in found}

    def labels(self, qids: Iterable[str]) -> dict[str, str]:
        qids = list(dict.fromkeys(qids))
        return {q: v[0] for q, v in self._info(qids).items()} if qids else {}

    def neighbourhood(self, qids: Sequence[str]) -> str:
        """N-Triples of what a snapshot of `qids` holds: the statements `snapshot_construct` asks
        a SPARQL source for, read from the store."""
        qids = list(dict.fromkeys(qids))
        if not qids:
            return ""
        lines = set()
        preds = {kind: p for p, kind in nt.LABELS.items()}
        langs = list(self.langs)
        for eid, kind, lang, text in self._rows(
            "SELECT id, kind, lang, text FROM labels WHERE lang IN (SELECT unnest(?::VARCHAR[])) AND id IN (SELECT unnest(?::VARCHAR[]))", langs, qids
        ):
            lines.add(f"{nt.iri(eid)} <{preds[kind]}> {nt.quote(text)}@{lang} .")
        claims = self._rows(
            "SELECT c.subject, c.pid, c.value, c.value_type, c.datatype, c.lang FROM claims c JOIN properties p ON p.pid = c.pid AND p.direct "
            "AND coalesce(p.type, '') <> 'ExternalId' WHERE c.subject IN (SELECT unnest(?::VARCHAR[]))",
            qids,
        )
        pids = sorted({c[1] for c in claims})
        values = sorted({c[2] for c in claims if c[3] in ("item", "uri")})
        for subject, pid, value, vtype, datatype, lang in claims:
            lines.add(f"{nt.iri(subject)} <{nt.DIRECT}{pid}> {nt.term(value, vtype, datatype, lang)} .")
        for pid, ptype in self._rows("SELECT pid, type FROM properties WHERE pid IN (SELECT unnest(?::VARCHAR[]))", pids):
            lines.add(f"{nt.iri(pid)} <{nt.DIRECT_CLAIM}> <{nt.DIRECT}{pid}> .")
            if ptype:
                lines.add(f"{nt.iri(pid)} <{nt.PROPERTY_TYPE}> <{nt.ONTOLOGY}{ptype}> .")
        for eid, kind, lang, text in self._rows(
            "SELECT id, kind, lang, text FROM labels WHERE lang IN (SELECT unnest(?::VARCHAR[])) "
            "AND ((kind IN ('label', 'alias') AND id IN (SELECT unnest(?::VARCHAR[]))) "
            "OR (kind = 'label' AND id IN (SELECT unnest(?::VARCHAR[]))))",
            langs,
            pids,
            values,
        ):
            lines.add(f"{nt.iri(eid)} <{preds[kind]}> {nt.quote(text)}@{lang} .")
        for pid, inverse in self._rows("SELECT subject, value FROM claims WHERE pid = 'P1696' AND subject IN (SELECT unnest(?::VARCHAR[]))", pids):
            lines.add(f"{nt.iri(pid)} <{nt.DIRECT}P1696> {nt.iri(inverse)} .")
        return "".join(line + "\n" for line in sorted(lines))

    def redirects(self, qids: Iterable[str]) -> dict[str, str]:
        """{old id: the id it was merged into}, for those of `qids` the dump wrote as redirects."""
        from . import sparql

        qids = list(dict.fromkeys(qids))
        for q in qids:
            sparql.entity(q)
        if not qids:
            return {}
        found: dict[str, list[str]] = {}
        for old, new in self._rows("SELECT old_id, new_id FROM redirects WHERE old_id IN (SELECT unnest(?::VARCHAR[]))", qids):
            found.setdefault(old, []).append(new)
        return {q: min(found[q], key=_num) for q in qids if q in found}  # one answer where a dump holds two, as the SPARQL sources give


def store_languages(meta: dict[str, Any]) -> list[str]:
    """The label languages a store's import kept (`kalma kg import --languages`)."""
    return [str(lang) for lang in meta.get("options", {}).get("languages", ["en"])]


# The classes named (the query's parameter) and their subclasses, as far as P279 goes.
_WALK = "SELECT unnest(?::VARCHAR[]) UNION SELECT w.subject FROM claims w JOIN {sub} ON w.value = {sub}.c WHERE w.pid = 'P279' AND w.value_type = 'item'"
SUBCLASSES = f"WITH RECURSIVE sub(c) AS ({_WALK.format(sub='sub')})"


def _num(q: str) -> int:
    return int(q[1:])


def _uri(eid: str) -> Term:
    return {"type": "uri", "value": nt.iri(eid)[1:-1]}


def _term(value: str, vtype: str, datatype: str, lang: str) -> Term:
    """A stored value as the SPARQL term an endpoint returns for it."""
    if vtype in ("item", "uri"):
        return _uri(value)
    if vtype == "bnode":
        return {"type": "bnode", "value": value}
    term: Term = {"type": "literal", "value": value}
    if lang:
        term["lang"] = lang
    elif datatype:
        term["datatype"] = datatype
    return term
