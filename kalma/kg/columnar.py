"""The truthy N-Triples parsed column by column: polars string operations over a block's lines,
in Rust, with the GIL released; Python only for the lines outside the common shape.

A line of the common shape is `<S> <P> O .` with one space between terms, no backslash (so no
escape to undo and no quote inside a literal), and an object that is an IRI, a blank node or a
literal (`"…"`, `"…"@lang`, `"…"^^<datatype>`). Such lines are cut with `splitn`, tested by
prefix and suffix and sliced: no regular expression runs over a whole line. Every other line the
store would read (an escape, unusual spacing, anything malformed) goes to the pattern parser
(`NTriples`) on its own, with its line number, so the rows, and what is counted and named as
malformed, are the pattern parser's: `tests/unit/test_wikidata_dumps.py` holds the two to
identical stores on real entities and on generated dumps.

Subsets (`Filter`) decide per run of one subject's claim lines, as the pattern parser does;
a block where such a run meets a line outside the common shape is parsed by `NTriples` whole.
"""

from __future__ import annotations

from typing import Any

from .dumps import WD, Filter, Malformed, NTriples, Rows

CLAIM = "> <http://www.wikidata.org/prop/direct/P"
DIRECT_CLAIM = "#directClaim> <"
DIRECT_IRI = "http://www.wikidata.org/prop/direct/"
PROP_DIRECT = f"<{DIRECT_IRI}"
LABELS = {
    "<http://www.w3.org/2000/01/rdf-schema#label>": "label",
    "<http://www.w3.org/2004/02/skos/core#altLabel>": "alias",
    "<http://schema.org/description>": "description",
}
PROPERTY_TYPE = "<http://wikiba.se/ontology#propertyType>"
DIRECT = "<http://wikiba.se/ontology#directClaim>"
ONTOLOGY = "http://wikiba.se/ontology#"
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def parse_block(block: bytes, first_line: int, languages: tuple[str, ...], keep: Filter, name: str) -> tuple[dict[str, Any], Malformed, int]:
    """One block's rows as Arrow tables (the store's columns), what was malformed, and its lines."""
    import polars as pl

    lines = pl.Series("line", [block.decode("utf-8", "replace")]).str.split("\n").explode()
    n_lines = len(lines) - 1  # a split on "\n" gives one piece more than it has newlines
    frame = pl.DataFrame({"line": lines, "n": pl.int_range(first_line, first_line + len(lines), eager=True)})
    text = pl.col("line")
    # One pass over every line for any of the substrings a read line holds (a superset of them:
    # sitelinks, other languages' labels, most of the rest never go further), then the exact test
    # on those: the lines the store reads, as the pattern parser chooses them.
    frame = frame.filter(text.str.contains_any([CLAIM, PROPERTY_TYPE, DIRECT, *(f'"@{lang}' for lang in languages)]))
    is_claim = text.str.contains(CLAIM, literal=True) & ~text.str.contains(DIRECT_CLAIM, literal=True)
    tagged = pl.any_horizontal([text.str.contains(f'"@{lang}', literal=True) for lang in languages])
    is_label = pl.any_horizontal([text.str.contains(f"{p} ", literal=True) for p in LABELS]) & tagged
    frame = frame.with_columns(is_claim.alias("claim"))
    wanted = frame.filter(pl.col("claim") | is_label | text.str.contains(PROPERTY_TYPE, literal=True) | text.str.contains(DIRECT, literal=True))
    parts = wanted.with_columns(text.str.splitn(" ", 3).alias("t")).unnest("t").rename({"field_0": "s", "field_1": "p", "field_2": "o"})
    common = (
        ~text.str.contains("\\", literal=True)
        & pl.col("s").str.starts_with("<")
        & pl.col("s").str.ends_with(">")
        & (pl.col("s").str.count_matches(">", literal=True) == 1)  # no `>` inside the IRI
        & pl.col("o").str.ends_with(" .")
    )
    parts = parts.with_columns(common.fill_null(False).alias("common"), pl.col("o").str.strip_suffix(" .").alias("o"))
    claims = _claims(parts.filter(pl.col("common") & pl.col("claim")))
    # a claim line whose predicate or object is not of the common shape is the pattern parser's to read (or count malformed)
    parts = parts.join(claims.filter(~pl.col("valid")).select("n", pl.lit(True).alias("invalid")), on="n", how="left")
    parts = parts.with_columns((pl.col("common") & pl.col("invalid").is_null()).alias("common"))
    claims = claims.filter(pl.col("valid")).drop("valid")
    rows, bad = Rows(), Malformed()
    odd = parts.filter(~pl.col("common"))
    if odd.height and not keep.everything and odd["claim"].any():
        return _whole(block, first_line, languages, keep, name, n_lines)  # a run of claims meets an odd line: the pattern parser decides it all
    fallback = NTriples(languages, keep)
    for line, n in zip(odd["line"].to_list(), odd["n"].to_list()):
        fallback.parse(line.encode() + b"\n", rows, bad, name, n)
        fallback.finish(rows)
    if not keep.everything:
        claims = _kept(claims, keep)
    labels = _labels(parts.filter(pl.col("common") & ~pl.col("claim")), languages)
    props = _props(parts.filter(pl.col("common") & ~pl.col("claim")))
    return _tables(claims, labels, props, rows), bad, n_lines


def _whole(block: bytes, first_line: int, languages: tuple[str, ...], keep: Filter, name: str, n_lines: int) -> tuple[dict[str, Any], Malformed, int]:
    from .store import arrow_table

    parser, rows, bad = NTriples(languages, keep), Rows(), Malformed()
    parser.parse(block, rows, bad, name, first_line)
    parser.finish(rows)
    return (
        {"labels": arrow_table("labels", rows.labels), "claims": arrow_table("claims", rows.claims), "properties": arrow_table("properties", rows.props)},
        bad,
        n_lines,
    )


def _short(col: Any) -> Any:
    """`Q42` for a Wikidata entity IRI (a column of IRIs without brackets); any other as it is."""
    import polars as pl

    rest = col.str.strip_prefix(WD)
    entity = col.str.starts_with(WD) & rest.str.contains(r"^[QP][0-9]+$")
    return pl.when(entity).then(rest).otherwise(col)


def _claims(df: Any) -> Any:
    """Claim lines of the common shape as claim rows, each `valid` when its predicate and object
    are as the pattern parser reads them (a property id; an IRI, blank node or literal)."""
    import polars as pl

    iri = pl.col("o").str.starts_with("<") & pl.col("o").str.ends_with(">")
    bnode = pl.col("o").str.starts_with("_:")
    literal = pl.col("o").str.starts_with('"')
    inner = pl.col("o").str.slice(1, pl.col("o").str.len_chars() - 2)
    lit, suffix = pl.col("lit"), pl.col("suffix")
    datatype = suffix.str.strip_prefix("^^<").str.strip_suffix(">")
    quoted = pl.col("o").str.splitn('"', 3)
    df = df.lazy().with_columns(quoted.struct.field("field_1").alias("lit"), quoted.struct.field("field_2").alias("suffix"))
    out = df.with_columns(
        _short(pl.col("s").str.slice(1, pl.col("s").str.len_chars() - 2)).alias("subject"),
        pl.col("p").str.strip_prefix(PROP_DIRECT).str.strip_suffix(">").alias("pid"),
        pl.when(iri).then(_short(inner)).when(bnode).then(pl.col("o")).otherwise(lit).alias("value"),
        pl.when(iri).then(pl.lit("iri")).when(bnode).then(pl.lit("bnode")).when(literal).then(pl.lit("literal")).alias("kind"),
        pl.when(literal & suffix.str.starts_with("^^<") & suffix.str.ends_with(">")).then(datatype).otherwise(pl.lit("")).alias("datatype"),
        pl.when(literal & suffix.str.starts_with("@")).then(suffix.str.slice(1)).otherwise(pl.lit("")).alias("lang"),
    )
    out = out.with_columns(
        pl.when(pl.col("kind") == "iri")
        .then(pl.when(pl.col("value").str.contains(r"^[QP][0-9]+$")).then(pl.lit("item")).otherwise(pl.lit("uri")))
        .otherwise(pl.col("kind"))
        .alias("value_type"),
        pl.when(pl.col("datatype") == XSD_STRING).then(pl.lit("")).otherwise(pl.col("datatype")).alias("datatype"),
    )
    valid = (
        pl.col("pid").str.contains(r"^P[0-9]+$")
        & pl.col("kind").is_not_null()
        & ~(iri & inner.str.contains(">", literal=True))
        & ~(bnode & pl.col("o").str.contains(r"\s"))
        & ~(
            literal
            & ~(
                suffix.eq("")
                | suffix.str.contains(r"^@[A-Za-z0-9-]+$")
                | (suffix.str.starts_with("^^<") & suffix.str.ends_with(">") & ~datatype.str.contains(">", literal=True))
            )
        )
    )
    return out.with_columns(valid.fill_null(False).alias("valid")).select("subject", "pid", "value", "value_type", "datatype", "lang", "n", "valid").collect()


def _kept(claims: Any, keep: Filter) -> Any:
    """The claims of the subjects `keep` keeps, decided per run of one subject's claim lines."""
    import polars as pl

    run = (pl.col("subject") != pl.col("subject").shift(1)).fill_null(True).cum_sum().alias("run")
    claims = claims.with_columns(run)
    member = pl.col("subject").str.starts_with("P") | pl.col("subject").is_in(list(keep.qids))
    if keep.classes:
        member = member | ((pl.col("pid") == "P31") & pl.col("value").is_in(list(keep.classes))).any().over("run")
    return claims.filter(member).drop("run")


def _labels(df: Any, languages: tuple[str, ...]) -> Any:
    import polars as pl

    quoted = pl.col("o").str.starts_with('"')
    text = pl.col("o").str.splitn('"', 3).struct.field("field_1")
    suffix = pl.col("o").str.splitn('"', 3).struct.field("field_2")
    out = df.filter(pl.col("p").is_in(list(LABELS)) & quoted).with_columns(
        _short(pl.col("s").str.slice(1, pl.col("s").str.len_chars() - 2)).alias("id"),
        pl.col("p").replace_strict(LABELS).alias("kind"),
        suffix.str.strip_prefix("@").alias("lang"),
        text.alias("text"),
        suffix.str.starts_with("@").alias("tagged"),
    )
    return out.filter(pl.col("tagged") & pl.col("lang").is_in(list(languages))).select("id", "kind", "lang", "text")


def _props(df: Any) -> Any:
    import polars as pl

    subject = _short(pl.col("s").str.slice(1, pl.col("s").str.len_chars() - 2))
    obj = pl.col("o").str.slice(1, pl.col("o").str.len_chars() - 2)
    typed = df.filter((pl.col("p") == PROPERTY_TYPE) & obj.str.starts_with(ONTOLOGY) & pl.col("o").str.starts_with("<"))
    typed = typed.with_columns(subject.alias("pid"), obj.str.strip_prefix(ONTOLOGY).alias("type"), pl.lit(False).alias("direct"))
    typed = typed.filter(pl.col("type").str.contains(r"^[A-Za-z]+$"))
    direct = df.filter((pl.col("p") == DIRECT) & pl.col("o").str.starts_with(PROP_DIRECT) & pl.col("o").str.ends_with(">"))
    direct = direct.with_columns(subject.alias("pid"), obj.str.strip_prefix(DIRECT_IRI).alias("direct_pid"))
    direct = direct.filter(pl.col("direct_pid").str.contains(r"^P[0-9]+$") & (pl.col("direct_pid") == pl.col("pid")))
    direct = direct.with_columns(pl.lit("").alias("type"), pl.lit(True).alias("direct"))
    return pl.concat([typed.select("pid", "type", "direct"), direct.select("pid", "type", "direct")])


def _tables(claims: Any, labels: Any, props: Any, fallback: Rows) -> dict[str, Any]:
    """The store's three tables (its Arrow schema), the fallback lines' rows after the others."""
    import polars as pl
    import pyarrow as pa

    from .store import arrow_schema, arrow_table

    # Arrow's classic strings, not polars' string views: the cast to the store's schema is then a
    # narrowing of offsets, not a gather of every string (0.21 against 0.26 CPU-s per GB of input)
    oldest = pl.CompatLevel.oldest()
    claims = claims.drop("n").to_arrow(compat_level=oldest)
    n = claims.num_rows
    claims = claims.append_column("precision", pa.nulls(n, pa.int64())).append_column("calendar", pa.nulls(n, pa.string()))
    found = {"claims": claims, "labels": labels.to_arrow(compat_level=oldest), "properties": props.to_arrow(compat_level=oldest)}
    more: dict[str, list[Any]] = {"claims": fallback.claims, "labels": fallback.labels, "properties": fallback.props}
    out = {}
    for table, data in found.items():
        data = data.cast(arrow_schema(table))
        out[table] = pa.concat_tables([data, arrow_table(table, more[table])]) if more[table] else data
    return out
