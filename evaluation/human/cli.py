"""`kalma human`: sample, export, import, score."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import click

from kalma.cli import NO_CACHE, OVERWRITE, new_output
from kalma.errors import KalmaError


@click.group("human")
def human() -> None:
    """Check the automatic numbers against people (KaLMA Tables 6 and 2): sample the units a
    metric scores, export them for annotators, import their labels, and measure agreement."""


@human.command("sample")
@click.option("--dataset", required=True, type=click.Path(exists=True, dir_okay=False), help="dataset.jsonl the answers were scored against")
@click.option(
    "--answers",
    multiple=True,
    metavar="[MODEL=]FILE",
    help="Answers file(s): alignment pairs, n per model. MODEL=FILE names the model of a file whose answers name none (a plain file of entry_id and text).",
)
@click.option("--task", type=click.Choice(["alignment", "dataset"]), default=None, help="Default: alignment with --answers, else dataset.")
@click.option("-n", "n", type=click.IntRange(min=1), default=None, help="Pairs per model (default 100), or entries (default 50).")
@click.option("--seed", default=0, show_default=True)
@click.option("--verbalized", is_flag=True, help="Alignment hypotheses as sentences, as `alignment:verbalized=true` reads them.")
@click.option("-o", "--output", required=True, help="The sample file (JSON Lines).")
@OVERWRITE
def sample_cmd(dataset: str, answers: tuple[str, ...], task: str | None, n: int | None, seed: int, verbalized: bool, output: str, overwrite: bool) -> None:
    """Draw the units people will judge."""
    from kalma.provenance import provenance

    from .sample import sample_alignment, sample_dataset

    task = task or ("alignment" if answers else "dataset")
    if task == "alignment" and not answers:
        raise click.UsageError("--task alignment samples from answers: give --answers FILE (one or more)")
    named = [_named_file(a) for a in answers]
    models = [m for m, _ in named if m]
    if len(set(models)) < len(models):
        twice = next(m for m in models if models.count(m) > 1)
        files = ", ".join(f for m, f in named if m == twice)
        raise click.BadParameter(f"{twice!r} names two files ({files}): give each model its own name, or one file per model", param_hint="--answers")
    new_output(output, overwrite)
    s = sample_alignment(dataset, named, n or 100, seed, verbalized) if task == "alignment" else sample_dataset(dataset, n or 50, seed)
    _atomic(output, lambda tmp: s.write(tmp, provenance(config={"task": task, "n": n, "seed": seed})))
    if task == "alignment":
        per = ", ".join(f"{m}: {v['sampled']} of {v['pairs']} pairs" + (f" ({v['why']})" if v.get("why") else "") for m, v in s.info["models"].items())
        click.echo(f"wrote {len(s.units)} alignment units to {output} (sample {s.digest}; {per})")
    else:
        click.echo(f"wrote {len(s.units)} questions of {s.info['n']} entries to {output} (sample {s.digest})")


@human.command("export")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, help="A folder for annotate.csv, Label Studio's tasks and config, and the instructions.")
@OVERWRITE
def export_cmd(sample: str, output: str, overwrite: bool) -> None:
    """Files for annotators, blinded: no model, no automatic judgement."""
    from kalma.folders import replacing

    from .export import WRITES, export
    from .units import Sample

    s = Sample.read(sample)
    with replacing(output, overwrite, WRITES, "kalma human export") as tmp:
        export(s, tmp)
    click.echo(f"wrote {output}/annotate.csv, label-studio-tasks.json, label-studio-config.xml, instructions.md ({len(s.units)} units, sample {s.digest})")


@human.command("import")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.argument("annotations", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--annotator",
    "names",
    multiple=True,
    metavar="FILE=NAME",
    help="Who labelled FILE (its one annotator), or FILE#ID=NAME for Label Studio user ID in FILE; repeatable. "
    "Label Studio's usual export names annotators by a number per server.",
)
@click.option("-o", "--output", required=True, help="The labels file (JSON Lines), one row per unit and annotator.")
@OVERWRITE
def import_cmd(sample: str, annotations: tuple[str, ...], names: tuple[str, ...], output: str, overwrite: bool) -> None:
    """Read annotators' CSVs and Label Studio's exports (JSON, JSON_MIN, CSV, TSV) back; every bad row is an error."""
    from kalma.jsonl import write_jsonl
    from kalma.provenance import provenance

    from .labels import read_annotations, unlabelled
    from .units import LABELS_KIND, Sample

    s = Sample.read(sample)
    labels = read_annotations(s, annotations, names)
    new_output(output, overwrite)
    config = {"sample": sample, "digest": s.digest, "annotations": list(annotations), "annotators": list(names)}
    _atomic(output, lambda tmp: write_jsonl(tmp, labels, LABELS_KIND, provenance(config=config)))
    who = sorted({lb.annotator for lb in labels})
    missing = unlabelled(s, labels)
    click.echo(f"wrote {len(labels)} labels by {len(who)} annotator{'s' if len(who) != 1 else ''} ({', '.join(who)}) to {output}")
    if missing:
        click.echo(f"note: {len(missing)} of {len(s.units)} units have no label from anyone (first: {missing[0]})", err=True)


@human.command("score")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.argument("labels", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--nli", default="lexical", show_default=True, help="The entailment backend whose alignment is checked against people.")
@click.option("--threshold", default=0.5, show_default=True, type=click.FloatRange(0, 1))
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap intervals.")
@click.option("-o", "--output", required=True, help="A folder for human.md, human.json and (alignment) majority.jsonl.")
@OVERWRITE
@NO_CACHE
def score_cmd(sample: str, labels: tuple[str, ...], nli: str, threshold: float, seed: int, output: str, overwrite: bool) -> None:
    """Tables 6 and 2 with agreement statistics; the majority labels as a `table:` file."""
    from kalma.provenance import provenance

    from .labels import check_across
    from .score import score_alignment, score_dataset, write_report
    from .units import Sample, read_labels

    s = Sample.read(sample)
    found = read_labels(labels, sample)
    stray = [lb for lb in found if lb.unit_id not in s.by_id]
    if stray:
        raise KalmaError(f"{stray[0].source}: field 'unit_id': {stray[0].unit_id!r} is not in {sample}: labels of another sample")
    check_across(found, scoring=True)  # labels files imported one at a time must hold what one import would accept
    new_output(output, overwrite)
    report = score_alignment(s, found, nli, threshold, seed) if s.task == "alignment" else score_dataset(s, found, seed)
    config = {"sample": sample, "labels": list(labels), "nli": nli, "threshold": threshold, "seed": seed}
    paths = write_report(report, s, found, output, provenance(config=config))
    click.echo(paths[1].read_text())
    click.echo("wrote " + ", ".join(str(p) for p in paths))


def _named_file(given: str) -> tuple[str | None, str]:
    """`FILE`, or `MODEL=FILE`: (the model it names or None, the file)."""
    if Path(given).is_file():
        return None, given
    model, sep, path = given.partition("=")
    if sep and model.strip() and Path(path).is_file():
        return model.strip(), path
    raise click.BadParameter(f"no such file: {(path if sep else given)!r}", param_hint="--answers")


def _atomic(output: str, write: Callable[[str], object]) -> None:
    """Write through a temporary file beside `output`, renamed at the end: never half a file."""
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
