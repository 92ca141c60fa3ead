"""`kalma kg …`: look things up in a knowledge source and write snapshots."""

from __future__ import annotations

from pathlib import Path

import click

from ..cli import OVERWRITE, new_output
from ..jsonl import dumps


@click.group("kg")
def kg() -> None:
    """Knowledge-graph sources: look-ups, snapshots, a local Wikidata imported from its dumps, a
    snapshot served over SPARQL, and the authors' release importer.

    SOURCE is a .ttl/.nt path, rdflib:PATH, oxigraph:PATH, sparql:URL, wikidata, wikidata-local:STORE or demo."""


@kg.command("lookup")
@click.option("--kg", "source", default="demo", show_default=True, help="Knowledge source spec.")
@click.option("--class", "classes", multiple=True, help="Restrict to instances (P31) of this QID, e.g. Q5.")
@click.argument("names", nargs=-1, required=True)
def lookup(source: str, classes: tuple[str, ...], names: tuple[str, ...]) -> None:
    """Entities whose English label or alias equals NAME (a name found nowhere is said on stderr)."""
    from . import open_source, sparql

    for c in classes:
        sparql.entity(c)  # `--class human` is no class id: one line, as import says it
    found = open_source(source).lookup(names, classes)
    click.echo(dumps(found, indent=2, ensure_ascii=False))
    missing = [n for n in names if not found.get(n)]
    if missing:
        click.echo(f"not found in {source}: {', '.join(missing)}" + (f" (among instances of {', '.join(classes)})" if classes else ""), err=True)


@kg.command("show")
@click.option("--kg", "source", default="demo", show_default=True, help="Knowledge source spec.")
@click.argument("qids", nargs=-1, required=True)
def show(source: str, qids: tuple[str, ...]) -> None:
    """Print the one-hop subgraphs of QIDS as JSON; a QID the source does not hold fails (exit 1)."""
    from . import open_source

    graphs = open_source(source).subgraphs(qids)
    click.echo(dumps({q: g.model_dump(mode="json") for q, g in graphs.items()}, indent=2, ensure_ascii=False))
    missing = [q for q in qids if q not in graphs or not (graphs[q].triples or graphs[q].label)]
    if missing:
        raise click.ClickException(f"not in {source}: {', '.join(missing)}")


@kg.command("snapshot")
@click.option("--kg", "--endpoint", "endpoint", required=True, help="Source spec or SPARQL endpoint URL (e.g. wikidata); --endpoint is its older name.")
@click.option("--qids", default="", help="Comma-separated QIDs.")
@click.option("--names", default="", help="Comma-separated names, resolved among humans (Q5).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
@OVERWRITE
def snapshot(endpoint: str, qids: str, names: str, output: str, overwrite: bool) -> None:
    """Write the one-hop neighbourhood of entities, with the labels needed, as a local snapshot."""
    from . import open_source
    from .snapshot import write_snapshot

    new_output(output, overwrite)
    src = open_source(f"sparql:{endpoint}" if endpoint.startswith(("http://", "https://")) else endpoint)
    wanted = [q.strip() for q in qids.split(",") if q.strip()]
    if names:
        found = src.lookup([n.strip() for n in names.split(",") if n.strip()], ["Q5"])
        for name, hits in found.items():
            click.echo(f"{name}: {', '.join(hits) or 'not found'}", err=True)
            wanted += hits
    if not wanted:
        raise click.UsageError("give --qids or --names that resolve to at least one entity")
    n = write_snapshot(src, wanted, output)
    if not n:
        Path(output).unlink(missing_ok=True)
        raise click.ClickException(f"{endpoint} holds nothing about {', '.join(dict.fromkeys(wanted))}: nothing was written")
    click.echo(f"wrote {n} triples for {len(set(wanted))} entities to {output}")


@kg.command("import")
@click.argument("dump", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "store", required=True, type=click.Path(file_okay=False), help="The store folder (Parquet tables and meta.json).")
@click.option("--lang", "languages", multiple=True, help="A language of the labels, aliases and descriptions kept (repeatable; default en).")
@click.option(
    "--languages",
    "language_list",
    default="",
    metavar="en,fr,de",
    help="The languages of the labels, aliases and descriptions kept, comma-separated (beside --lang); add mul for Wikidata's labels valid in many languages.",
)
@click.option(
    "--classes", default="", help="Keep only the claims of instances (P31) of these classes, e.g. Q5 (comma-separated); labels are kept for what they name."
)
@click.option(
    "--qids", "qids_file", type=click.Path(exists=True, dir_okay=False), help="Keep only the claims of the QIDs in this file (one per line), beside --classes."
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Parsers (threads for N-Triples with polars installed, else processes), and the decoder's and DuckDB's threads (default: one per core).",
)
@click.option(
    "--spark", "master", default=None, metavar="MASTER", help="Run the import as a Spark job instead (local[*], spark://host:7077, yarn): the same store."
)
@OVERWRITE
def import_cmd(
    dump: str,
    store: str,
    languages: tuple[str, ...],
    language_list: str,
    classes: str,
    qids_file: str | None,
    threads: int | None,
    master: str | None,
    overwrite: bool,
) -> None:
    """Import a Wikidata dump (latest-truthy.nt or latest-all.json, plain, .gz, .bz2 or .zst) into a
    local store, then query it as --kg wikidata-local:STORE. A killed import resumes where it stopped."""
    import os
    from pathlib import Path

    from ..errors import interrupted_hint
    from ..folders import check_replaceable, staging, swap_in
    from ..languages import check_tag
    from ..locks import OutputLock
    from . import sparql
    from .dumps import Filter
    from .store import WRITES, import_dump, import_warnings

    asked = [*languages, *(lang for lang in language_list.split(",") if lang.strip())]
    languages = tuple(dict.fromkeys(check_tag(lang, "--languages") for lang in asked)) or ("en",)
    wanted = [c.strip() for c in classes.split(",") if c.strip()]
    qids = [line.strip() for line in Path(qids_file).read_text(encoding="utf-8").splitlines() if line.strip()] if qids_file else []
    if qids_file and not qids:
        raise click.BadParameter(f"{qids_file} lists no QID (one a line): an empty filter would keep everything", param_hint="--qids")
    for q in [*wanted, *qids]:
        sparql.entity(q)  # a malformed id: one line, before any work
    keep = Filter(frozenset(wanted), frozenset(qids))
    target = Path(store)
    if overwrite and os.path.lexists(store):
        # the new store is imported beside the old (resumable there), and replaces it only when complete
        check_replaceable(Path(store), True, WRITES, "kalma kg import")
        target = staging(Path(store))
    with OutputLock(store), interrupted_hint(f"the import into {target} is kept: run the same command again to resume it"):
        if master:
            from .spark_import import spark_import

            meta = spark_import(dump, str(target), master, languages, keep)
        else:
            # what an earlier --overwrite left in its staging folder (another dump: a download since
            # completed, other options) is replaced too: that folder is this command's alone
            meta = import_dump(dump, target, languages, keep, threads, replace_other=target != Path(store))
        if target != Path(store):
            swap_in(target, Path(store))
    rows, read, bad = meta["rows"], meta["read"], meta["malformed"]["lines"]
    if meta.get("already"):
        click.echo(f"{store} already holds this import (the same dump and options): nothing to do ({rows['claims']:,} claims, {rows['labels']:,} labels)")
        return
    rate = f" ({read['decompressed_bytes'] / max(read['seconds'], 1e-9) / 1e6:,.0f} MB/s decompressed)" if read["decompressed_bytes"] else ""
    click.echo(
        f"wrote {store}: {rows['labels']:,} labels, {rows['claims']:,} claims, {rows['properties']:,} properties, {rows.get('redirects', 0):,} redirects "
        f"from {read['lines']:,} lines in {read['seconds']:.1f} s{rate}; {bad:,} malformed line{'' if bad == 1 else 's'}"
    )
    for line in meta["malformed"]["first"]:
        click.echo(f"  malformed: {line}", err=True)
    for warning in import_warnings(store, meta, wanted, languages):
        click.echo(f"warning: {warning}", err=True)


@kg.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("-o", "--output", required=True, type=click.Path(), help="The diff: a folder (changes.parquet, meta.json), or with --jsonl one file.")
@click.option("--jsonl", is_flag=True, help="Write one JSON Lines file (a header with the meta, then one change a line) instead of a folder.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="DuckDB's threads (default: one per core).")
@OVERWRITE
def diff_cmd(old: str, new: str, output: str, jsonl: bool, threads: int | None, overwrite: bool) -> None:
    """What changed from OLD to NEW, two local Wikidata stores (or .ttl/.nt snapshots, Oxigraph
    stores): values changed, added and removed per subject and property, items merged (redirects)
    and deleted, labels changed; counts per kind, property and class."""
    from .diff import KINDS, diff

    meta = diff(old, new, output, jsonl, overwrite, threads)
    kinds = meta["counts"]["kinds"]
    click.echo(f"wrote {output}: {meta['rows']:,} changes ({', '.join(f'{kinds[k]:,} {k}' for k in KINDS)})")


@kg.command("serve")
@click.argument("snapshot", required=False)
@click.option(
    "--kg",
    "source",
    default=None,
    metavar="SNAPSHOT",
    help="The snapshot to serve: a .ttl or .nt file, or demo (--kg, as the other kg commands name what they read; "
    "`kalma kg serve SNAPSHOT`, its older spelling, works as well).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface; the endpoint has no authentication).")
@click.option("--port", type=click.IntRange(1, 65535), default=7878, show_default=True)
def serve(snapshot: str | None, source: str | None, host: str, port: int) -> None:
    """Serve a snapshot (--kg SNAPSHOT: a .ttl or .nt file, or `demo`) as a read-only SPARQL endpoint
    with the Oxigraph server, until Ctrl-C (exit 130) or SIGTERM (exit 143): what `--kg sparql:URL`
    (and any SPARQL client) can then query."""
    import tempfile
    import time
    from pathlib import Path

    from ..errors import Interrupted
    from . import demo_snapshot_path
    from .serve import serve_snapshot

    if snapshot and source and snapshot != source:
        raise click.UsageError(f"two snapshots given ({snapshot} and --kg {source}): give one")
    chosen = source or snapshot
    if not chosen:
        raise click.UsageError("give the snapshot to serve: --kg FILE (a .ttl or .nt file) or --kg demo")
    data = demo_snapshot_path() if chosen == "demo" else Path(chosen)
    if not data.is_file():
        raise click.BadParameter(f"no such snapshot file: {chosen!r} (a .ttl or .nt file, or demo)", param_hint="--kg")

    # Ctrl-C and SIGTERM (which the command line turns into the same unwinding) stop the server and
    # remove its folder on the way out
    with tempfile.TemporaryDirectory(prefix="kalma-serve-") as work, serve_snapshot(data, Path(work), host=host, port=port) as url:
        # the URL goes out inside the try: a script that reads it may send Ctrl-C before this
        # process runs its next line (CI saw it: "interrupted" with no word of the server)
        try:
            click.echo(f"serving {data} at {url}: query it with --kg sparql:{url} (Ctrl-C stops it)", err=True)
            click.echo(url)  # alone on stdout, for scripts
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: stopped serving {data}") from None  # exit 130 (143 for SIGTERM)


@kg.command("import-biokalma")
@click.argument("release_file", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", default="runs/biokalma/kg.nt", show_default=True, type=click.Path(dir_okay=False))
@OVERWRITE
def import_biokalma_cmd(release_file: str, output: str, overwrite: bool) -> None:
    """Convert the authors' release (complex/simple_question_graph.json) into a snapshot.
    The default output is under runs/, which git ignores: release data never enters a commit."""
    from .snapshot import import_biokalma

    new_output(output, overwrite)
    stats = import_biokalma(release_file, output)
    click.echo(dumps(stats, indent=2))
