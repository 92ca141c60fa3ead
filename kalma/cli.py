"""The `kalma` command line.

Stage packages register subcommands through the `kalma.commands` entry-point group
(see pyproject.toml), so kalma never imports a stage, and a subcommand's module, and with it
any heavy library, loads only when that subcommand runs.
"""

from __future__ import annotations

import difflib
from importlib.metadata import entry_points

import click

from . import __version__

ENTRY_POINT_GROUP = "kalma.commands"


class LazyGroup(click.Group):
    """A click group whose commands come from entry points and import on first use."""

    def _entry_points(self) -> dict[str, object]:
        return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._entry_points()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        ep = self._entry_points().get(cmd_name)
        return ep.load() if ep is not None else None  # type: ignore[attr-defined]

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
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
@click.option("--kind", type=click.Choice(sorted(["dataset", "answers", "scores", "records", "entity_graphs", "triples"])), required=True)
@click.option("--lenient", is_flag=True, help="Report every bad line instead of stopping at the first.")
def check(path: str, kind: str, lenient: bool) -> None:
    """Validate a record file and report its bad lines."""
    from .jsonl import RecordError, read_jsonl
    from .schema import RECORD_KINDS

    try:
        res = read_jsonl(path, RECORD_KINDS[kind], kind=kind, strict=not lenient)
    except RecordError as exc:
        raise click.ClickException(str(exc)) from exc
    for err in res.errors:
        click.echo(str(err), err=True)
    click.echo(f"{path}: {len(res.records)} good records, {len(res.errors)} bad lines")
    if res.errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
