"""Exclusive outputs: one writer per output file, and a second one fails at once.

Two runs appending to one file would interleave, double and corrupt rows. Every output is
opened under an OS file lock (`flock`, released by the kernel if the holder dies), and the
holder writes who it is into the lock file itself, the moment it holds it; a refused run that
finds the note not yet written waits for it (up to `NOTE_WAIT` seconds), so the refusal always
names the holder. The lock file is removed on release, so nothing is left beside a finished
output: a waiter that locked the file just as it was unlinked sees that its inode is no longer
the path's and tries again.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType

from .errors import OutputLocked

NOTE_WAIT = 2.0  # seconds a refused run waits for the holder's note: it is written microseconds after the lock


def lock_path(output: str | Path) -> Path:
    """The lock file of `output`, hidden beside the file it resolves to: two names of one file
    (a symlink, `a/../b`) take one lock."""
    p = Path(os.path.realpath(output))
    return p.with_name(f".{p.name}.lock")


def note() -> bytes:
    """Who holds a lock: this process, its host, when, and its command line."""
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:300]
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S"), "command": command}).encode()


def write_note(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, note(), 0)


def try_lock(path: Path) -> int | None:
    """An fd holding an exclusive lock on `path` (created if missing), or None when another
    process holds it. The fd is kept only if `path` still names the locked inode."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # the holder removed it between our open and our lock: take the new one


def unlock(path: Path, fd: int) -> None:
    """Remove the lock file, then release it: a waiter on the old inode retries on a new one."""
    try:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)


class OutputLock:
    """`with OutputLock(path):` holds `path` exclusively, or raises OutputLocked naming the holder."""

    def __init__(self, output: str | Path):
        self.output = Path(output)
        self.lock_file = lock_path(output)
        self._fd: int | None = None

    def acquire(self) -> OutputLock:
        self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = try_lock(self.lock_file)
        if fd is None:
            raise OutputLocked(f"{self.output} is being written by another run ({self.holder()}); wait for it to finish or write to another output")
        self._fd = fd
        write_note(fd)
        return self

    def holder(self) -> str:
        """The holder's note, waited for while it is being written; what is known otherwise."""
        deadline = time.monotonic() + NOTE_WAIT
        while True:
            try:
                found = json.loads(self.lock_file.read_bytes())
                return f"pid {found['pid']} on {found['host']} since {found['since']}: {found['command']}"
            except FileNotFoundError:
                return "it has just finished; run again"
            except (OSError, ValueError, KeyError, TypeError):
                if time.monotonic() > deadline:
                    return f"a holder that wrote no note within {NOTE_WAIT:g} s"
                time.sleep(0.01)

    def release(self) -> None:
        if self._fd is not None:
            unlock(self.lock_file, self._fd)
            self._fd = None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
