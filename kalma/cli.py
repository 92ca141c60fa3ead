"""The `kalma` command line.

Stage packages register subcommands through the `kalma.commands` entry-point group
(see pyproject.toml), so kalma never imports a stage, and a subcommand's module, and with it
any heavy library, loads only when that subcommand runs.
"""

from __future__ import annotations

import difflib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import click

from . import __version__
from .schema import RECORD_KINDS

ENTRY_POINT_GROUP = "kalma.commands"
# files `kalma check` reads that are no record kind (a stage's own input, e.g. labelled pairs):
# name = "module:function(path) -> (good rows, one error per bad row)"
CHECK_GROUP = "kalma.check"


class NumberList(click.ParamType):
    """A comma-separated list of integers or finite numbers, e.g. `--seeds 1,2,3`."""

    def __init__(self, kind: type[int] | type[float], minimum: float | None = None):
        self.kind, self.minimum = kind, minimum
        self.name = f"{kind.__name__} list"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[Any]:
        if isinstance(value, list):
            return value
        out = []
        for part in str(value).split(","):
            try:
                x = self.kind(part.strip())
            except ValueError:
                self.fail(f"{part.strip()!r} is not {'an integer' if self.kind is int else 'a number'} (in {value!r})", param, ctx)
            if x != x or x in (float("inf"), float("-inf")):
                self.fail(f"{part.strip()!r} is not a finite number", param, ctx)
            if self.minimum is not None and x < self.minimum:
                self.fail(f"{part.strip()!r} is below {self.minimum:g}", param, ctx)
            out.append(x)
        if not out:
            self.fail("give at least one value", param, ctx)
        return out


INT_LIST, TEMPERATURES = NumberList(int), NumberList(float, minimum=0.0)


def _no_cache(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from .cache import Cache, get_cache, set_cache

        before = get_cache()
        set_cache(Cache(None))
        ctx.call_on_close(lambda: set_cache(before))  # for the command only, also when embedded in a process


NO_CACHE = click.option(
    "--no-cache",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_no_cache,
    help="Neither read nor write the call cache: every model call and KG query is made now (as KALMA_CACHE=off).",
)


def new_output(path: str, overwrite: bool) -> None:
    """Refuse to replace an existing output of a one-shot command (a conversion, a snapshot),
    unless asked: a rerun with other inputs must never overwrite silently."""
    if os.path.lexists(path) and not overwrite:
        raise click.ClickException(f"{path} exists; nothing was written (pass --overwrite to replace it)")


OVERWRITE = click.option("--overwrite", is_flag=True, help="Replace OUTPUT when it exists (by default an existing output is refused).")

LIMIT = click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Only the first N dataset entries, for a quick run; every report of it says so.",
)


class LazyGroup(click.Group):
    """A click group whose commands come from entry points and import on first use, and
    whose errors end in one line on stderr: never a traceback (KALMA_DEBUG=1 shows them).
    The top level reads `kalma.commands`; a stage's group may read its own group
    (`commands_from`), so that a higher stage adds a command to it without the lower stage
    importing the higher one (`kalma judge sensitivity` is the bench's)."""

    def __init__(self, *args: Any, commands_from: str = ENTRY_POINT_GROUP, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands_from = commands_from

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        from .errors import Interrupted, KalmaError, one_line

        if not standalone_mode:  # a caller embedding the CLI handles errors itself
            return super().main(args, prog_name, complete_var, False, **extra)
        terminated: list[int] = []

        def on_sigterm(signum: int, _frame: object) -> None:
            terminated.append(signum)
            raise KeyboardInterrupt  # unwinds as Ctrl-C does: outputs closed, lock files removed, what is kept said

        # the main thread only: signal handlers cannot be set elsewhere (a test runner's thread)
        own = threading.current_thread() is threading.main_thread()
        before = signal.signal(signal.SIGTERM, on_sigterm) if own else None
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"kalma: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except (click.Abort, KeyboardInterrupt) as exc:
            said = exc.__cause__ if isinstance(exc, click.Abort) else exc  # click wraps Ctrl-C in Abort
            text = str(said) if isinstance(said, Interrupted) else "interrupted"
            if terminated:  # `kill`, a scheduler, a container stopping: said as such, exit 128 + 15
                text = "terminated (SIGTERM)" + text.removeprefix("interrupted")
            click.echo(f"kalma: {text}", err=True)
            sys.exit(128 + terminated[0] if terminated else 130)
        except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
            if os.environ.get("KALMA_DEBUG"):
                raise
            if isinstance(exc, (KalmaError, ValueError, OSError)):
                click.echo(f"kalma: {one_line(exc)}", err=True)
            else:
                click.echo(f"kalma: internal error ({type(exc).__name__}: {one_line(exc)}); set KALMA_DEBUG=1 to see the traceback", err=True)
            sys.exit(1)
        finally:
            if own:
                signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)
        sys.exit(rv if isinstance(rv, int) else 0)

    def _entry_points(self) -> dict[str, object]:
        return {ep.name: ep for ep in entry_points(group=self.commands_from)}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._entry_points()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        ep = self._entry_points().get(cmd_name)
        return ep.load() if ep is not None else None  # type: ignore[attr-defined]

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kalma")
def main() -> None:
    """KaLMA: build attributed-QA datasets from a knowledge graph, answer with citations
    and [NA], and score citation quality, alignment and conscious incompetence."""


@main.command("check")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--kind", type=click.Choice(sorted([*RECORD_KINDS, *(ep.name for ep in entry_points(group=CHECK_GROUP))])), required=True)
@click.option("--all-errors", is_flag=True, help="Report every bad line instead of stopping at the first (the file is never changed).")
@click.option(
    "--lenient",
    is_flag=True,
    help="Accept a file with bad lines, as `kalma evaluate --lenient` does: every bad line is reported, and the exit status is 0.",
)
def check(path: str, kind: str, all_errors: bool, lenient: bool) -> None:
    """Validate a record file (or `kalma judge evaluate`'s labelled pairs: --kind pairs) and report its bad lines;
    exits 1 when it has any (unless --lenient)."""
    from .answers_file import other_fields, read_foreign
    from .errors import KalmaError
    from .jsonl import read_jsonl

    if kind not in RECORD_KINDS:
        return _check_other(path, kind, all_errors, lenient)
    try:
        foreign = read_foreign(path, ()) if kind == "answers" else None
        res = foreign.result if foreign else read_jsonl(path, RECORD_KINDS[kind], kind=kind, strict=not (all_errors or lenient))
        if kind == "answers" and not foreign and not res.records:
            other_fields(path)
    except KalmaError as exc:
        raise click.ClickException(str(exc)) from exc
    for err in res.errors:
        click.echo(str(err), err=True)
    good, bad = len(res.records) + (len(foreign.unmatched) if foreign else 0), len(res.errors)
    unit = foreign.unit if foreign else "item" if any(e.item for e in res.errors) else "line"
    click.echo(f"{path}: {good} good record{'s' if good != 1 else ''}, {bad} bad {unit}{'s' if bad != 1 else ''}")
    if foreign:
        click.echo(f"{path}: {foreign.about}")
    if res.errors and not lenient:
        raise SystemExit(1)


def _check_other(path: str, kind: str, all_errors: bool, lenient: bool) -> None:
    """A file of a kind a stage registers: every bad row with --all-errors or --lenient, else the first."""
    from .errors import KalmaError

    (ep,) = [ep for ep in entry_points(group=CHECK_GROUP) if ep.name == kind]
    try:
        good, errors = ep.load()(path)
    except KalmaError as exc:
        raise click.ClickException(str(exc)) from exc
    for err in errors if all_errors or lenient else errors[:1]:
        click.echo(err, err=True)
    more = "" if all_errors or lenient or len(errors) < 2 else " (--all-errors lists every one)"
    click.echo(f"{path}: {good} good row{'s' if good != 1 else ''}, {len(errors)} bad row{'s' if len(errors) != 1 else ''}{more}")
    if errors and not lenient:
        raise SystemExit(1)


@main.command("export")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--kind", type=click.Choice(sorted(RECORD_KINDS)), help="The records' kind (default: the one the header names).")
@click.option("--verdicts", is_flag=True, help="A scores file's verdicts instead: one row per citation or [NA] mark (default: PATH with .verdicts.jsonl).")
@click.option(
    "-o",
    "--output",
    help="Plain JSON Lines (default: PATH with .plain.jsonl); verdict rows also as .csv, .tsv or .parquet. The header goes to OUTPUT.header.json.",
)
@OVERWRITE
def export_cmd(path: str, kind: str | None, verdicts: bool, output: str | None, overwrite: bool) -> None:
    """Write a record file's records as plain JSON Lines, for pandas.read_json(lines=True) and
    datasets.load_dataset("json"); its header (provenance) goes beside it."""
    from .frames import export

    out = output or str(Path(path).with_suffix(".verdicts.jsonl" if verdicts else ".plain.jsonl"))
    new_output(out, overwrite)
    n = export(path, out, kind, verdicts=verdicts)
    click.echo(f"wrote {n} {'verdict rows' if verdicts else 'records'} to {out} and the header to {out}.header.json")


if __name__ == "__main__":
    main()
