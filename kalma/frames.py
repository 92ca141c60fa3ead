"""Record files for other tools: pandas, Hugging Face `datasets`, jq.

Every kalma file opens with a header line (its kind, format version and provenance), so that a
file never travels without what produced it and a resumed run can check it continues the same
work. Tools that read JSON Lines as a table take that line for a row. Two ways out, both of
which keep the provenance with the data:

- `read_frame(path)`: a pandas DataFrame of the validated records, the header in `df.attrs`;
- `kalma export FILE`: the records as plain JSON Lines (what `pandas.read_json(..., lines=True)`
  and `datasets.load_dataset("json", data_files=...)` read), the header beside it in
  `<output>.header.json`.

A scores file's verdicts (per sentence, per citation) flatten to one row per citation or [NA]
mark: `kalma export scores.jsonl --verdicts`, or `read_verdicts(path)`; `VERDICT_COLUMNS` are
their columns, documented in docs/formats.md ("Verdicts").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .jsonl import HEADER_KEY, dumps, read_header, read_jsonl
from .schema import RECORD_KINDS, AnswerScores, NAVerdict, Record


def csv_safe(v: Any) -> Any:
    """A text cell a spreadsheet will not run as a formula (`=`, `+`, `-`, `@`, tab, CR lead one).

    >>> csv_safe("=HYPERLINK(1)"), csv_safe("Rome"), csv_safe(3)
    ("'=HYPERLINK(1)", 'Rome', 3)
    """
    return "'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v


VERDICT_COLUMNS = (
    "answer_id",
    "entry_id",
    "sentence",
    "start",
    "end",
    "sentence_text",
    "kind",
    "bracket",
    "qid",
    "relation",
    "value",
    "malformed",
    "in_kg",
    "in_minimum",
    "precise",
    "entailment",
    "aligned",
    "unjudged",
    "verdict",
    "why",
    "na_entailed",
    "na_relevance",
)


def verdict_rows(row: AnswerScores) -> Iterator[dict[str, Any]]:
    """One row per citation (kind `citation`, or `malformed` for markup citing nothing) and per
    [NA] mark (kind `na`, its outcome as the verdict), every row with all of `VERDICT_COLUMNS`."""
    for s in row.verdicts:
        base = {"answer_id": row.answer_id, "entry_id": row.entry_id, "sentence": s.index, "start": s.start, "end": s.end, "sentence_text": s.text}
        for c in s.citations:
            fields = c.model_dump(exclude={"verdict", "why"})
            yield {**dict.fromkeys(VERDICT_COLUMNS), **base, "kind": "malformed" if c.malformed else "citation", **fields, "verdict": c.verdict, "why": c.why}
        if s.na is not None:
            na: NAVerdict = s.na
            for k, mark in enumerate(s.na_marks or ["[NA]"]):
                # §4.3 judges the sentence: a second mark shares the outcome and is not counted again
                why = na.why if k == 0 else f"the sentence's [NA] mark {k + 1} of {len(s.na_marks)}: [NA] precision counts the sentence once"
                yield {
                    **dict.fromkeys(VERDICT_COLUMNS),
                    **base,
                    "kind": "na",
                    "bracket": mark,
                    "verdict": na.outcome,
                    "why": why,
                    "na_entailed": "; ".join(na.entailed),
                    "na_relevance": na.relevance,
                }


def _records(path: str | Path, kind: str | None) -> tuple[list[Record], dict[str, Any]]:
    """The records of `path`, validated as `kind` (by default the kind its header names)."""
    header = read_header(path)
    kind = kind or header.get("kind")
    if kind not in RECORD_KINDS:
        raise ValueError(
            f"{path}: {'its header names kind ' + repr(kind) if kind else 'no header names its kind'}; give one of {', '.join(sorted(RECORD_KINDS))}"
        )
    return list(read_jsonl(path, RECORD_KINDS[kind], kind=kind)), {HEADER_KEY: header} if header else {HEADER_KEY: {"kind": kind}}


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("reading a frame needs pandas: pip install pandas (or use `kalma export` and any JSON Lines reader)") from None
    return pd


def read_frame(path: str | Path, kind: str | None = None) -> Any:
    """A pandas DataFrame of the file's records, one row per record, nested fields as Python
    objects; the header (kind, format version, provenance) in `df.attrs["kalma"]`."""
    records, header = _records(path, kind)
    frame = _pandas().DataFrame([r.model_dump(mode="json") for r in records])
    frame.attrs.update(header)
    return frame


def _flat(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    records, header = _records(path, "scores")
    return [v for r in records if isinstance(r, AnswerScores) for v in verdict_rows(r)], header


def read_verdicts(path: str | Path) -> Any:
    """A scores file's verdicts as a DataFrame, one row per citation or [NA] mark (`VERDICT_COLUMNS`)."""
    rows, header = _flat(path)
    frame = _pandas().DataFrame(rows, columns=list(VERDICT_COLUMNS))
    frame.attrs.update(header)
    return frame


TABLE_SUFFIXES = (".csv", ".tsv", ".parquet")  # flat tables: verdict rows only


def export(path: str | Path, out: str | Path, kind: str | None = None, verdicts: bool = False) -> int:
    """Write the records as plain JSON Lines to `out` (with `verdicts`, a scores file's verdict
    rows instead: as CSV, TSV or Parquet when `out` is named so), and the header to
    `<out>.header.json`. Records are nested: a table's name for them is refused."""
    out = Path(out)
    table = out.suffix.lower() in TABLE_SUFFIXES
    if table and not verdicts:
        raise ConfigError(f"{out}: records are nested, and a {out.suffix} file holds flat rows; name it .jsonl (or export --verdicts, whose rows are flat)")
    out.parent.mkdir(parents=True, exist_ok=True)
    if verdicts:
        rows, header = _flat(path)
        lines = [dumps(r, ensure_ascii=False) for r in rows]
    else:
        records, header = _records(path, kind)
        lines = [r.model_dump_json() for r in records]
    if table:
        _write_table(rows, out)
    else:
        with out.open("w", encoding="utf-8") as fh:
            fh.writelines(line + "\n" for line in lines)
    Path(f"{out}.header.json").write_text(dumps({**header, "exported_from": str(path)}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(lines)


def _write_table(rows: list[dict[str, Any]], out: Path) -> None:
    """Verdict rows (`VERDICT_COLUMNS`, in that order) as CSV, TSV or Parquet, by `out`'s suffix."""
    columns = list(VERDICT_COLUMNS)
    if out.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows, schema=None) if rows else pa.table({c: [] for c in columns}), out)
        return
    import csv

    with out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, columns, delimiter="\t" if out.suffix.lower() == ".tsv" else ",")
        writer.writeheader()
        writer.writerows({k: csv_safe(v) for k, v in r.items()} for r in rows)  # an answer's text is no formula for a spreadsheet
