"""JSONL reading and writing with line-numbered errors and a format header.

A file is a header line `{"kalma": {"kind": ..., "format_version": ..., "provenance": {...}}}`
followed by one record per line. Strict reading raises on the first bad line; lenient reading
collects every error and keeps every good line, so a single corrupt line never costs the rest.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .schema import FORMAT_VERSION

R = TypeVar("R", bound=BaseModel)
HEADER_KEY = "kalma"


class RecordError(ValueError):
    """A bad line: names the file, the line number and the field."""

    def __init__(self, path: str | Path, line: int, field_name: str, message: str):
        self.path, self.line, self.field, self.message = str(path), line, field_name, message
        where = f"{self.path}:{line}"
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


def make_header(kind: str, provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    return {HEADER_KEY: {"kind": kind, "format_version": FORMAT_VERSION, "provenance": provenance or {}}}


def _validation_error(path: Path, lineno: int, err: ValidationError) -> RecordError:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    extra = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return RecordError(path, lineno, loc, first["msg"] + extra)


def read_jsonl(
    path: str | Path, model: type[R], *, kind: str | None = None, strict: bool = True
) -> ReadResult[R]:
    """Read `path` into `model` records.

    strict: raise the first RecordError. Otherwise collect errors and keep the good lines.
    A header of another kind or a newer format version is always an error.
    """
    path = Path(path)
    result: ReadResult[R] = ReadResult(records=[])

    def fail(err: RecordError) -> None:
        if strict:
            raise err
        result.errors.append(err)

    with path.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                fail(RecordError(path, lineno, "", f"invalid JSON ({exc.msg} at column {exc.colno})"))
                continue
            if isinstance(obj, dict) and HEADER_KEY in obj and len(obj) == 1:
                header = obj[HEADER_KEY]
                if not isinstance(header, dict):
                    raise RecordError(path, lineno, HEADER_KEY, "header must be an object")
                if kind and header.get("kind") != kind:
                    raise RecordError(path, lineno, "kind", f"expected a {kind!r} file, found {header.get('kind')!r}")
                version = header.get("format_version")
                if not isinstance(version, int) or version > FORMAT_VERSION:
                    raise RecordError(
                        path, lineno, "format_version", f"unsupported format version {version!r} (this reader: {FORMAT_VERSION})"
                    )
                result.header = header
                continue
            if not isinstance(obj, dict):
                fail(RecordError(path, lineno, "", f"expected a JSON object, found {type(obj).__name__}"))
                continue
            try:
                result.records.append(model.model_validate(obj))
                result.lines.append(lineno)
            except ValidationError as exc:
                fail(_validation_error(path, lineno, exc))
    return result


class JsonlWriter:
    """Appends records, flushing and fsyncing each line so a killed run loses nothing it wrote.

    Opening an existing file in append mode keeps its rows (resume); a torn last line left
    by a kill is cut off first so the next row starts on a fresh line.
    """

    def __init__(self, path: str | Path, kind: str, provenance: dict[str, Any] | None = None, *, append: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        resuming = append and self.path.exists() and self.path.stat().st_size > 0
        if resuming:
            _truncate_torn_tail(self.path)
        self._fh = self.path.open("a" if resuming else "w", encoding="utf-8")
        if not resuming:
            self._write_obj(make_header(kind, provenance))

    def _write_obj(self, obj: Any) -> None:
        self._fh.write(json.dumps(obj, ensure_ascii=False, sort_keys=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def write(self, record: BaseModel) -> None:
        self._write_obj(record.model_dump(mode="json", exclude_none=False))

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _truncate_torn_tail(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with path.open("r+b") as fh:
            fh.truncate(cut)


def write_jsonl(path: str | Path, records: Iterable[BaseModel], kind: str, provenance: dict[str, Any] | None = None) -> int:
    n = 0
    with JsonlWriter(path, kind, provenance) as w:
        for r in records:
            w.write(r)
            n += 1
    return n
