"""One on-disk cache for every model call and KG query.

SQLite in WAL mode, so several processes can read and write at once; each write is its own
transaction, so a killed run leaves a readable cache holding every answer written before it.
Keys hash (namespace, backend, model, parameters, input). Secrets never reach a key or a value:
parameters whose names look like credentials are refused.

A damaged cache file is reported with its path (`CacheError`), and `kalma cache clear`
replaces it; a single unreadable value is a miss, logged, never an error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import KalmaError
from .jsonl import dumps

log = logging.getLogger(__name__)


class CacheError(KalmaError):
    """The cache file cannot be used (not a database, damaged)."""


_SECRET_RE = re.compile(r"api[_-]?key|authorization|secret|password|bearer|cookie|^headers?$|(^|_)token$", re.IGNORECASE)


def default_cache_path() -> Path:
    root = os.environ.get("KALMA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kalma")
    return Path(root) / "cache.sqlite"


def _check_no_secrets(obj: Any, where: str = "params") -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if _SECRET_RE.search(str(k)):
                raise ValueError(f"refusing to cache a credential-like field {where}.{k}")
            _check_no_secrets(v, f"{where}.{k}")


def make_key(namespace: str, backend: str, model: str, params: dict[str, Any], payload: Any) -> str:
    _check_no_secrets(params)
    blob = dumps([namespace, backend, model, params, payload], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


LAYOUT = ("key", "namespace", "value", "created")  # the columns of the `calls` table


class Cache:
    """A key-value store of JSON values; `Cache(None)` is a disabled cache that stores nothing."""

    def __init__(self, path: str | Path | None = "default"):
        self.path = default_cache_path() if path == "default" else (Path(path) if path else None)
        self.hits = 0
        self.misses = 0
        self._local = threading.local()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._guard():
                conn = self._conn()
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, namespace TEXT NOT NULL, "
                    "value TEXT NOT NULL, created REAL DEFAULT (unixepoch('subsec')))"
                )
                columns = [row[1] for row in conn.execute("PRAGMA table_info(calls)")]
            if columns != list(LAYOUT):  # another program's file, or a layout this version does not know
                raise CacheError(
                    f"{self.path}: the call cache holds a `calls` table of another layout ({', '.join(columns)}); "
                    "`kalma cache clear` replaces it with an empty one"
                )

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """SQLite's "file is not a database" and "malformed" become one error naming the file."""
        try:
            yield
        except sqlite3.OperationalError as exc:  # busy beyond the time-out, disk full, read-only...: not damage
            raise CacheError(f"{self.path}: the call cache cannot be used ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise CacheError(f"{self.path}: the call cache is damaged ({exc}); `kalma cache clear` replaces it with an empty one") from None

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            with self._guard():
                conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
                # Switching a new file to WAL takes a lock that SQLite does not wait for: two
                # processes creating the cache at once retry instead of failing.
                for attempt in range(100):
                    try:
                        conn.execute("PRAGMA journal_mode=WAL")
                        break
                    except sqlite3.OperationalError as exc:
                        if "locked" not in str(exc) or attempt == 99:
                            raise
                        time.sleep(0.05)
                conn.execute("PRAGMA busy_timeout=60000")
                conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def _decode(self, key: str, raw: str) -> Any | None:
        try:
            return json.loads(raw)
        except ValueError:
            log.warning("%s: cached value for %s is unreadable; treated as a miss", self.path, key[:12])
            return None

    def get(self, key: str) -> Any | None:
        """The stored value, or None on a miss (None itself is never stored)."""
        if self.path is None:
            return None
        with self._guard():
            row = self._conn().execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
        return self._decode(key, row[0]) if row else None

    def put(self, key: str, namespace: str, value: Any) -> None:
        self.put_many(namespace, {key: value})

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        if self.path is None or not keys:
            return {}
        out: dict[str, Any] = {}
        with self._guard():
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                q = f"SELECT key, value FROM calls WHERE key IN ({','.join('?' * len(chunk))})"
                for k, v in self._conn().execute(q, chunk):
                    if (decoded := self._decode(k, v)) is not None:
                        out[k] = decoded
        return out

    def put_many(self, namespace: str, items: dict[str, Any]) -> None:
        if self.path is None or not items:
            return
        conn = self._conn()
        with self._guard():
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO calls (key, namespace, value) VALUES (?, ?, ?)",
                    [(k, namespace, json.dumps(v, ensure_ascii=False, allow_nan=False)) for k, v in items.items() if v is not None],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def stats(self) -> dict[str, Any]:
        if self.path is None:
            return {"enabled": False}
        with self._guard():
            rows = self._conn().execute("SELECT namespace, COUNT(*) FROM calls GROUP BY namespace ORDER BY namespace").fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.exists())
        return {"enabled": True, "path": str(self.path), "bytes": size, "entries": dict(rows)}

    def clear(self, namespace: str | None = None) -> int:
        if self.path is None:
            return 0
        with self._guard():
            conn = self._conn()
            cur = conn.execute("DELETE FROM calls" + (" WHERE namespace = ?" if namespace else ""), (namespace,) if namespace else ())
            conn.execute("VACUUM")
        return cur.rowcount


def remove_cache_files(path: Path) -> list[Path]:
    """Delete a cache database and its WAL/SHM files (to recover from a damaged one)."""
    gone = []
    for p in [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]:
        if p.exists():
            p.unlink()
            gone.append(p)
    return gone


_default: Cache | None = None


def get_cache() -> Cache:
    """The process-wide cache; KALMA_CACHE=off disables it."""
    global _default
    if _default is None:
        _default = Cache(None if os.environ.get("KALMA_CACHE", "").lower() in {"off", "0", "no"} else "default")
    return _default


def set_cache(cache: Cache) -> None:
    global _default
    _default = cache
