"""The truthy N-Triples parsed column by column: polars string operations over a block's lines,
in Rust, with the GIL released; Python only for the lines outside the common shape.

The lines are Arrow offsets over the block's own bytes. One pass for substrings keeps those that
may matter; they are cut into terms with `splitn` and read by their terms, by the grammar of
`kalma.kg.ntriples` that the pattern parser (`NTriples`) is built from: a claim by its
predicate, a label by its predicate and language tag. A line of the common shape is
`<S> <P> O .` with one space between terms and before the dot, no backslash (so no escape to
undo and no quote inside a literal), UTF-8, and an object that is an IRI, a blank node or a
literal (`"…"`, `"…"@lang`, `"…"^^<datatype>`); each kind of object is read on its own rows.
The columns read only lines of that shape, and hand every other line the store would read or
count (an escape, other spacing, a claim's predicate inside a literal, bytes that are not UTF-8,
anything malformed) to the pattern parser on its own, with its line number: the rows, and what is
counted and named as malformed, are the pattern parser's. `tests/unit/test_ntriples_fuzz.py`
holds the two to identical rows and malformed lines on generated lines.

Subsets (`Filter`) decide per run of one subject's claim lines, as the pattern parser does;
a block where such a run meets a line outside the common shape is parsed by `NTriples` whole.
"""

from __future__ import annotations

from typing import Any

from . import ntriples as nt
from .dumps import Block, Filter, Malformed, NTriples, Rows

PROP_DIRECT = f"<{nt.DIRECT}"
LABELS = {f"<{p}>": kind for p, kind in nt.LABELS.items()}
PROPERTY_TYPE = f"<{nt.PROPERTY_TYPE}>"
DIRECT = f"<{nt.DIRECT_CLAIM}>"
SAME_AS = f"<{nt.SAME_AS}>"


def parse_block(block: Block, first_line: int, languages: tuple[str, ...], keep: Filter) -> tuple[dict[str, Any], Malformed, int]:
    """One block's rows as Arrow tables (the store's columns), what was malformed (its lines
    numbered from `first_line`), and its lines."""
    import polars as pl

    frame, n_lines, raw = _lines(block, first_line)
    text, s, p, o = pl.col("line"), pl.col("s"), pl.col("p"), pl.col("o")
    # One pass over every line for any of the substrings a read line holds (a superset of them:
    # sitelinks, other languages' labels, most of the rest never go further); the lines left are
    # read by their terms, with no other scan of a whole line.
    frame = frame.filter(text.str.contains_any([nt.CLAIM, PROPERTY_TYPE, DIRECT, SAME_AS, *(f'"@{lang}' for lang in languages)]))
    parts = frame.with_columns(text.str.splitn(" ", 3).alias("t")).unnest("t").rename({"field_0": "s", "field_1": "p", "field_2": "o"})
    common = (
        ~text.str.contains("\\", literal=True)
        & s.str.starts_with("<")
        & s.str.ends_with(">")
        & (s.str.len_bytes() > 2)
        & (s.str.count_matches(">", literal=True) == 1)  # no `>` inside the IRI
        & ~s.str.contains_any(["\t", "\r", "\x0b", "\x0c"])  # nor the other ASCII spaces `nt.SUBJECT` refuses
        & o.str.ends_with(nt.COMMON_END)
        & ~o.str.ends_with(" " + nt.COMMON_END)  # one space before the dot, not two
        & ~o.str.ends_with("\t" + nt.COMMON_END)
    )
    if raw:  # lines with bytes that are not UTF-8: the pattern parser reads and counts them
        common = common & ~pl.col("n").is_in(list(raw))
    parts = parts.with_columns(common.fill_null(False).alias("common"), p.str.starts_with(PROP_DIRECT + "P").alias("claim"), o.str.strip_suffix(nt.COMMON_END))
    claims, invalid = _claims(parts.filter(pl.col("common") & pl.col("claim")), keep)
    # A line of the common shape that names a claim's predicate elsewhere than as its predicate
    # (inside a literal, say; a directClaim line names it as its object) is the pattern parser's:
    # it may be a claim line it names malformed.
    rest = parts.filter(pl.col("common") & ~pl.col("claim")).with_columns((text.str.contains(nt.CLAIM, literal=True) & (p != DIRECT)).alias("mentions"))
    odd = pl.concat(
        [
            parts.filter(~pl.col("common")).filter(_wanted(languages)),
            parts.filter(pl.col("n").is_in(invalid.to_list())),
            rest.filter("mentions").drop("mentions"),
        ]
    ).sort("n")
    rest = rest.filter(~pl.col("mentions"))
    rows, bad = Rows(), Malformed()
    if odd.height and not keep.everything and odd.select((pl.col("claim") | text.str.contains(nt.CLAIM, literal=True)).any()).item():
        return _whole(block, first_line, languages, keep, n_lines)  # a run of claims meets an odd line: the pattern parser decides it all
    fallback = NTriples(languages, keep)
    for line, n in zip(odd["line"].to_list(), odd["n"].to_list()):
        fallback.parse(raw.get(n) or line.encode(), rows, bad, n)
        fallback.finish(rows)
    return _tables(claims, _labels(rest, languages), _props(rest), _redirects(rest), rows), bad, n_lines


def _lines(block: Block, first_line: int) -> tuple[Any, int, dict[int, bytes]]:
    """A block's lines, each with its newline, numbered; how many newlines it has; and the lines
    with bytes that are not UTF-8, by number, as they are (the frame holds them read as U+FFFD).
    The lines are Arrow offsets at the newlines over the block's own bytes (no Python string, no
    split and explode)."""
    import numpy as np
    import polars as pl
    import pyarrow as pa

    ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10) + 1
    unended = [] if len(ends) and ends[-1] == len(block) else [len(block)]  # a last line with no newline
    offsets = np.concatenate(([0], ends, unended)).astype(np.int64, copy=False)
    lines = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(block))
    try:
        lines.validate(full=True)  # UTF-8 (a newline byte is never inside a character)
    except pa.ArrowInvalid:
        fixed, broken = nt.repaired(block)
        frame, n_lines, _ = _lines(fixed, first_line)
        pieces = bytes(block).split(b"\n")
        return frame, n_lines, {first_line + i: pieces[i] + b"\n" * (i < len(pieces) - 1) for i in broken}
    frame = pl.DataFrame({"line": pl.from_arrow(lines), "n": pl.int_range(first_line, first_line + len(lines), eager=True)})
    return frame, len(ends), {}


def _wanted(languages: tuple[str, ...]) -> Any:
    """The lines the pattern parser may read or name malformed, by substring (a superset of
    them): for the lines not of the common shape, which are few, before each is parsed on its own."""
    import polars as pl

    text = pl.col("line")
    tagged = pl.any_horizontal([text.str.contains(f'"@{lang}', literal=True) for lang in languages])
    is_label = pl.any_horizontal([text.str.contains(f"{p} ", literal=True) for p in LABELS]) & tagged
    return (
        text.str.contains(nt.CLAIM, literal=True)
        | is_label
        | text.str.contains(PROPERTY_TYPE, literal=True)
        | text.str.contains(DIRECT, literal=True)
        | text.str.contains(SAME_AS, literal=True)
    )


def _whole(block: Block, first_line: int, languages: tuple[str, ...], keep: Filter, n_lines: int) -> tuple[dict[str, Any], Malformed, int]:
    from .store import arrow_table

    parser, rows, bad = NTriples(languages, keep), Rows(), Malformed()
    parser.parse(block, rows, bad, first_line)
    parser.finish(rows)
    return (
        {
            "labels": arrow_table("labels", rows.labels),
            "claims": arrow_table("claims", rows.claims),
            "properties": arrow_table("properties", rows.props),
            "redirects": arrow_table("redirects", rows.redirects),
        },
        bad,
        n_lines,
    )


def _short(iri: Any) -> Any:
    """`nt.short` over a column of `<…>` terms: `Q42` for a Wikidata entity IRI; any other IRI as
    it is, without its brackets."""
    import polars as pl

    short = iri.str.strip_prefix(f"<{nt.WD}").str.strip_suffix(">")  # keeps its `<` unless it was an entity's
    return pl.when(short.str.contains(f"^{nt.ENTITY}$")).then(short).otherwise(iri.str.strip_prefix("<").str.strip_suffix(">"))


def _claims(df: Any, keep: Filter) -> tuple[Any, Any]:
    """Claim lines of the common shape as claim rows, and the line numbers of those whose
    predicate or object the pattern parser may read otherwise (a property id; an IRI, blank node
    or literal). Each kind of object is read apart, so no expression runs on the others' rows."""
    import polars as pl

    o = pl.col("o")
    pid = pl.col("p").str.strip_prefix(PROP_DIRECT).str.strip_suffix(">")
    df = df.select("n", "o", _short(pl.col("s")).alias("subject"), pid.alias("pid"))
    if not keep.everything:  # a subject's run of claim lines, for `_kept`
        df = df.with_columns((pl.col("subject") != pl.col("subject").shift(1)).fill_null(True).cum_sum().alias("run"))
    inner = o.str.strip_prefix("<").str.strip_suffix(">")
    is_iri, is_bnode, is_literal = o.str.starts_with("<") & o.str.ends_with(">"), o.str.starts_with("_:"), o.str.starts_with('"')
    iris = df.filter(is_iri).with_columns(
        _short(o).alias("value"), pl.lit("").alias("datatype"), pl.lit("").alias("lang"), inner.str.contains(">", literal=True).alias("bad")
    )
    iris = iris.with_columns(pl.when(pl.col("value").str.contains(f"^{nt.ENTITY}$")).then(pl.lit("item")).otherwise(pl.lit("uri")).alias("value_type"))
    # a blank node's label: at least one character, and no space (Rust's `\s` is Unicode's, more than
    # the pattern refuses: such a line only goes to the pattern parser)
    bnodes = df.filter(is_bnode).with_columns(
        o.alias("value"),
        pl.lit("bnode").alias("value_type"),
        pl.lit("").alias("datatype"),
        pl.lit("").alias("lang"),
        (o.str.contains(r"\s") | (o.str.len_bytes() < 3)).alias("bad"),
    )
    quoted = o.str.splitn('"', 3)
    literals = df.filter(is_literal).with_columns(quoted.struct.field("field_1").alias("value"), quoted.struct.field("field_2").alias("suffix"))
    suffix = pl.col("suffix")
    datatype = suffix.str.strip_prefix("^^<").str.strip_suffix(">")
    typed = suffix.str.starts_with("^^<") & suffix.str.ends_with(">")
    literals = literals.with_columns(
        pl.lit("literal").alias("value_type"),
        pl.when(typed & (datatype != nt.XSD_STRING)).then(datatype).otherwise(pl.lit("")).alias("datatype"),
        pl.when(suffix.str.starts_with("@")).then(suffix.str.slice(1)).otherwise(pl.lit("")).alias("lang"),
        ~((suffix == "") | suffix.str.contains(f"^@{nt.LANG}$") | (typed & ~datatype.str.contains(">", literal=True))).alias("bad"),
    ).drop("suffix")
    columns = ["subject", "pid", "value", "value_type", "datatype", "lang", "n", *(["run"] if not keep.everything else [])]
    read = pl.concat([f.select(*columns, "bad") for f in (iris, bnodes, literals)])
    valid = ~pl.col("bad").fill_null(True) & pl.col("pid").str.contains(f"^{nt.PROPERTY}$")
    read = read.with_columns(valid.alias("valid"))
    claims = read.filter("valid").select(columns)
    invalid = pl.concat([read.filter(~pl.col("valid"))["n"], df.filter(~(is_iri | is_bnode | is_literal))["n"]])
    return (claims if keep.everything else _kept(claims, keep)), invalid


def _kept(claims: Any, keep: Filter) -> Any:
    """The claims of the subjects `keep` keeps, decided per run of one subject's claim lines."""
    import polars as pl

    member = pl.col("subject").str.starts_with("P") | pl.col("subject").is_in(list(keep.qids))
    if keep.classes:
        member = member | ((pl.col("pid") == "P31") & pl.col("value").is_in(list(keep.classes))).any().over("run")
    return claims.filter(member).drop("run")


def _labels(df: Any, languages: tuple[str, ...]) -> Any:
    import polars as pl

    quoted = pl.col("o").str.splitn('"', 3)
    out = df.filter(pl.col("p").is_in(list(LABELS)) & pl.col("o").str.starts_with('"')).select(
        _short(pl.col("s")).alias("id"),
        pl.col("p").replace_strict(LABELS).alias("kind"),
        quoted.struct.field("field_1").alias("text"),
        quoted.struct.field("field_2").alias("suffix"),
    )
    out = out.with_columns(pl.col("suffix").str.strip_prefix("@").alias("lang"))
    return out.filter(pl.col("suffix").str.starts_with("@") & pl.col("lang").is_in(list(languages))).select("id", "kind", "lang", "text")


def _props(df: Any) -> Any:
    import polars as pl

    obj = pl.col("o").str.strip_prefix("<").str.strip_suffix(">")
    typed = df.filter((pl.col("p") == PROPERTY_TYPE) & pl.col("o").str.starts_with(f"<{nt.ONTOLOGY}") & pl.col("o").str.ends_with(">"))
    typed = typed.select(_short(pl.col("s")).alias("pid"), obj.str.strip_prefix(nt.ONTOLOGY).alias("type"), pl.lit(False).alias("direct"))
    typed = typed.filter(pl.col("type").str.contains(f"^{nt.TYPE_NAME}$"))
    direct = df.filter((pl.col("p") == DIRECT) & pl.col("o").str.starts_with(PROP_DIRECT) & pl.col("o").str.ends_with(">"))
    direct = direct.select(_short(pl.col("s")).alias("pid"), obj.str.strip_prefix(nt.DIRECT).alias("direct_pid"))
    direct = direct.filter(pl.col("direct_pid").str.contains(f"^{nt.PROPERTY}$") & (pl.col("direct_pid") == pl.col("pid")))
    direct = direct.select("pid", pl.lit("").alias("type"), pl.lit(True).alias("direct"))
    return pl.concat([typed, direct])


def _redirects(df: Any) -> Any:
    """`owl:sameAs` lines between two Wikidata entities: (old id, new id)."""
    import polars as pl

    entity = f"^<{nt.WD}{nt.ENTITY}>$"
    same = df.filter((pl.col("p") == SAME_AS) & pl.col("s").str.contains(entity) & pl.col("o").str.contains(entity))
    return same.select(_short(pl.col("s")).alias("old_id"), _short(pl.col("o")).alias("new_id"))


def _tables(claims: Any, labels: Any, props: Any, redirects: Any, fallback: Rows) -> dict[str, Any]:
    """The store's tables (its Arrow schema), the fallback lines' rows after the others."""
    import polars as pl
    import pyarrow as pa

    from .store import arrow_schema, arrow_table

    # Arrow's classic strings, not polars' string views: the cast to the store's schema is then a
    # narrowing of offsets, not a gather of every string (0.21 against 0.26 CPU-s per GB of input)
    oldest = pl.CompatLevel.oldest()
    claims = claims.drop("n").to_arrow(compat_level=oldest)
    n = claims.num_rows
    claims = claims.append_column("precision", pa.nulls(n, pa.int64())).append_column("calendar", pa.nulls(n, pa.string()))
    found = {
        "claims": claims,
        "labels": labels.to_arrow(compat_level=oldest),
        "properties": props.to_arrow(compat_level=oldest),
        "redirects": redirects.to_arrow(compat_level=oldest),
    }
    more: dict[str, list[Any]] = {"claims": fallback.claims, "labels": fallback.labels, "properties": fallback.props, "redirects": fallback.redirects}
    out = {}
    for table, data in found.items():
        data = data.cast(arrow_schema(table))
        out[table] = pa.concat_tables([data, arrow_table(table, more[table])]) if more[table] else data
    return out
