"""`kalma harness …`: KaLMA inside lm-evaluation-harness."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("harness")
def harness() -> None:
    """KaLMA as lm-evaluation-harness tasks: `lm_eval --tasks kalma --include_path $(kalma harness tasks)`;
    the samples file it writes (--log_samples) goes to `kalma evaluate --answers`."""


@harness.command("tasks")
@click.option(
    "--dataset",
    default=None,
    help="Write task files whose default dataset is this one (a KaLMA dataset file, or the release's complex_question_graph.json); "
    "without it the tasks ask the bundled demo unless --metadata names one.",
)
@click.option("-o", "--output", default=None, type=click.Path(file_okay=False), help="The folder to write the task files into (with --dataset).")
def tasks(dataset: str | None, output: str | None) -> None:
    """Print the folder of KaLMA's task files (for lm_eval --include_path), or write them for a dataset."""
    from . import TASKS_DIR, dataset_entries, require_lm_eval, write_tasks

    require_lm_eval()
    if dataset is None and output is None:
        click.echo(str(TASKS_DIR))
        return
    if dataset is None or output is None:
        raise click.UsageError("--dataset and -o go together: the task files for that dataset are written into the folder")
    entries = dataset_entries(dataset)  # a dataset that cannot be read fails here, not inside the harness
    settings = {s: sum(1 for e in entries if e.question(s)) for s in ("specific", "general")}
    folder = write_tasks(dataset, Path(output))
    click.echo(f"wrote {folder}: kalma_specific ({settings['specific']} questions), kalma_general ({settings['general']}), group kalma")
    click.echo(str(folder.resolve()))
