"""`kalma dataset …`: the demo dataset, the authors' release importer, statistics."""

from __future__ import annotations

import click


@click.group("dataset")
def dataset() -> None:
    """Datasets: the bundled demo, the authors' release, statistics."""


@dataset.command("demo")
@click.option("--kg", default="demo", show_default=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def demo(kg: str, output: str) -> None:
    """Write the hand-written demo questions about the paper's people as a dataset."""
    from kalma.jsonl import write_jsonl
    from kalma.kg import open_source
    from kalma.provenance import provenance

    from .demo import demo_entries

    n = write_jsonl(output, demo_entries(open_source(kg)), "dataset", provenance(source="kalma demo questions", kg=kg))
    click.echo(f"wrote {n} entries to {output}")


@dataset.command("import-biokalma")
@click.option("--specific", required=True, type=click.Path(exists=True, dir_okay=False), help="complex_question_graph.json")
@click.option("--general", type=click.Path(exists=True, dir_okay=False), help="simple_question_graph.json (index-aligned)")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def import_biokalma(specific: str, general: str | None, output: str) -> None:
    """Convert the authors' release into a dataset (no minimum sets: precision/recall unavailable)."""
    from kalma.biokalma import release_entries
    from kalma.jsonl import write_jsonl
    from kalma.provenance import provenance

    n = write_jsonl(output, release_entries(specific, general), "dataset", provenance(source="biokalma release", specific=specific, general=general))
    click.echo(f"wrote {n} entries to {output}")
