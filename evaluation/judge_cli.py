"""`kalma judge`: how good an entailment judge is, measured on labelled pairs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from kalma.cli import NO_CACHE, OVERWRITE, LazyGroup, new_output
from kalma.languages import language_options


def _threshold(_: click.Context, __: click.Parameter, value: str) -> float | None:
    if value == "tune":
        return None
    try:
        found = float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r}: a number in [0, 1], or tune") from None
    if not 0.0 <= found <= 1.0:
        raise click.BadParameter(f"{value!r}: a number in [0, 1], or tune")
    return found


@click.group("judge", cls=LazyGroup, commands_from="kalma.judge")  # `sensitivity` is the bench's (a board's judges): added by its entry point
def judge() -> None:
    """How good an entailment judge (`--nli`) is, before trusting its alignment and [NA] figures."""


@judge.command("evaluate")
@click.option(
    "--nli",
    "specs",
    multiple=True,
    required=True,
    metavar="SPEC",
    help="An entailment spec; give two or more to compare them on the same pairs (every pair's paired difference, and the judges ranked).",
)
@click.option(
    "--pairs",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Labelled pairs: JSON Lines, CSV or Parquet in LLM-AggreFact's layout (doc, claim, label, dataset[, split]) or premise/hypothesis/label "
    "(as `kalma human score` writes majority.jsonl). Default: the project's own labelled set over the demo graph.",
)
@click.option("--dev", type=click.Path(exists=True, dir_okay=False), default=None, help="Development pairs for --threshold tune (or rows with split 'dev').")
@click.option(
    "--threshold",
    default="0.5",
    show_default=True,
    callback=_threshold,
    help="Supported when P(entailment) >= it; `tune`: per dataset, the best of 0.01..0.99 on its development pairs, as LLM-AggreFact does.",
)
@click.option("--all-errors", is_flag=True, help="Report every bad row of the pairs files, not only the first.")
@click.option("--resamples", type=click.IntRange(min=0), default=10_000, show_default=True, help="Bootstrap resamples of the intervals.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("-o", "--output", default=None, help="A folder for judge.md, judge.json and scores.jsonl (every pair's probability and verdict).")
@OVERWRITE
@NO_CACHE
def evaluate_cmd(
    specs: tuple[str, ...],
    pairs: str | None,
    dev: str | None,
    threshold: float | None,
    all_errors: bool,
    resamples: int,
    seed: int,
    output: str | None,
    overwrite: bool,
) -> None:
    """Balanced accuracy per dataset and overall, with bootstrap intervals, the confusion matrix,
    and how many pairs were chunked or cut; two judges also by their paired difference."""
    from kalma.jsonl import dumps
    from kalma.models import ENTAILMENT
    from kalma.provenance import provenance

    from .identity import entailment_identity, ran_line
    from .judge_quality import BUNDLED, compare, compare_all, markdown, measure, ranking, ranking_markdown, read_pairs, scan_pairs, scores_rows

    for spec in specs:
        ENTAILMENT.check(spec)
    source = pairs or str(BUNDLED)
    if dev and os.path.exists(source) and os.path.samefile(dev, source):
        raise click.UsageError(f"--dev {dev} is the --pairs file: a threshold tuned on the test pairs scores them too well; give held-out development pairs")
    if output:
        new_output(output, overwrite)
    if all_errors:
        errors = [e for f in (source, dev) if f for e in scan_pairs(f)[1]]
        for e in errors:
            click.echo(e, err=True)
        if errors:
            raise click.ClickException(f"{len(errors)} bad row{'s' if len(errors) != 1 else ''}; nothing was measured")
    rows = read_pairs(source)
    if dev:
        from dataclasses import replace

        rows = [replace(p, split="dev") for p in read_pairs(dev)] + rows
    reports = [
        measure(spec, rows, threshold, pairs_file=source if pairs else f"{source} (the project's labelled set)", resamples=resamples, seed=seed)
        for spec in specs
    ]
    difference = compare(reports[0], reports[1], rows) if len(reports) == 2 else None
    text = "\n".join(markdown(r, difference if k == 0 else None, specs[1] if k == 0 and difference else "") for k, r in enumerate(reports))
    differences = compare_all(reports, rows) if len(reports) > 2 else {}  # several: every pair, and the judges ranked
    if differences:
        text += "\n" + ranking_markdown(reports, differences)
    text += "\n".join(["", "What ran:", "", *(ran_line(spec, entailment_identity(spec, 0.5)) for spec in specs)]) + "\n"  # the threshold is judge.md's own
    click.echo(text, nl=False)
    if not output:
        return
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    report = {
        "judges": [r.as_dict() for r in reports],
        **({"difference": {"a": specs[0], "b": specs[1], "balanced_accuracy": difference}} if difference else {}),
        **(
            {
                "differences": [{"a": specs[i], "b": specs[j], "balanced_accuracy": d} for (i, j), d in differences.items()],
                "ranking": [{"judge": specs[i], "tied_with_the_one_above": tied} for i, tied in ranking(reports, differences)],
            }
            if differences
            else {}
        ),
    }
    report["provenance"] = provenance(config={"pairs": source, "dev": dev, "threshold": "tune" if threshold is None else threshold})
    (folder / "judge.md").write_text(text)
    (folder / "judge.json").write_text(dumps(report, indent=1, default=str) + "\n")
    with open(folder / "scores.jsonl.tmp", "w") as f:
        for r in reports:
            for row in scores_rows(r, rows):
                f.write(dumps({"judge": r.judged.spec, **row}, ensure_ascii=False) + "\n")
    os.replace(folder / "scores.jsonl.tmp", folder / "scores.jsonl")
    click.echo(f"wrote {folder / 'judge.md'}, judge.json and scores.jsonl")


@judge.command("pairs")
@click.option("--dataset", required=True, type=click.Path(exists=True, dir_okay=False), help="A KaLMA dataset (kalma build, kalma dataset import-biokalma).")
@click.option("--kg", default=None, help="The KG its entries were built from (default: the one its header names; else demo).")
@click.option("--llm", default="template", show_default=True, help="The LLM that writes the sentences; `template`: the builder's verbalisation, offline.")
@click.option(
    "--document",
    type=click.Choice(["sentence", "triple"]),
    default="sentence",
    show_default=True,
    help="Which side the judge reads as its document: the labels answer that question (the checkers' document=hypothesis is `triple`).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--name", default=None, help="The rows' `dataset` (what `kalma judge evaluate` reports per); default: the dataset file's name without suffix.")
@language_options  # the sentences' language and the KG's labels': `template` writes en, fr, de, es; a model is asked in English to write any other
@click.option(
    "--vary",
    is_flag=True,
    help="Vary what the sentences say and how (property and value aliases, dates as people write them, "
    "other wordings, clauses reordered) and add a sixth kind, `negated` (a sentence denying what it cites, label 0).",
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="pairs.jsonl: a header line, then one labelled pair a line.")
@OVERWRITE
@NO_CACHE
def pairs_cmd(
    dataset: str,
    kg: str | None,
    llm: str,
    document: str,
    seed: int,
    name: str | None,
    language: str,
    label_fallback: str | None,
    vary: bool,
    output: str,
    overwrite: bool,
) -> None:
    """Labelled (sentence, cited triple) pairs of five kinds, generated from DATASET's entries and their KG,
    in the form `kalma evaluate` hands the judge; `kalma judge evaluate --pairs` reads them as they are."""
    from baselines.cli import dataset_kg
    from kalma.jsonl import dumps, make_header, read_jsonl
    from kalma.kg import open_source
    from kalma.kg.base import label_header
    from kalma.kg.version import kg_version
    from kalma.languages.phrasing import phrasing
    from kalma.models import LLMS
    from kalma.provenance import provenance
    from kalma.resume import absolute_spec
    from kalma.schema import DatasetEntry

    from .judge_pairs import make_pairs, summary, write_pairs

    new_output(output, overwrite)
    LLMS.check(llm)
    language = phrasing(language).code
    entries = list(read_jsonl(dataset, DatasetEntry, kind="dataset"))
    kg = absolute_spec(dataset_kg(dataset, kg, retrieving=False)[0])
    source = open_source(kg, language, label_fallback)  # the replacement values' labels in the sentences' language
    made = make_pairs(entries, source, llm, dataset=name or Path(dataset).stem, seed=seed, document=document, language=language, varied=vary)  # type: ignore[arg-type]
    # absolute, with the KG's digest: the pairs are read from other folders, and against later KGs
    config = {"dataset": str(Path(dataset).resolve()), "kg": kg, "llm": llm, "document": document, "seed": seed, "language": language, "vary": vary}
    config |= {"labels": label_header(source)} if language != "en" or label_fallback else {}
    header = make_header("judge-pairs", provenance(config=config, kg_version=kg_version(kg)), made=summary(made))
    write_pairs(output, made, header)
    click.echo(dumps(summary(made), indent=1))
    click.echo(f"wrote {output}")
