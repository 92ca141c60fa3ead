"""`kalma evaluate`."""

from __future__ import annotations

import click


@click.command("evaluate")
@click.option("--dataset", required=True, type=click.Path(exists=True, dir_okay=False), help="dataset.jsonl")
@click.option("--answers", required=True, type=click.Path(exists=True, dir_okay=False), help="answers.jsonl")
@click.option("--kg", "kg_source", default=None, help="Judge answers that carry no KG against this source's subgraphs of the entry's people.")
@click.option("--nli", default="lexical", show_default=True, help="Entailment backend: hf-seq2seq:ID, hf-nli:ID, llm:SPEC, lexical.")
@click.option("--judge", default=None, help="LLM for G-Eval text quality, e.g. openai:gpt-4o-mini or smollm2.")
@click.option("--lm", default=None, help="LM scorer for the metrics that need one (hf:ID, smollm2).")
@click.option("--metrics", default=",".join(("citation", "alignment", "na")), show_default=True,
              help="Comma-separated: citation, alignment, na, geval, kprec, consens, conner, conner-extrinsic.")
@click.option("--compat", type=click.Choice(["default", "original"]), default="default", show_default=True, help="`original` reproduces the authors' code formulas.")
@click.option("--verbalized", is_flag=True, help="Hypothesis as a verbalised sentence instead of `relation: value`.")
@click.option("--substring-shortcut", is_flag=True, help="Count a pair aligned when the value occurs verbatim (the authors' code).")
@click.option("--matcher", default="minilm", show_default=True, help="CONNER relevance: cross-encoder:ID, or the minilm embedding fallback.")
@click.option("--conner-agg", type=click.Choice(["min", "mean", "max"]), default="min", show_default=True, help="CONNER factuality aggregation over sentences.")
@click.option("--coherence-model", default=None, help="CONNER paragraph coherence classifier, hf-cls:ID (default: labelled 1/PPL fallback).")
@click.option("--conner-u", default=3, show_default=True, help="CONNER helpfulness: random KGs per entry.")
@click.option("--na-relevance/--no-na-relevance", default=True, show_default=True,
              help="[NA] precision counts an [NA] sentence that does not address the question as correct (paper §4.5).")
@click.option("--overwrite", is_flag=True, help="Start over when OUTPUT exists (by default it is resumed, if made from the same inputs).")
@click.option("--lenient", is_flag=True, help="Exit 0 even when the answers file had corrupt lines, unknown ids or duplicates.")
@click.option("--samples", default=1, show_default=True, help="G-Eval samples per item.")
@click.option("--seed", default=0, show_default=True)
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Output directory (resumed if it exists).")
def evaluate(dataset: str, answers: str, kg_source: str | None, nli: str, judge: str | None, lm: str | None, metrics: str,
             compat: str, verbalized: bool, substring_shortcut: bool, matcher: str, conner_agg: str, coherence_model: str | None, conner_u: int,
             na_relevance: bool, overwrite: bool, lenient: bool, samples: int, seed: int, output: str) -> None:
    """Score an answers file: citation quality, alignment, [NA], text quality and more."""
    from .base import EvalOptions
    from .runner import evaluate as run, markdown_table

    opts = EvalOptions(compat=compat, nli=nli, judge=judge, lm=lm, verbalized_hypothesis=verbalized,
                       substring_shortcut=substring_shortcut, samples=samples, seed=seed, na_irrelevant_correct=na_relevance,
                       extra={"matcher": matcher, "conner_agg": conner_agg, "conner_u": conner_u, "coherence_model": coherence_model})
    summary = run(dataset, answers, output, metrics=[m.strip() for m in metrics.split(",") if m.strip()], options=opts,
                  kg_source=kg_source, overwrite=overwrite)
    click.echo(markdown_table(summary))
    click.echo(f"wrote {output}/scores.jsonl, summary.json, summary.md")
    problems = {k[len("problems_"):]: v for k, v in summary.counts.items() if k.startswith("problems_")}
    if problems and not lenient:
        found = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in problems.items())
        raise click.ClickException(f"{answers}: {found}; every valid answer was scored (details in {output}/summary.json); "
                                   "pass --lenient to accept such a file")
