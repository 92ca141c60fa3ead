"""JSONL reading and writing with line-numbered errors and a format header.

A file is a header line `{"kalma": {"kind": ..., "format_version": ..., "provenance": {...}}}`
followed by one record per line. Strict reading raises on the first bad line; lenient reading
collects every error and keeps every good line, so a single corrupt line never costs the rest.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import KalmaError
from .schema import FORMAT_VERSION

R = TypeVar("R", bound=BaseModel)
HEADER_KEY = "kalma"
FORMER_KINDS = {"relation_records": "records"}  # {a kind's former name: its name}: `records from-kg` wrote the first until issue 65
FSYNC_EVERY = 256  # rows between disk syncs (a kill loses nothing: rows are flushed at once)


def finite(value: Any) -> Any:
    """`value` with every NaN or infinite number as None: JSON has no NaN, and a file that holds one
    is not JSON to most readers (a figure that could not be computed is null)."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """JSON text of `value` as every file of the project writes it: NaN and infinities as null.

    >>> dumps({"p": float("nan"), "x": [0.5, float("inf")]})
    '{"p": null, "x": [0.5, null]}'
    """
    return json.dumps(finite(value), allow_nan=False, **options)


class RecordError(KalmaError, ValueError):
    """A bad line: names the file, the line number and the field."""

    def __init__(self, path: str | Path, line: int, field_name: str, message: str, *, item: bool = False):
        self.path, self.line, self.field, self.message, self.item = str(path), line, field_name, message, item
        where = f"{self.path}: item {line}" if item else f"{self.path}:{line}"
        super().__init__(f"{where}: field '{field_name}': {message}" if field_name else f"{where}: {message}")


@dataclass
class ReadResult(Generic[R]):
    records: list[R]
    header: dict[str, Any] = field(default_factory=dict)
    errors: list[RecordError] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # source line of each record

    def __iter__(self) -> Iterator[R]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)


def make_header(kind: str, provenance: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """The header line; `extra` adds sections such as `submission`."""
    return {HEADER_KEY: {"kind": kind, "format_version": FORMAT_VERSION, "provenance": provenance or {}, **extra}}


def _validation_error(path: Path, lineno: int, err: ValidationError, item: bool = False) -> RecordError:
    """The first field wrong, with every other one said too (`field 'entry_id': Field required;
    field 'text': Field required`): a user fixes a line once."""
    errors = err.errors()
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"])
    extra = "".join(f"; field '{'.'.join(str(p) for p in e['loc'])}': {e['msg'].removeprefix('Value error, ')}" for e in errors[1:])
    return RecordError(path, lineno, loc, first["msg"].removeprefix("Value error, ") + extra, item=item)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
HEADER_PREFIX = b'{"' + HEADER_KEY.encode() + b'"'


def _decode_line(path: Path, lineno: int, raw: bytes) -> Any:
    """One line as a JSON value, or a RecordError saying why it is not one. Checked per line:
    UTF-8, JSON syntax, nesting depth, and lone surrogate escapes (`\\ud800` parses, but is no
    character and cannot be written back)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(path, lineno, "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(path, lineno, "", f"invalid JSON ({_json_reason(exc)})") from None
    except RecursionError:
        raise RecordError(path, lineno, "", "invalid JSON (nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise RecordError(path, lineno, "", f"invalid JSON ({exc})") from None
    if _SURROGATE_ESCAPE.search(raw):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise RecordError(path, lineno, "", "a lone surrogate escape (\\ud800-\\udfff) is not a character") from None
    return obj


def _json_reason(exc: json.JSONDecodeError, *, lines: bool = False) -> str:
    """Why a JSON text does not parse, whole: where it broke, and when the text ended first, that it
    looks cut off. (Some of the parser's messages end in "at", which its position completes.)"""
    at = f"line {exc.lineno} column {exc.colno}" if lines else f"column {exc.colno}"
    where = f"{exc.msg} {at}" if exc.msg.endswith(" at") else f"{exc.msg} at {at}"
    ended = exc.msg.startswith("Unterminated string") or exc.pos >= len(exc.doc.rstrip())
    return where + ("; the text ends inside it: was it cut off?" if ended else "")


def _check_header(path: Path, lineno: int, header: Any, kind: str | None) -> dict[str, Any]:
    if not isinstance(header, dict):
        raise RecordError(path, lineno, HEADER_KEY, "header must be an object")
    if kind and FORMER_KINDS.get(str(header.get("kind")), header.get("kind")) != kind:
        raise RecordError(path, lineno, "kind", f"expected {article(kind)} {kind!r} file, found {header.get('kind')!r}")
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise RecordError(path, lineno, "format_version", f"unsupported format version {version!r} (this reader: {FORMAT_VERSION})")
    return header


def _numbered_lines(fh: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of a file, without the byte order mark some editors open it with."""
    for lineno, raw in enumerate(fh, start=1):
        yield lineno, raw.removeprefix(codecs.BOM_UTF8) if lineno == 1 else raw


def read_header(path: str | Path, kind: str | None = None) -> dict[str, Any]:
    """The header of a record file ({} when it has none); a torn header is an error, and a file
    that is no JSON Lines (a CSV, UTF-16, Parquet) is said as such, as `read_jsonl` says it."""
    path = Path(path)
    _not_text_lines(path, kind)
    if not _opens_with(path, b"["):
        _not_delimited(path, kind)
    with path.open("rb") as fh:
        for lineno, raw in _numbered_lines(fh):
            if raw.strip():
                return _header_or_none(path, lineno, raw, None) or {}
    return {}


def _header_or_none(path: Path, lineno: int, raw: bytes, kind: str | None) -> dict[str, Any] | None:
    is_header = raw.lstrip().startswith(HEADER_PREFIX)
    try:
        obj = _decode_line(path, lineno, raw)
    except RecordError as err:
        if is_header:
            raise RecordError(path, lineno, HEADER_KEY, f"the header line is damaged: {err.message}") from None
        raise
    if isinstance(obj, dict) and HEADER_KEY in obj and len(obj) == 1:
        return _check_header(path, lineno, obj[HEADER_KEY], kind)
    return None


def read_jsonl(path: str | Path, model: type[R], *, kind: str | None = None, strict: bool = True, allow_empty: bool = False) -> ReadResult[R]:
    """Read `path` into `model` records.

    strict: raise the first RecordError. Otherwise collect errors and keep the good lines.
    A header that is damaged, of another kind, of a newer format version, or repeated later in
    the file is always an error: it decides how the rest is read. A file that is one JSON array
    of records (ALCE's and ragas' habit) is read too, its errors naming the item. An input of a
    `kind` with nothing in it is an error unless `allow_empty` (an output about to be resumed).
    """
    path = Path(path)
    _not_text_lines(path, kind)
    result: ReadResult[R] = ReadResult(records=[])
    header_line = 0
    first = True

    def fail(err: RecordError) -> None:
        if strict:
            raise err
        result.errors.append(err)

    if _opens_with(path, b"["):
        _read_array(path, model, kind, result, fail)
        return _not_empty(path, result, kind, allow_empty)
    _not_delimited(path, kind)
    with path.open("rb") as fh:
        for lineno, raw in _numbered_lines(fh):
            if not raw.strip():
                continue
            if first or raw.lstrip().startswith(HEADER_PREFIX):
                try:
                    header = _header_or_none(path, lineno, raw, kind)
                except RecordError as err:
                    if err.field == HEADER_KEY or err.field in {"kind", "format_version"}:
                        raise
                    header = None
                if header is not None:
                    if not first:
                        raise RecordError(
                            path,
                            lineno,
                            HEADER_KEY,
                            f"a second header line (the first is line {header_line}): files were concatenated or a header was repeated",
                        )
                    result.header, header_line, first = header, lineno, False
                    continue
            first = False
            try:
                obj = _decode_line(path, lineno, raw)
            except RecordError as err:
                fail(err)
                continue
            if not isinstance(obj, dict):
                fail(RecordError(path, lineno, "", f"expected a JSON object, found {type(obj).__name__}"))
                continue
            try:
                result.records.append(model.model_validate(obj))
                result.lines.append(lineno)
            except ValidationError as exc:
                if not (result.header or result.records or result.errors):
                    _not_another_kind(path, lineno, obj, kind)
                fail(_validation_error(path, lineno, exc))
    return _not_empty(path, result, kind, allow_empty)


def _not_another_kind(path: Path, lineno: int, obj: dict[str, Any], kind: str | None) -> None:
    """A file with no header whose first line is a record of another kind (an answers file given
    as a dataset) is said in one line, not as every field the expected kind misses."""
    from .schema import RECORD_KINDS

    for other, model in RECORD_KINDS.items():
        if other == kind or kind is None:
            continue
        try:
            model.model_validate(obj)
        except ValidationError:
            continue
        fields = ", ".join(list(obj)[:4])
        raise RecordError(path, lineno, "", f"this is {article(other)} {other!r} file (its lines hold {fields}), not {article(kind)} {kind!r} file")


def _not_delimited(path: Path, kind: str | None) -> None:
    """A CSV or TSV given where JSON Lines are read is one error saying so, not one per line."""
    with path.open("rb") as fh:
        head = fh.read(65536).removeprefix(codecs.BOM_UTF8)
    lines = [ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()][:2]
    if not lines or lines[0].lstrip()[:1] in ("{", "["):
        return
    for sep, name in (("\t", "TSV"), (",", "CSV")):
        if sep in lines[0] and all(ln.count(sep) >= lines[0].count(sep) for ln in lines[1:]):
            columns = [c.strip().strip('"') for c in lines[0].split(sep)]
            shown = ", ".join(columns[:6]) + (", …" if len(columns) > 6 else "")
            want = f"{article(kind)} {kind!r} file, " if kind else ""
            raise RecordError(path, 1, "", f"this is a {name} file (columns: {shown}), not JSON Lines: expected {want}one JSON object per line")


def _not_empty(path: Path, result: ReadResult[R], kind: str | None, allow_empty: bool) -> ReadResult[R]:
    if kind and not allow_empty and not (result.header or result.records or result.errors):
        size = path.stat().st_size
        raise RecordError(
            path, 1, "", f"empty file ({size} bytes{', all blank' if size else ''}): expected {article(kind)} {kind!r} file, one JSON record per line"
        )
    return result


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


# UTF-32 first: its little-endian mark begins with UTF-16's
_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


def _not_text_lines(path: Path, kind: str | None) -> None:
    """A UTF-16 or UTF-32 file (PowerShell's `>` and `Out-File` write UTF-16), or a Parquet one
    (a table saved by pandas or `datasets`), is one error, not one per line."""
    with path.open("rb") as fh:
        head = fh.read(4)
    if head == b"PAR1":
        want = f"{article(kind)} {kind!r} file, " if kind else ""
        raise RecordError(
            path, 1, "", f"a Parquet file, not JSON Lines: expected {want}one JSON object per line (pandas: to_json(OUT, orient='records', lines=True))"
        )
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            raise RecordError(
                path, 1, "", f"{name} text (by its byte order mark): save it as UTF-8 (PowerShell: Out-File -Encoding utf8, or Set-Content -Encoding utf8)"
            )


def _opens_with(path: Path, prefix: bytes) -> bool:
    """Whether the file's first non-blank bytes (after a byte order mark) are `prefix`."""
    with path.open("rb") as fh:
        head = fh.read(4096).removeprefix(codecs.BOM_UTF8).lstrip()
    return head.startswith(prefix)


def _read_array(path: Path, model: type[R], kind: str | None, result: ReadResult[R], fail: Any) -> None:
    """A whole-file JSON array: an optional header object first, then one record per item."""
    try:
        items = json.loads(path.read_bytes().removeprefix(codecs.BOM_UTF8).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = _json_reason(exc, lines=True) if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise RecordError(path, 1, "", f"opens like a JSON array but is not one ({msg})") from None
    for n, obj in enumerate(items, start=1):
        if n == 1 and isinstance(obj, dict) and set(obj) == {HEADER_KEY}:
            result.header = _check_header(path, n, obj[HEADER_KEY], kind)
            continue
        if not isinstance(obj, dict):
            fail(RecordError(path, n, "", f"expected a JSON object, found {type(obj).__name__}", item=True))
            continue
        try:
            result.records.append(model.model_validate(obj))
            result.lines.append(n)
        except ValidationError as exc:
            fail(_validation_error(path, n, exc, item=True))


class JsonlWriter:
    """Appends records under an exclusive lock on the file (`kalma.locks`).

    Every row is flushed to the OS at once, so a killed run loses nothing it wrote; rows are
    fsynced in groups (`fsync_every` rows or `fsync_seconds`, and on close), which protects
    against a machine crash without paying one disk sync per row. Opening an existing file in
    append mode keeps its rows (resume); a torn last line left by a kill is cut off first.
    """

    def __init__(
        self,
        path: str | Path,
        kind: str,
        provenance: dict[str, Any] | None = None,
        *,
        append: bool = False,
        lock: bool = True,
        fsync_every: int | None = None,
        fsync_seconds: float = 2.0,
        header: dict[str, Any] | None = None,
    ):
        from .locks import OutputLock

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = OutputLock(self.path).acquire() if lock else None
        try:
            resuming = append and self.path.exists() and self.path.stat().st_size > 0
            if resuming:
                _truncate_torn_tail(self.path)
            self._fh = self.path.open("a" if resuming else "w", encoding="utf-8")
        except BaseException:
            if self._lock:
                self._lock.release()
            raise
        self.fsync_every, self.fsync_seconds = fsync_every or FSYNC_EVERY, fsync_seconds
        self._unsynced, self._synced_at = 0, time.monotonic()
        if not resuming:
            self._write_obj(make_header(kind, provenance, **(header or {})))

    def _write_obj(self, obj: Any) -> None:
        self._fh.write(json.dumps(obj, ensure_ascii=False, sort_keys=False, allow_nan=False) + "\n")
        self._fh.flush()
        self._unsynced += 1
        if self._unsynced >= self.fsync_every or time.monotonic() - self._synced_at >= self.fsync_seconds:
            self.sync()

    def sync(self) -> None:
        os.fsync(self._fh.fileno())
        self._unsynced, self._synced_at = 0, time.monotonic()

    def write(self, record: BaseModel) -> None:
        self._write_obj(record.model_dump(mode="json", exclude_none=False))

    def close(self) -> None:
        try:
            if not self._fh.closed:
                self._fh.flush()
                self.sync()
                self._fh.close()
        finally:
            if self._lock:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _truncate_torn_tail(path: Path) -> None:
    with path.open("r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        # Look back for the last newline in blocks: the file may be large, the torn line is not.
        pos = size
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            fh.seek(pos)
            block = fh.read(step)
            cut = block.rfind(b"\n")
            if cut >= 0:
                fh.truncate(pos + cut + 1)
                return
        fh.truncate(0)


def write_jsonl(
    path: str | Path, records: Iterable[BaseModel], kind: str, provenance: dict[str, Any] | None = None, header: dict[str, Any] | None = None
) -> int:
    n = 0
    with JsonlWriter(path, kind, provenance, header=header) as w:
        for r in records:
            w.write(r)
            n += 1
    return n
