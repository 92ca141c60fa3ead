"""Record files for other tools: pandas, Hugging Face `datasets`, jq.

Every kalma file opens with a header line (its kind, format version and provenance), so that a
file never travels without what produced it and a resumed run can check it continues the same
work. Tools that read JSON Lines as a table take that line for a row. Two ways out, both of
which keep the provenance with the data:

- `read_frame(path)`: a pandas DataFrame of the validated records, the header in `df.attrs`;
- `kalma export FILE`: the records as plain JSON Lines (what `pandas.read_json(..., lines=True)`
  and `datasets.load_dataset("json", data_files=...)` read), the header beside it in
  `<output>.header.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .jsonl import HEADER_KEY, read_header, read_jsonl
from .schema import RECORD_KINDS, Record


def csv_safe(v: Any) -> Any:
    """A text cell a spreadsheet will not run as a formula (`=`, `+`, `-`, `@`, tab, CR lead one).

    >>> csv_safe("=HYPERLINK(1)"), csv_safe("Rome"), csv_safe(3)
    ("'=HYPERLINK(1)", 'Rome', 3)
    """
    return "'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v


def _records(path: str | Path, kind: str | None) -> tuple[list[Record], dict[str, Any]]:
    """The records of `path`, validated as `kind` (by default the kind its header names)."""
    header = read_header(path)
    kind = kind or header.get("kind")
    if kind not in RECORD_KINDS:
        raise ValueError(
            f"{path}: {'its header names kind ' + repr(kind) if kind else 'no header names its kind'}; give one of {', '.join(sorted(RECORD_KINDS))}"
        )
    return list(read_jsonl(path, RECORD_KINDS[kind], kind=kind)), {HEADER_KEY: header} if header else {HEADER_KEY: {"kind": kind}}


def read_frame(path: str | Path, kind: str | None = None) -> Any:
    """A pandas DataFrame of the file's records, one row per record, nested fields as Python
    objects; the header (kind, format version, provenance) in `df.attrs["kalma"]`."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("read_frame needs pandas: pip install pandas (or use `kalma export` and any JSON Lines reader)") from None
    records, header = _records(path, kind)
    frame = pd.DataFrame([r.model_dump(mode="json") for r in records])
    frame.attrs.update(header)
    return frame


def export(path: str | Path, out: str | Path, kind: str | None = None) -> int:
    """Write the records as plain JSON Lines to `out`, and the header to `<out>.header.json`."""
    records, header = _records(path, kind)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(r.model_dump_json() + "\n")
    Path(f"{out}.header.json").write_text(json.dumps({**header, "exported_from": str(path)}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(records)
