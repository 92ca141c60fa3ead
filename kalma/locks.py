"""Exclusive outputs: one writer per output file, and a second one fails at once.

Two runs appending to one file would interleave, double and corrupt rows. Every output is
opened under an OS file lock (`filelock`, released by the kernel if the holder dies), and the
holder writes who it is beside the lock so the refusal can name it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

from .errors import OutputLocked


def lock_paths(output: str | Path) -> tuple[Path, Path]:
    """The lock file and the holder's note for `output`, hidden beside the file it resolves to:
    two names of one file (a symlink, `a/../b`) take one lock."""
    p = Path(os.path.realpath(output))
    return p.with_name(f".{p.name}.lock"), p.with_name(f".{p.name}.lock.owner")


class OutputLock:
    """`with OutputLock(path):` holds `path` exclusively, or raises OutputLocked naming the holder."""

    def __init__(self, output: str | Path):
        self.output = Path(output)
        self.lock_file, self.owner_file = lock_paths(output)
        self._lock: FileLock | None = None

    def acquire(self) -> OutputLock:
        self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.lock_file), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise OutputLocked(f"{self.output} is being written by another run ({self.holder()}); wait for it to finish or write to another output") from None
        self._lock = lock
        note = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:300],
        }
        self.owner_file.write_text(json.dumps(note))
        return self

    def holder(self) -> str:
        try:
            note = json.loads(self.owner_file.read_text())
            return f"pid {note['pid']} on {note['host']} since {note['since']}: {note['command']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "holder unknown"

    def release(self) -> None:
        if self._lock is not None:
            self.owner_file.unlink(missing_ok=True)
            self._lock.release()
            self._lock = None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
