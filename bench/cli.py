"""`kalma bench run|submit` and `kalma leaderboard`."""

from __future__ import annotations

import json

import click

from evaluation.base import DEFAULT_METRICS


@click.group("bench")
def bench() -> None:
    """Experiments (main table, knowledge removal, retrieval ablation, general vs specific) and submissions."""


@bench.command("run")
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Run directory (resumed if it exists).")
@click.option("--overwrite", is_flag=True, help="Start every condition over instead of resuming it.")
def run(config: str, output: str, overwrite: bool) -> None:
    """Run every experiment a TOML configuration names (see bench/experiments.py)."""
    from .experiments import TABLE_NOTE, Bench, BenchConfig, table_line

    out = Bench(BenchConfig.load(config), output, overwrite=overwrite).run()
    click.echo(f"micro ×100: {TABLE_NOTE}")
    for exp, rows in out["tables"].items():
        for r in rows:
            click.echo(f"{exp:<18} {r['condition']:<8} {r['llm']:<10} {table_line(r, std=True)}")
    click.echo(f"wrote {output}/results.json")


@bench.command("submit")
@click.argument("submission", type=click.Path(exists=True, dir_okay=False))
@click.option("--dataset", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--leaderboard", "board", required=True, type=click.Path(file_okay=False))
@click.option("--nli", default="lexical", show_default=True)
@click.option("--judge", default=None)
@click.option("--metrics", default=",".join(DEFAULT_METRICS), show_default=True)
def submit_cmd(submission: str, dataset: str, board: str, nli: str, judge: str | None, metrics: str) -> None:
    """Validate a submission (every problem, with its line), score it, and file it on the leaderboard."""
    from evaluation.base import EvalOptions

    from .submissions import SubmissionError, submit

    try:
        rec = submit(submission, dataset, board, EvalOptions(nli=nli, judge=judge), [m for m in metrics.split(",") if m])
    except SubmissionError as exc:
        for p in exc.problems:
            click.echo(p, err=True)
        raise click.ClickException(f"{submission}: {len(exc.problems)} problem(s), listed above; nothing was filed") from None
    click.echo(
        json.dumps({"name": rec["submission"]["name"], "malformed_citations": rec["malformed_citations"], "metrics": rec["summary"]["metrics"]}, indent=2)
    )


@click.command("leaderboard")
@click.argument("board", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False))
def leaderboard(board: str, output: str) -> None:
    """Render the leaderboard page (sortable table, plots, Markdown and CSV)."""
    from .leaderboard import render

    click.echo(f"wrote {render(board, output)}")
