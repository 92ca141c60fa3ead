"""`kalma bench run|submit` and `kalma leaderboard`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from evaluation.cli import answers_path, scoring, scoring_options
from kalma.cli import LIMIT, NO_CACHE, OVERWRITE, new_output


@click.group("bench")
def bench() -> None:
    """Experiments (main table, knowledge removal, retrieval ablation, general vs specific) and submissions."""


@bench.command("run")
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Run directory (resumed if it exists).")
@click.option("--overwrite", is_flag=True, help="Start every condition over instead of resuming it.")
@LIMIT
@NO_CACHE
def run(config: str, output: str, overwrite: bool, limit: int | None) -> None:
    """Run every experiment a TOML configuration names (see bench/experiments.py)."""
    from .experiments import TABLE_NOTE, Bench, BenchConfig, format_table

    out = Bench(BenchConfig.load(config), output, overwrite=overwrite, limit=limit).run()
    click.echo(TABLE_NOTE)
    for exp, rows in out.tables.items():
        click.echo(format_table(exp, rows, out.dataset))
    for caveat in dict.fromkeys(c for r in out.results for c in r.caveats):
        click.echo(f"note: {caveat}")
    cached, total = sum(r.from_cache for r in out.results), sum(r.answers for r in out.results)
    anew = " (rerun with --no-cache to make every call now)" if cached else ""  # advice only where the cache served answers
    click.echo(f"note: {cached} of {total} answers came from the call cache{anew}")
    click.echo(f"wrote {output}/results.json")


def _answers_is_the_argument(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        raise click.UsageError(f"the answers file is the first argument, not an option: kalma bench submit {value} --dataset … --leaderboard …")


@bench.command("submit", context_settings={"allow_extra_args": True})
@click.argument("submission", type=click.Path(exists=True))
@click.option("--answers", hidden=True, is_eager=True, expose_value=False, callback=_answers_is_the_argument)
@click.option("--dataset", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--leaderboard", "board", required=True, type=click.Path(file_okay=False))
@click.option("--name", help="The name on the board: ASCII letters, digits, '.', '_', '-' (default: the file header's).")
@click.option("--model", help="The model that wrote the answers, e.g. org/model-7b (default: the file header's).")
@click.option("--url", help="Where to read about the model or the submission (http or https).")
@click.option("--description", help="One line about the submission.")
@click.option(
    "--dataset-name",
    help="How the board names the dataset (default: its file name; for a name that says nothing, like dataset.jsonl, the source its entries share).",
)
@click.option("--kg", "kg_source", default=None, help="Judge answers that carry no KG against this source's subgraphs of the entry's people.")
@click.option("--partial", is_flag=True, help="File answers to part of the dataset: scored on those entries only, shown apart and never ranked.")
@scoring_options
@LIMIT
@click.pass_context
def submit_cmd(
    ctx: click.Context,
    submission: str,
    dataset: str,
    board: str,
    name: str | None,
    model: str | None,
    url: str | None,
    description: str | None,
    dataset_name: str | None,
    kg_source: str | None,
    partial: bool,
    limit: int | None,
    **scoring_args: Any,
) -> None:
    """Validate a submission (every problem, with its line), score it, and file it on the leaderboard.
    SUBMISSION is an answers file, an Inspect log, or the folder lm_eval or Inspect wrote (its newest KaLMA run)."""
    from evaluation.runner import markdown_table

    from .submissions import SubmissionError, submit

    options, metrics = scoring(**scoring_args)
    submission = answers_path(submission, ctx.args, "SUBMISSION")
    given = {"name": name, "model": model, "url": url, "description": description}
    try:
        rec = submit(submission, dataset, board, options, metrics, meta=given, kg=kg_source, dataset_name=dataset_name, partial=partial, limit=limit)
    except SubmissionError as exc:
        for p in exc.problems:
            click.echo(p, err=True)
        n = len(exc.problems)
        raise click.ClickException(f"{submission}: {n} problem{'s' if n != 1 else ''}, listed above; nothing was filed") from None
    click.echo(markdown_table(rec.summary))
    part = f" (PARTIAL: {rec.summary.coverage.label()}, shown apart and not ranked)" if rec.summary.coverage else ""
    click.echo(
        f"filed {rec.submission.name!r} in {board}/submissions{part}: {rec.answers_scored} answers on {rec.dataset.label()}, "
        f"seeds {rec.submission.seeds or 'none recorded'}, {rec.malformed_citations} malformed citations"
    )


@click.command("leaderboard")
@click.argument("board", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False))
def leaderboard(board: str, output: str) -> None:
    """Render the leaderboard page (one table per dataset, plots, Markdown and CSV)."""
    from .leaderboard import render

    if not (Path(board) / "submissions").is_dir() and not (Path(board) / "runs").is_dir():
        raise click.ClickException(
            f"{board} is not a leaderboard folder (it has neither submissions/ nor runs/): "
            f"file one with `kalma bench submit ANSWERS --dataset … --leaderboard {board}`, or give the folder you filed into"
        )
    page, damaged = render(board, output)
    click.echo(f"wrote {page}")
    if damaged:  # the page is written without them; the exit status says so
        more = f" (and {len(damaged) - 1} more, listed on the page)" if len(damaged) > 1 else ""
        raise click.ClickException(f"left off the page: {damaged[0]}{more}")


@click.command("sensitivity")  # `kalma judge sensitivity`: in the judge group by the entry point kalma.judge
@click.argument("board", type=click.Path(exists=True, file_okay=False))
@click.option("--nli", "nli", multiple=True, metavar="SPEC", help="An entailment judge; give two or more: alignment and [NA] re-scored under each.")
@click.option(
    "--judge", "judges", multiple=True, metavar="SPEC", help="A G-Eval judge (an LLM spec); give two or more: G-Eval's four aspects re-scored under each."
)
@click.option(
    "--dataset", default=None, type=click.Path(exists=True, dir_okay=False), help="The board's dataset (default: the path each submission was scored with)."
)
@click.option("--resamples", type=click.IntRange(min=0), default=10_000, show_default=True, help="Bootstrap resamples of every interval.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "-o",
    "--output",
    default=None,
    help="A folder for sensitivity.md, sensitivity.json and the re-scored runs (default: BOARD/sensitivity, which the leaderboard shows).",
)
@OVERWRITE
@NO_CACHE
def sensitivity_cmd(
    board: str, nli: tuple[str, ...], judges: tuple[str, ...], dataset: str | None, resamples: int, seed: int, output: str | None, overwrite: bool
) -> None:
    """How much BOARD's judge-dependent figures (alignment, [NA] precision and recall; G-Eval's aspects)
    depend on the judge: each system's value under each, Kendall's tau of their orderings with its
    interval over entries, the pairs of systems whose order flips, Cohen's kappa on the sentences."""
    from kalma.models import ENTAILMENT, LLMS

    from .sensitivity import run

    if len(nli) == 1 or len(judges) == 1 or not (nli or judges):
        raise click.UsageError("give two or more --nli judges, or two or more --judge judges, to compare")
    for spec in nli:
        ENTAILMENT.check(spec)
    for spec in judges:
        LLMS.check(spec)
    out = output or str(Path(board) / "sensitivity")
    new_output(out, overwrite)
    click.echo(run(board, out, nli, judges, dataset=dataset, resamples=resamples, seed=seed), nl=False)
    click.echo(f"wrote {out}/sensitivity.md, sensitivity.json and runs/")
