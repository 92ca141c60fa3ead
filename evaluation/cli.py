"""`kalma evaluate`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from kalma.answers_file import said
from kalma.cli import LIMIT, NO_CACHE
from kalma.models import ENTAILMENT

from .base import DEFAULT_METRICS, EvalOptions

F = TypeVar("F", bound=Callable[..., object])

# `kalma evaluate` and `kalma bench submit` score the same way, so they take the same options.
_SCORING_OPTIONS = (
    click.option(
        "--nli",
        default="lexical",
        show_default=True,
        help=f"Entailment backend, every registered one: grounding checkers, NLI models, an LLM judge, labels from a table ({ENTAILMENT.forms()}).",
    ),
    click.option("--judge", default=None, help="LLM for G-Eval text quality, e.g. openai:gpt-4o-mini or smollm2."),
    click.option("--lm", default=None, help="LM scorer for the metrics that need one (hf:ID, smollm2)."),
    click.option(
        "--metrics",
        default=",".join(DEFAULT_METRICS),
        show_default=True,
        help="Comma-separated metric names: citation, alignment, na, geval, kprec, consens, conner, conner-extrinsic.",
    ),
    click.option(
        "--metric",
        "metric_specs",
        multiple=True,
        metavar="NAME[:OPTIONS]",
        help="A metric with options, repeatable; replaces --metrics. E.g. conner:agg=mean,l=3  na:relevance=false  "
        "alignment:verbalized=true,substring_shortcut=true  geval:samples=5  conner-extrinsic:u=5.",
    ),
    click.option(
        "--compat", type=click.Choice(["default", "original"]), default="default", show_default=True, help="`original` reproduces the authors' code formulas."
    ),
    click.option("--seed", default=0, show_default=True, help="Seed of every draw the metrics make (CONNER's negatives, G-Eval samples)."),
    NO_CACHE,
)


def scoring_options(f: F) -> F:
    """--nli, --judge, --lm, --metrics, the repeatable --metric NAME[:OPTIONS], --compat and --seed."""
    for option in reversed(_SCORING_OPTIONS):
        f = option(f)
    return f


def scoring(nli: str, judge: str | None, lm: str | None, metrics: str, metric_specs: tuple[str, ...], compat: str, seed: int) -> tuple[EvalOptions, list[str]]:
    """The options and metrics `scoring_options` collected: the one place the command line builds
    them. A model option is checked before any work, and refused when no chosen metric uses it: a
    typo in it would otherwise pass unseen."""
    names = metric_names(metrics, metric_specs)
    check_models(names, {"nli": nli, "judge": judge, "lm": lm})
    return EvalOptions(compat=compat, nli=nli, judge=judge, lm=lm, seed=seed), names


def check_models(metrics: list[str], given: dict[str, str | None]) -> None:
    """Each model option given on the command line (`--nli`, `--judge`, `--lm`): a spec its
    registry can build, for a metric of `metrics` that needs it."""
    from kalma.errors import ConfigError
    from kalma.models import ENTAILMENT, LLMS, SCORERS

    from .base import METRICS

    def needs(name: str) -> tuple[str, ...]:
        return tuple(getattr(METRICS.factory(name.partition(":")[0].partition(",")[0]), "needs", ()))

    ctx = click.get_current_context()
    for name in metrics:
        METRICS.check(name)  # an unknown metric is said before what it would need
    needed = {need for name in metrics for need in needs(name)}
    for option, registry in (("nli", ENTAILMENT), ("judge", LLMS), ("lm", SCORERS)):
        spec = given[option]
        if spec is None or ctx.get_parameter_source(option) is ParameterSource.DEFAULT:
            continue
        if option not in needed:
            users = [n for n in METRICS.names() if option in needs(n)]
            raise click.BadParameter(
                f"{spec!r}: no chosen metric uses it ({', '.join(metrics)}); it is for {', '.join(users)}: add one to --metrics, or leave --{option} out",
                param_hint=f"--{option}",
            )
        try:
            registry.check(spec)
        except ConfigError as exc:
            raise ConfigError(f"--{option}: {exc}") from None


def answers_path(given: str, extra: Sequence[str], name: str) -> str:
    """The answers file to read: `given`, or the newest KaLMA run when it is the folder
    lm-evaluation-harness or Inspect wrote (which file, said on stderr). Paths after it are what a shell
    pattern matching several files gives (one samples file per run): refused, saying so."""
    from kalma.answers_file import folder_answers

    if extra:
        files = [given, *extra]
        what = (
            f"{name} takes one file, and a pattern gave it {len(files)} ({', '.join(files[:3])}{', …' if len(files) > 3 else ''}): "
            "give one of them, or lm_eval's output folder to read its newest run"
            if all(Path(f).exists() for f in extra)
            else f"unexpected extra argument{'s' if len(extra) > 1 else ''} {' '.join(extra)}"
        )
        raise click.UsageError(what)
    if not Path(given).is_dir():
        return given
    path, note = folder_answers(given)
    click.echo(f"note: {note}", err=True)
    return str(path)


def metric_names(metrics: str, metric_specs: tuple[str, ...]) -> list[str]:
    """The metric specs to run: every --metric given, else the names in --metrics (which cannot carry options,
    since options are themselves comma-separated)."""
    if metric_specs:
        return list(metric_specs)
    if ":" in metrics:
        raise click.BadParameter("takes names only; give a metric with options as --metric NAME:OPTIONS", param_hint="--metrics")
    names = [m.strip() for m in metrics.split(",") if m.strip()]
    if not names:
        raise click.BadParameter("names no metric; give at least one of " + ", ".join(DEFAULT_METRICS), param_hint="--metrics")
    return names


@click.command("evaluate", context_settings={"allow_extra_args": True})
@click.option("--dataset", required=True, type=click.Path(exists=True, dir_okay=False), help="dataset.jsonl")
@click.option(
    "--answers",
    required=True,
    type=click.Path(exists=True),
    help="answers.jsonl, another system's output (ALCE, lm-evaluation-harness's samples, an Inspect log), "
    "or lm_eval's output folder or Inspect's log folder (its newest KaLMA run).",
)
@click.option("--kg", "kg_source", default=None, help="Judge answers that carry no KG against this source's subgraphs of the entry's people.")
@click.option("--model", default=None, help="The model that wrote answers whose lines and header name none (e.g. a file of just entry_id and text).")
@scoring_options
@LIMIT
@click.option("--overwrite", is_flag=True, help="Start over when OUTPUT exists (by default it is resumed, if made from the same inputs).")
@click.option(
    "--lenient",
    is_flag=True,
    help="Accept an answers file with corrupt lines, unknown ids, duplicates or reasoning in answer texts: exit 0 (each is still reported).",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=0),
    default=10_000,
    show_default=True,
    help="Bootstrap resamples of the dataset's entries behind every figure's 95% interval, drawn with --seed (0: no intervals).",
)
@click.option(
    "--previous-kg",
    default=None,
    help="The KG the answers' model may remember (an older dump): count each answer's outdated claims (values it held, no longer given).",
)
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Output directory (resumed if it exists).")
@click.pass_context
def evaluate(
    ctx: click.Context,
    dataset: str,
    answers: str,
    kg_source: str | None,
    previous_kg: str | None,
    model: str | None,
    limit: int | None,
    overwrite: bool,
    lenient: bool,
    resamples: int,
    output: str,
    **scoring_args: Any,
) -> None:
    """Score an answers file: citation quality, alignment, [NA], text quality and more."""
    from .runner import evaluate as run
    from .runner import markdown_table

    opts, metrics = scoring(**scoring_args)
    if previous_kg:
        metrics = [*metrics, f"outdated:{previous_kg}"]
    answers = answers_path(answers, ctx.args, "--answers")
    summary = run(
        dataset, answers, output, metrics=metrics, options=opts, kg_source=kg_source, overwrite=overwrite, limit=limit, model=model, resamples=resamples
    )
    click.echo(markdown_table(summary))
    click.echo(f"wrote {output}/scores.jsonl, summary.json, summary.md, verdicts.html (every answer, each citation judged)")
    if summary.problems and not lenient:
        found = said(summary.problems)
        raise click.ClickException(
            f"{answers}: {found}; every valid answer was scored (details in {output}/summary.json); pass --lenient to accept such a file"
        )
