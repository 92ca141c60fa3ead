"""The local Wikidata's import (kalma/kg): the N-Triples grammar both parsers read, what the
columns leave to the pattern parser, malformed lines and their numbers, the import's parts,
checkpoints and final step, `kg import --overwrite`, and `kg serve` (issue 54: an audit broke 38
guarded behaviours and 20 survived, most where the two parsers disagree)."""

from __future__ import annotations

from . import Mutation

HOSTILE = "tests/unit/test_wikidata_dumps.py::test_the_lines_of_the_grammars_edges_are_read_as_it_says"
AGREE = "tests/unit/test_wikidata_dumps.py::test_the_columnar_parser_reads_what_the_pattern_parser_reads"
NOT_UTF8 = "tests/unit/test_wikidata_dumps.py::test_bytes_that_are_no_utf8_are_read_as_replacement_characters_and_counted"
CLI = "tests/e2e/robustness/test_kg_cli.py"

MUTATIONS = (
    # ------------------------------------------------------------ what the columns read themselves
    Mutation(
        "a subject with two `>` read by the columns",
        "kalma/kg/columnar.py",
        '        & (s.str.count_matches(">", literal=True) == 1)  # no `>` inside the IRI\n',
        "",
        (HOSTILE, AGREE),
    ),
    Mutation(
        "an empty subject `<>` read by the columns",
        "kalma/kg/columnar.py",
        "        & (s.str.len_bytes() > 2)\n",
        "",
        (HOSTILE,),
    ),
    Mutation(
        "a line with no space before the final dot read by the columns",
        "kalma/kg/columnar.py",
        "        & o.str.ends_with(nt.COMMON_END)\n",
        '        & o.str.ends_with(".\\n")\n',
        (HOSTILE,),
    ),
    Mutation(
        "a line with two spaces before the final dot read by the columns (the label, type and directClaim lines they dropped)",
        "kalma/kg/columnar.py",
        '        & ~o.str.ends_with(" " + nt.COMMON_END)  # one space before the dot, not two\n',
        "",
        (HOSTILE, f"{CLI}::test_the_lines_the_columns_dropped_are_imported"),
    ),
    Mutation(
        "a blank node with whitespace read by the columns",
        "kalma/kg/columnar.py",
        '(o.str.contains(r"\\s") | (o.str.len_bytes() < 3)).alias("bad")',
        '(o.str.len_bytes() < 3).alias("bad")',
        (HOSTILE,),
    ),
    Mutation(
        "a blank node without a label read by the columns",
        "kalma/kg/columnar.py",
        '(o.str.contains(r"\\s") | (o.str.len_bytes() < 3)).alias("bad")',
        '(o.str.contains(r"\\s")).alias("bad")',
        (HOSTILE,),
    ),
    Mutation(
        "the language tag check reduced to `@`",
        "kalma/kg/columnar.py",
        'suffix.str.contains(f"^@{nt.LANG}$")',
        'suffix.str.starts_with("@")',
        (HOSTILE,),
    ),
    Mutation(
        "the claim predicate's property id not checked",
        "kalma/kg/columnar.py",
        '    valid = ~pl.col("bad").fill_null(True) & pl.col("pid").str.contains(f"^{nt.PROPERTY}$")',
        '    valid = ~pl.col("bad").fill_null(True)',
        (HOSTILE,),
    ),
    Mutation(
        "a directClaim line of another property taken for the subject's (`direct_pid == pid` dropped)",
        "kalma/kg/columnar.py",
        ' & (pl.col("direct_pid") == pl.col("pid")))',
        ")",
        (HOSTILE,),
    ),
    # ------------------------------------------------------------ what the columns leave to the pattern parser
    Mutation(
        "a claim whose literal holds `#directClaim> <`, on a line ending in `. `, dropped uncounted",
        "kalma/kg/columnar.py",
        "        text.str.contains(nt.CLAIM, literal=True)\n        | is_label",
        '        (text.str.contains(nt.CLAIM, literal=True) & ~text.str.contains("#directClaim> <", literal=True))\n        | is_label',
        (HOSTILE, f"{CLI}::test_the_lines_the_columns_dropped_are_imported"),
    ),
    Mutation(
        "lines with bytes that are not UTF-8 read by the columns, uncounted",
        "kalma/kg/columnar.py",
        '        common = common & ~pl.col("n").is_in(list(raw))',
        "        pass",
        (NOT_UTF8,),
    ),
    # ------------------------------------------------------------ the grammar both parsers share
    Mutation(
        "bytes that are not UTF-8 not repaired (the import stopped by a decode error)",
        "kalma/kg/ntriples.py",
        "    if block.isascii():\n        return block, set()",
        "    if True:\n        return block, set()",
        (NOT_UTF8, f"{CLI}::test_bytes_that_are_not_utf8_are_read_as_u_fffd_and_counted"),
    ),
    Mutation(
        "a malformed claim's count cancelled by a line that is no claim holding `#directClaim> <`",
        "kalma/kg/ntriples.py",
        "    return block.count(_CLAIM) - block.count(_DIRECT_OBJECT)",
        '    return block.count(_CLAIM) - block.count(b"#directClaim> <")',
        (
            "tests/unit/test_wikidata_dumps.py::test_a_block_of_many_lines_counts_each_malformed_claim_once",
            f"{CLI}::test_a_malformed_claim_is_counted_beside_a_line_holding_directclaim",
        ),
    ),
    Mutation(
        "half a UTF-16 pair kept (no text the store can write)",
        "kalma/kg/ntriples.py",
        "        out.encode()\n",
        '        out.encode("utf-8", "surrogatepass")\n',
        (HOSTILE,),
    ),
    # ------------------------------------------------------------ malformed lines, by number
    Mutation(
        "a malformed line named one line off, after the first block",
        "kalma/kg/dumps.py",
        "{line + before}",
        "{line + before + 1}",
        ("tests/unit/test_wikidata_dumps.py::test_malformed_lines_are_counted_named_and_passed_over",),
    ),
    Mutation(
        "the columns' lines numbered one off",
        "kalma/kg/columnar.py",
        "pl.int_range(first_line, first_line + len(lines), eager=True)",
        "pl.int_range(first_line + 1, first_line + 1 + len(lines), eager=True)",
        (HOSTILE,),
    ),
    Mutation(
        "the pattern parser's malformed claims named one line off",
        "kalma/kg/dumps.py",
        '                    bad.add(first_line + i, line, "a claim that is not an N-Triples line")',
        '                    bad.add(first_line + i + 1, line, "a claim that is not an N-Triples line")',
        (HOSTILE,),
    ),
    Mutation(
        "blocks taken out of order (a checkpoint covers no prefix of the dump)",
        "kalma/kg/store.py",
        "        if len(flight) >= depth:\n            yield flight.popleft().result()",
        "        if len(flight) >= depth:\n            yield flight.pop().result()",
        ("tests/unit/test_wikidata_dumps.py::test_malformed_lines_are_counted_named_and_passed_over",),
    ),
    # ------------------------------------------------------------ the import: refusals, parts, final step
    Mutation(
        "a file that is no dump imported as an empty store",
        "kalma/kg/store.py",
        "    check_dump(dump, fmt, compression)  # before anything is written: a file that is no dump leaves nothing\n",
        "",
        (f"{CLI}::test_a_file_that_is_no_dump_is_refused_and_nothing_is_left",),
    ),
    Mutation(
        "a finished import of other options taken for this one (`_finished` ignoring options)",
        "kalma/kg/store.py",
        ' == dump and found.get("options") == options',
        " == dump",
        (f"{CLI}::test_a_store_of_other_options_is_refused_not_taken_for_done",),
    ),
    Mutation(
        "the writer not waiting for the previous part (a checkpoint counting rows not on disk)",
        "kalma/kg/store.py",
        "            self.last.result()  # the one before is on disk, or its error is raised here",
        "            pass",
        ("tests/unit/test_wikidata_dumps.py::test_a_part_that_cannot_be_written_stops_the_import_and_no_checkpoint_counts_it",),
    ),
    Mutation(
        "the final step's DuckDB connection left open on a failure",
        "kalma/kg/store.py",
        '        with connect(threads, os.environ.get("KALMA_DUCKDB_MEMORY", DUCKDB_MEMORY), spill) as con:  # closed on a failure too\n'
        "            counts = _write_tables(store, con, _views(con, parts, state, keep))",
        '        con = connect(threads, os.environ.get("KALMA_DUCKDB_MEMORY", DUCKDB_MEMORY), spill)\n'
        "        counts = _write_tables(store, con, _views(con, parts, state, keep))",
        ("tests/unit/test_wikidata_dumps.py::test_finalize_closes_its_connection_when_a_part_is_damaged",),
    ),
    # ------------------------------------------------------------ kg import --overwrite
    Mutation(
        "`--overwrite` following a symlink",
        "kalma/folders.py",
        "    if not output.is_dir() or output.is_symlink():",
        "    if not output.is_dir():",
        (f"{CLI}::test_overwrite_never_follows_a_symlink",),
    ),
    Mutation(
        "a failed swap leaving `.NAME.new` (the new store never swapped in)",
        "kalma/kg/cli.py",
        "            swap_in(target, Path(store))",
        "            pass",
        (f"{CLI}::test_overwrite_replaces_the_store_whole_and_leaves_nothing_beside_it",),
    ),
    Mutation(
        "the old store left beside the new one as `.NAME.old`",
        "kalma/folders.py",
        "    os.replace(new, output)\n    shutil.rmtree(old, ignore_errors=True)",
        "    os.replace(new, output)",
        (f"{CLI}::test_overwrite_replaces_the_store_whole_and_leaves_nothing_beside_it",),
    ),
    Mutation(
        "a stale `.NAME.new` of another dump refusing every retry with --overwrite",
        "kalma/kg/cli.py",
        "replace_other=target != Path(store))",
        "replace_other=False)",
        (f"{CLI}::test_a_failed_overwrite_is_retried_with_overwrite",),
    ),
    # ------------------------------------------------------------ kg serve
    Mutation(
        "kg serve passing on oxigraph's advice to use `--lenient`",
        "kalma/kg/serve.py",
        "{_load_error(exc.stderr.decode(errors='replace'), data)}",
        "{exc.stderr.decode(errors='replace').strip()[:300]}",
        (f"{CLI}::test_kg_serve_names_what_is_wrong_in_a_snapshot_and_only_its_own_options",),
    ),
    Mutation(
        "Ctrl-C on kg serve exiting 0",
        "kalma/kg/cli.py",
        '            raise Interrupted(f"interrupted: stopped serving {data}") from None  # exit 130 (143 for SIGTERM)',
        '            click.echo(f"stopped serving {data}", err=True)',
        ("tests/unit/test_kg.py::test_kg_serve_gives_an_endpoint_until_ctrl_c",),
    ),
    Mutation(
        "kg serve writing its URL before it listens for Ctrl-C (stopped at once: `interrupted`, no word of the server; CI saw it)",
        "kalma/kg/cli.py",
        "        try:\n"
        '            click.echo(f"serving {data} at {url}: query it with --kg sparql:{url} (Ctrl-C stops it)", err=True)\n'
        "            click.echo(url)  # alone on stdout, for scripts\n",
        '        click.echo(f"serving {data} at {url}: query it with --kg sparql:{url} (Ctrl-C stops it)", err=True)\n'
        "        click.echo(url)  # alone on stdout, for scripts\n"
        "        try:\n",
        ("tests/unit/test_kg.py::test_kg_serve_stopped_as_its_url_goes_out_says_so_and_stops_the_server",),
    ),
    # ------------------------------------------------------------ the grammar's tags and escapes (issue 59)
    Mutation(
        "a language tag with digits (`es-419`) not read as one",
        "kalma/kg/ntriples.py",
        'LANG = "[A-Za-z0-9-]+"',
        'LANG = "[A-Za-z-]+"',
        ("tests/unit/test_ntriples_fuzz.py",),
    ),
    Mutation(
        "the escape `\\b` not read as a backspace",
        "kalma/kg/ntriples.py",
        '"b": "\\b", ',
        "",
        ("tests/unit/test_ntriples_fuzz.py",),
    ),
    Mutation(
        "the escape `\\f` not read as a form feed",
        "kalma/kg/ntriples.py",
        '"f": "\\f", ',
        "",
        ("tests/unit/test_ntriples_fuzz.py",),
    ),
)
