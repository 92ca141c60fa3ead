"""Failures that are not bugs: bad input, an unreachable endpoint, a model that is not there.

The command line reports them as one line on stderr and a non-zero exit, never a traceback
(`kalma.cli`). Messages name what the user can fix: the file, line and field, the key, the
spec, the path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager


class KalmaError(Exception):
    """An expected failure, reported to the user in one line."""


class ConfigError(KalmaError, ValueError):
    """A configuration value (TOML key, option, spec string) that cannot be used."""


class ResumeMismatch(KalmaError):
    """An output exists but was made from other inputs or settings: resuming it would mix runs."""


class OutputLocked(KalmaError):
    """Another process is writing the same output."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with what the run keeps and how to go on; the command line prints it and exits 130."""


@contextmanager
def interrupted_hint(hint: str) -> Iterator[None]:
    """Ctrl-C inside the block becomes `Interrupted` saying `hint` (what is kept, how to go on)."""
    try:
        yield
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: {hint}") from None


class BackendError(KalmaError):
    """A model backend failed (missing weights, refused request); secrets masked."""


class HubMissing(BackendError):
    """A hub id neither cached here nor reachable. Its hint is the spec the user typed with a
    folder in place of the id: every `kalma.models` getter it passes through sets `spec`, so the
    outermost one (`llm:hf:ID`, not the inner `hf:ID`) is what the user reads."""

    def __init__(self, ref: str, why: str, spec: str | None = None):
        super().__init__(why)
        self.ref, self.why, self.spec = ref, why, spec or f"hf:{ref}"

    def __str__(self) -> str:
        folder = "/models/" + self.ref.rpartition("/")[2]
        return (
            f"cannot load the model {self.ref!r}: {self.why}; download it where there is network (`hf download {self.ref}`, into HF_HOME "
            f"or a folder) and pass the folder in its place, e.g. {self.spec.replace(self.ref, folder, 1)}"
        )


_SECRET_ENV = ("OPENAI_API_KEY", "KALMA_COMPAT_API_KEY", "OPENAI_ADMIN_KEY")


def mask_secrets(text: str) -> str:
    """`text` with every API key this process knows replaced by `***` (servers echo keys).

    >>> os.environ["KALMA_COMPAT_API_KEY"] = "sk-test-123456"
    >>> mask_secrets("invalid key sk-test-123456 (Bearer sk-test-123456)")
    'invalid key *** (Bearer ***)'
    >>> del os.environ["KALMA_COMPAT_API_KEY"]
    """
    for name in _SECRET_ENV:
        key = os.environ.get(name, "")
        if len(key) >= 6:
            text = text.replace(key, "***")
    return re.sub(r"(Bearer\s+)(?!\*\*\*)\S{6,}", r"\1***", text)


def one_line(exc: BaseException) -> str:
    """The first meaningful line of an exception, secrets masked, for the command line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    if len(lines) > 1 and len(text) < 40:  # "3 problem(s):" is not enough on its own
        text = " ".join(lines[:3])
    return mask_secrets(text)[:600]
