"""Processes the tests press Ctrl-C on, started as a user's terminal starts them."""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """`preexec_fn`: SIGINT at its default disposition, as an interactive shell leaves it. A suite run
    in the background of a non-interactive shell (`make test &`, some CI runners) inherits SIGINT
    ignored, and so would every process it starts: Python then never turns Ctrl-C into
    KeyboardInterrupt, and a test of what Ctrl-C does would see it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
