"""Progress on stderr while a long loop runs (issue 65 §6.5).

On a terminal, a tqdm bar; in a log (stderr not a terminal), a plain line when the loop starts,
at most one every `every()` seconds, and one at its end: never a line per step. Either shows an
estimate of the time left only once it means something: items that finish together (a window of
entries, a model's batch) give a rate hours off from the first of them.

A model's batches (`kalma.models.base.cached_stream`) report to the `Progress` open around the
call (`batch_done`): the answers' count settles once the model's first batch has finished, and
the evaluator says how many of a model call's prompts are done while its count of answers waits
for the chunk they belong to. Within a batch, each decoding step is said (`token_done`): the
demo's six answers on SmolLM2 are one batch that decodes for many minutes on a CPU. A model's
thread asked to stop (`stop_at_next_step`) stops at the next of its safe points."""

from __future__ import annotations

import os
import sys
import threading
import time
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from tqdm import tqdm

from .errors import ConfigError

EVERY = 30.0  # seconds between two plain lines in a log
REDRAW = 0.2  # seconds between two redraws of a terminal's bar for decoding steps (a GPU takes a step a millisecond)


def every() -> float:
    """Seconds between plain lines: `KALMA_PROGRESS_EVERY`, else `EVERY`."""
    raw = os.environ.get("KALMA_PROGRESS_EVERY", "")
    if not raw:
        return EVERY
    try:
        return max(float(raw), 0.0)
    except ValueError:
        raise ConfigError(f"KALMA_PROGRESS_EVERY={raw!r}: give seconds between progress lines, e.g. 30") from None


class SettlingBar(tqdm):
    """tqdm's bar without its estimate until `settles` items are done or `settle()` is called;
    until then it says when one comes (`when`)."""

    def __init__(self, settles: int | None, when: str, **kwargs: Any) -> None:
        fmt = f"{{l_bar}}{{bar}}| {{n_fmt}}/{{total_fmt}} [{{elapsed}}, an estimate after {when}{{postfix}}]"
        super().__init__(bar_format=fmt, **kwargs)
        self.settles = settles

    def update(self, n: float | None = 1) -> bool | None:
        if self.settles is not None and self.n + (n or 0) >= self.settles:
            self.settle()
        return super().update(n)

    def settle(self) -> None:
        self.bar_format = None  # tqdm's own, with its estimate


_open: ContextVar[Progress | None] = ContextVar("kalma_progress", default=None)


class Progress:
    """`total` items counted as they finish (`update`), shown as the module docstring says. Open
    it with `with`: a model's batches report to it (`batch_done`). `settles`: the items after
    which the estimate means something (None: once the model's first batch has finished);
    `inner`: say how many of a model call's prompts are done (its count waits for them)."""

    def __init__(self, total: int, desc: str, unit: str, enabled: bool = True, settles: int | None = 1, inner: bool = False) -> None:
        self.total, self.desc, self.unit, self.enabled, self.settles, self.inner = total, desc, unit, enabled, settles, inner
        self.plain = enabled and not sys.stderr.isatty()
        self.bar = SettlingBar(
            total=total, desc=desc, unit=unit, disable=not enabled or self.plain, settles=settles, when="the first batch", mininterval=0, file=sys.stderr
        )
        self.n, self.settled, self.model, self.step = 0, False, "", ""  # step: the running batch's decoding
        self.said: tuple[int, str] | None = None  # what the last plain line counted: never said twice
        self.began = self.logged = time.monotonic()
        self.drawn = 0.0  # when a decoding step last redrew the bar
        self.every = every()
        self._token: Any = None

    def __enter__(self) -> Progress:
        self._token = _open.set(self)
        self._say(True)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        _open.reset(self._token)
        self.bar.close()  # before any error is printed, never glued to its line
        if kind is None:
            self._say(True)

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.step:  # items are finishing: the batch has decoded
            self.step = ""
            self._postfix()
        self.settled = self.settled or (self.settles is not None and self.n >= self.settles)
        self.bar.update(n)
        self._say()

    def batch(self, what: str, done: int, total: int) -> None:
        if self.settles is None and not self.settled:
            self.settled = True
            self.bar.settle()
        if self.inner:
            self.model = f"{what}: {done}/{total} done"
        self.step = ""
        self._postfix()
        self._say()

    def token(self, step: int, most: int, rows: int) -> None:
        self.step = f"decoding {rows} prompt{'s' if rows > 1 else ''}: token {step} of at most {most}"
        if not self.plain and time.monotonic() - self.drawn >= REDRAW:
            self.drawn = time.monotonic()
            self._postfix()
        self._say()

    def _details(self) -> str:
        return "; ".join(d for d in (self.model, self.step) if d)

    def _postfix(self) -> None:
        self.bar.set_postfix_str(self._details(), refresh=True)

    def _say(self, now: bool = False) -> None:
        """A plain line in a log: when asked (start, end), else at most one every `self.every` seconds."""
        if not self.plain or not self.total or self.said == (self.n, self._details()) or (not now and time.monotonic() - self.logged < self.every):
            return
        self.said = (self.n, self._details())
        self.logged = time.monotonic()
        took = self.logged - self.began
        line = f"{self.desc}: {self.n}/{self.total} {self.unit}s, {tqdm.format_interval(took)}"
        if self.settled and 0 < self.n < self.total:
            line += f", about {tqdm.format_interval(took / self.n * (self.total - self.n))} left"
        if self._details() and self.n < self.total:
            line += f" ({self._details()})"
        print(line, file=sys.stderr, flush=True)


_stopping: set[int] = set()  # threads that raise KeyboardInterrupt at their next safe point (`stop_at_next_step`)
_watch_lock = threading.Lock()
_watch: Any = None  # torch's handle of the hook that checks `_stopping` before every module's forward


def stop_at_next_step(thread: int) -> None:
    """Make thread `thread` raise KeyboardInterrupt at its next safe point: while a request waits,
    the start of any torch module's forward (each decoding step runs some; a prefill over long
    prompts is one forward of many layers), and the end of its batch (`batch_done`) for a backend
    that runs none, or right after a model's load (`stop_point`).
    An exception sent into a thread instead (PyThreadState_SetAsyncExc) lands at any bytecode: in
    a finalizer it is swallowed and the thread decodes on; inside a lock's or an event's own code
    it can leave the lock held or the event unset, and whoever waits on it waits for ever."""
    with _watch_lock:
        _stopping.add(thread)
        _rewatch()


def forget_stop(thread: int) -> None:
    """Drop a request of `stop_at_next_step` that came after the thread's last step: a pool reuses threads."""
    with _watch_lock:
        _stopping.discard(thread)
        _rewatch()


def _rewatch() -> None:
    """The module hook on while a request waits, off otherwise (a global hook slows every forward)."""
    global _watch
    torch = sys.modules.get("torch")  # a thread not yet in torch meets `stop_point` after its load
    if _stopping and _watch is None and torch is not None:
        _watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda module, args: _stop_if_asked())
    elif not _stopping and _watch is not None:
        _watch.remove()
        _watch = None


def stop_point() -> None:
    """A safe point outside decoding (a model just loaded): a waiting request of this thread is
    taken here, and the module hook turned on if torch came in after the request (a thread asked
    to stop while it imported torch and loaded its model)."""
    if _stopping:  # on every model call: nothing to do unless a request waits
        with _watch_lock:
            _rewatch()
        _stop_if_asked()


def _stop_if_asked() -> None:
    if _stopping and (me := threading.get_ident()) in _stopping:
        forget_stop(me)
        raise KeyboardInterrupt


def token_done(step: int, most: int, rows: int) -> None:
    """A decoding step of a batch of `rows` prompts, `step` tokens of at most `most` generated: told to the open `Progress`."""
    if (open_ := _open.get()) is not None and open_.enabled:
        open_.token(step, most, rows)


def batch_done(what: str, done: int, total: int) -> None:
    """A model call over `total` prompts has `done` of them after a batch: told to the open `Progress`."""
    if _stopping:  # a backend that takes no decoding steps here (a server's) stops between batches
        _stop_if_asked()
    if (open_ := _open.get()) is not None and open_.enabled:
        open_.batch(what, done, total)
