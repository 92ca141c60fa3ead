"""Resuming an output safely: the one routine `answer`, `build` and `evaluate` share.

An output file's header records a fingerprint of what produced it: a hash of every input file
(dataset, answers, records) and the configuration (models, seeds, settings). A rerun into the
same file resumes it only when the fingerprint matches; otherwise it refuses, saying what
changed, or starts over with `overwrite`. Rows are keyed the same way everywhere (`key`), and
the file is held under an exclusive lock (`kalma.locks`) from the check to the last row.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from .errors import ResumeMismatch
from .jsonl import JsonlWriter, dumps, read_header, read_jsonl
from .locks import OutputLock
from .schema import FORMAT_VERSION

R = TypeVar("R", bound=BaseModel)


def file_digest(path: str | Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


_DIGESTS: dict[str, str] = {}  # this process's, by file identity: also when the call cache is off


def _memo_digest(path: Path) -> str:
    """`file_digest`, remembered in the call cache by the file's identity and modification
    (path, size, mtime, inode): a model folder of gigabytes is read once, not on every run."""
    from .cache import get_cache, make_key

    st = path.stat()
    key = make_key("digest", "file", str(path.resolve()), {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}, None)
    if key in _DIGESTS:
        return _DIGESTS[key]
    cache = get_cache()
    found = cache.get(key)
    if not isinstance(found, str):
        found = file_digest(path)
        cache.put(key, "digest", found)
    _DIGESTS[key] = found
    return found


def path_digest(path: str | Path) -> str:
    """The content digest of a file, or of a folder (every file in it, by relative path)."""
    path = Path(path)
    if not path.is_dir():
        return _memo_digest(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        digest = _store_meta_digest(f) if f == path / "meta.json" else None
        h.update(f"{f.relative_to(path).as_posix()}\0{digest or _memo_digest(f)}\n".encode())
    return "sha256:" + h.hexdigest()


def _store_meta_digest(meta: Path) -> str | None:
    """A local Wikidata store's identity in its `meta.json`: the dump it came from, the options and
    the rows, not when or how fast it was made (a re-import of the same dump is the same store).
    None for any other meta.json."""
    try:
        found = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or "kalma_store" not in found:
        return None
    dump = {k: v for k, v in found.get("dump", {}).items() if k in ("path", "size", "mtime_ns", "date", "compression")}
    return value_digest({"store": found["kalma_store"], "dump": dump, "options": found.get("options"), "rows": found.get("rows")})


def spec_paths(spec: str | None) -> list[Path]:
    """The local files or folders a component spec names, whose content decides its results:
    `kg.ttl`, `rdflib:kg.ttl`, `oxigraph:STORE`, `table:labels.jsonl`, `hf:./model@bf16`,
    `llm:hf:./model`; `demo` names the bundled snapshot. URLs and hub ids name none.

    >>> spec_paths("sparql:http://127.0.0.1:7878/query"), spec_paths("openai:gpt-4o-mini")
    ([], [])
    """
    from .registry import parse_spec

    if not spec:
        return []
    if spec.partition(",")[0] == "demo":
        from .kg import demo_snapshot_path

        return [demo_snapshot_path()]
    for text in (spec, parse_spec(spec)[1]):
        for candidate in (text, text.rpartition("@")[0]):  # `@bf16` and the like follow a model path
            if candidate and not candidate.startswith(("http://", "https://")) and Path(candidate).expanduser().exists():
                return [Path(candidate).expanduser()]
    argument = parse_spec(spec)[1]
    return spec_paths(argument) if ":" in argument and argument != spec else []  # `llm:SPEC` names another spec


def absolute_spec(spec: str) -> str:
    """`spec` with the local file or folder it names made absolute (`wikidata-local:runs/store`,
    `hf:./lm@bf16`, `llm:hf:./lm`, `kg.ttl`), so that a header's spec opens from any folder. Names
    (`demo`, `smollm2`, `template`), hub ids, URLs and paths that do not exist are kept as given.

    >>> absolute_spec("demo"), absolute_spec("smollm2"), absolute_spec("sparql:http://127.0.0.1:7878/query")
    ('demo', 'smollm2', 'sparql:http://127.0.0.1:7878/query')
    """
    from .registry import parse_spec

    if ("/" in spec or "." in spec) and Path(spec).expanduser().exists():  # a bare path (`kg.ttl`), not a bare name
        return str(Path(spec).expanduser().resolve())
    name, argument, _ = parse_spec(spec)
    for text in (argument, argument.rpartition("@")[0]):  # `@bf16` and the like follow a model path
        if text and not text.startswith(("http://", "https://")) and Path(text).expanduser().exists():
            return spec.replace(f"{name}:{text}", f"{name}:{Path(text).expanduser().resolve()}", 1)
    if ":" in argument and not argument.startswith(("http://", "https://")):  # `llm:SPEC` names another spec
        return spec.replace(argument, absolute_spec(argument), 1)
    return spec


def records_digest(records: Iterable[BaseModel]) -> str:
    h = hashlib.sha256()
    for r in records:
        h.update(r.model_dump_json().encode("utf-8") + b"\n")
    return "sha256:" + h.hexdigest()


def value_digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def fingerprint(
    inputs: Mapping[str, str | Path | Iterable[BaseModel] | None], config: Mapping[str, Any], components: Mapping[str, str | None] | None = None
) -> dict[str, Any]:
    """{"inputs": {name: digest}, "config": config}: files are hashed by content, record lists
    by their JSON; `config` must be JSON-serialisable and is stored as is. `components` maps a
    role to the spec of the component playing it (`{"kg": "kg.ttl", "nli": "table:labels.jsonl"}`):
    every file or folder a spec names is an input too, by content (`spec_paths`)."""
    digests: dict[str, str | None] = {}
    for role, spec in (components or {}).items():
        for path in spec_paths(spec):
            digests[f"{role} {path}"] = path_digest(path)
    for name, src in inputs.items():
        if src is None:
            digests[name] = None
        elif isinstance(src, (str, Path)):
            digests[name] = file_digest(src)
        else:
            digests[name] = records_digest(src)
    return {"inputs": digests, "config": json.loads(dumps(dict(config), sort_keys=True, default=str))}


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out = [f"input {k}" for k in sorted(set(old.get("inputs", {})) | set(new["inputs"])) if old.get("inputs", {}).get(k) != new["inputs"].get(k)]
    oc, nc = old.get("config", {}), new["config"]
    out += [f"setting {k} ({oc.get(k)!r} -> {nc.get(k)!r})" for k in sorted(set(oc) | set(nc)) if oc.get(k) != nc.get(k)]
    return out


class ResumableOutput(Generic[R]):
    """`with ResumableOutput(path, kind, Record, key, run, provenance) as out:` then
    `out.done` (keys already written, when resuming) and `out.write(record)`."""

    def __init__(
        self,
        path: str | Path,
        kind: str,
        record_type: type[R],
        key: Callable[[R], str],
        run: dict[str, Any],
        provenance: dict[str, Any],
        *,
        overwrite: bool = False,
    ):
        self.path, self.kind, self.record_type, self.key = Path(path), kind, record_type, key
        self.run, self.provenance, self.overwrite = run, provenance, overwrite
        self.done: set[str] = set()
        self.existing: list[R] = []  # the rows found when resuming
        self.errors: list[str] = []  # bad lines found when resuming (their rows are redone)
        self.resumed = False
        self._lock = OutputLock(self.path)
        self._writer: JsonlWriter | None = None
        self._written = 0
        # folders this run creates: a run that fails before its first row takes them away again
        self._new_dirs = [p for p in (self.path.parent, *self.path.parent.parents) if not p.exists()]

    def __enter__(self) -> ResumableOutput[R]:
        self._lock.acquire()
        try:
            self.resumed = self._check()
            if self.resumed:
                found = read_jsonl(self.path, self.record_type, kind=self.kind, strict=False, allow_empty=True)
                seen: set[str] = set()
                self.existing = [r for r in found.records if not (self.key(r) in seen or seen.add(self.key(r)))]  # type: ignore[func-returns-value]
                self.done = seen
                self.errors = [str(e) for e in found.errors]
            self._writer = JsonlWriter(self.path, self.kind, {**self.provenance, "run": self.run}, append=self.resumed, lock=False)
        except BaseException:
            self._lock.release()
            raise
        return self

    def _check(self) -> bool:
        """True to resume, False to start afresh; ResumeMismatch when that would mix two runs."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return False
        if self.overwrite:
            return False
        header = read_header(self.path)
        if header.get("format_version") != FORMAT_VERSION:  # rows of an older layout must not be appended to
            raise ResumeMismatch(
                f"{self.path} was written in format version {header.get('format_version')!r} and this kalma "
                f"writes {FORMAT_VERSION}; resuming would mix two layouts. Use --overwrite to start over"
            )
        stored = header.get("provenance", {}).get("run")
        if stored == self.run:
            return True
        why = "it has no fingerprint (written by an older kalma)" if stored is None else "changed since: " + "; ".join(_differences(stored, self.run))
        raise ResumeMismatch(
            f"{self.path} was made from other inputs or settings ({why}); resuming would mix two runs. "
            "Use --overwrite to start over, or write to another output"
        )

    @property
    def kept(self) -> bool:
        """Whether the file stays if the run fails now: one resumed, or with a row written."""
        return self.resumed or self._written > 0

    def write(self, record: R) -> None:
        assert self._writer is not None
        self._writer.write(record)
        self._written += 1
        self.done.add(self.key(record))

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
            if e is not None and not self.kept and self._writer is not None:
                self.path.unlink(missing_ok=True)  # a header and nothing else: a failure leaves no trace
        finally:
            self._lock.release()
        if e is not None and not self.kept:
            for folder in self._new_dirs:  # innermost first; only the empty ones
                try:
                    folder.rmdir()
                except OSError:
                    break
