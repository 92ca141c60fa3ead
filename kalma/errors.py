"""Failures that are not bugs: bad input, an unreachable endpoint, a model that is not there.

The command line reports them as one line on stderr and a non-zero exit, never a traceback
(`kalma.cli`). Messages name what the user can fix: the file, line and field, the key, the
spec, the path.
"""

from __future__ import annotations

import os
import re


class KalmaError(Exception):
    """An expected failure, reported to the user in one line."""


class ConfigError(KalmaError, ValueError):
    """A configuration value (TOML key, option, spec string) that cannot be used."""


class ResumeMismatch(KalmaError):
    """An output exists but was made from other inputs or settings: resuming it would mix runs."""


class OutputLocked(KalmaError):
    """Another process is writing the same output."""


class BackendError(KalmaError):
    """A model backend failed (missing weights, refused request); secrets masked."""


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
