"""`kalma bench run|submit` and `kalma leaderboard`."""

from __future__ import annotations

import click

from evaluation.cli import metric_names, scoring_options


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
@scoring_options
def submit_cmd(submission: str, dataset: str, board: str, nli: str, judge: str | None, lm: str | None, metrics: str, metric_specs: tuple[str, ...]) -> None:
    """Validate a submission (every problem, with its line), score it, and file it on the leaderboard."""
    from evaluation.base import EvalOptions
    from evaluation.runner import markdown_table
    from kalma.schema import Summary

    from .submissions import SubmissionError, submit

    try:
        rec = submit(submission, dataset, board, EvalOptions(nli=nli, judge=judge, lm=lm), metric_names(metrics, metric_specs))
    except SubmissionError as exc:
        for p in exc.problems:
            click.echo(p, err=True)
        raise click.ClickException(f"{submission}: {len(exc.problems)} problem(s), listed above; nothing was filed") from None
    click.echo(markdown_table(Summary.model_validate(rec["summary"])))
    click.echo(f"filed {rec['submission']['name']!r} in {board}/submissions ({rec['malformed_citations']} malformed citations)")


@click.command("leaderboard")
@click.argument("board", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False))
def leaderboard(board: str, output: str) -> None:
    """Render the leaderboard page (sortable table, plots, Markdown and CSV)."""
    from .leaderboard import render

    click.echo(f"wrote {render(board, output)}")
