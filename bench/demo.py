"""`kalma demo` (what `make demo` runs): the whole benchmark offline on the bundled demo.

1. the demo dataset (hand-written questions about the KaLMA paper's people);
2. the dataset builder on the bundled relation records (template LLM, SmolLM2 coherence);
3. the bench experiments of bench/configs/demo.toml: baseline answers from `template` and
   SmolLM2 scored with every metric, a knowledge-removal and a retrieval-accuracy ablation,
   general vs specific;
4. each main-table answers file filed as a leaderboard submission;
5. the leaderboard page, with plots.

Every number printed names the model behind it; `template` and `lexical` are labelled.
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path

import click

from kalma.cli import NO_CACHE
from kalma.jsonl import dumps


def here(path: Path) -> str:
    """A path as the user reads it: relative to where they stand when it lies below, else absolute."""
    resolved = path.resolve()
    return str(resolved.relative_to(Path.cwd())) if resolved.is_relative_to(Path.cwd()) else str(resolved)


@click.command("demo")
@click.option("-o", "--output", default="runs/demo", show_default=True, type=click.Path(file_okay=False))
@click.option("--config", default=None, type=click.Path(exists=True, dir_okay=False), help="Bench configuration (default: bench/configs/demo.toml).")
@click.option("--overwrite", is_flag=True, help="Start over instead of resuming OUTPUT (e.g. after an upgrade changed a file format).")
@NO_CACHE
def demo(output: str, config: str | None, overwrite: bool) -> None:
    """Run dataset → builder → baseline → every metric → ablations → leaderboard, offline."""
    from dataset_builder.build import BuildConfig, build
    from dataset_builder.stats import dataset_stats
    from evaluation.base import DEFAULT_METRICS, show
    from kalma.jsonl import read_jsonl
    from kalma.schema import DatasetEntry

    from .experiments import TABLE_NOTE, Bench, BenchConfig, format_table
    from .leaderboard import render
    from .records import SubmissionMeta
    from .submissions import as_submission, submit

    t0 = time.time()
    out = Path(output)
    cfg = BenchConfig.load(config or str(resources.files("bench") / "configs" / "demo.toml"))
    # the board's layout: BOARD/runs/NAME/ for a bench run, BOARD/submissions/NAME/ for a submission
    bench = Bench(cfg, out / "board" / "runs" / "experiments", overwrite=overwrite)
    click.echo(f"[1] dataset: {bench.dataset.label()} -> {here(bench.dataset_path)}")

    records = Path(str(resources.files("dataset_builder") / "data" / "demo_records.jsonl"))
    started = time.time()
    report = build(records, out / "built.jsonl", BuildConfig(llm="template", lm=cfg.lm or "smollm2"), overwrite=overwrite)
    stats = dataset_stats(list(read_jsonl(out / "built.jsonl", DatasetEntry)))
    click.echo(
        f"[2] builder: {report['disambiguation']} from {records.name}; {stats['entries']} entries, "
        f"mean minimum set {stats['mean_minimum_set_size']:.1f} (LLM template, coherence by {cfg.lm}) -> {here(out / 'built.jsonl')} "
        f"({time.time() - started:.0f} s)"
    )

    results = bench.run()
    judged = f"G-Eval judge {cfg.judge}" if cfg.judge else "no G-Eval: no offline model gives readable 1-5 ratings (set a judge in the config)"
    click.echo(f"[3] experiments ({TABLE_NOTE}; {judged}; LM metrics by {cfg.lm}; alignment and [NA] by {cfg.nli})")
    said: set[str] = set()
    for exp, rows in results.tables.items():
        took = {llm: sum(r.seconds for r in results.results if r.experiment == exp and r.llm == llm) for llm in dict.fromkeys(r.llm for r in rows)}
        timing = ", ".join(f"{llm} {s:.0f} s" for llm, s in took.items())
        click.echo("    " + format_table(exp, rows, results.dataset).replace("\n", "\n    ") + f"\n    ({timing})")
        for caveat in dict.fromkeys(c for r in results.results if r.experiment == exp for c in r.caveats):
            if caveat not in said:  # what a row means, said once under the first table it explains
                said.add(caveat)
                click.echo(f"    note: {caveat}")

    board = out / "board"
    for row in [r for r in results.results if r.experiment == "main"]:
        meta = SubmissionMeta(
            name=f"baseline-{row.llm}-s{row.seed}",
            model=row.llm,
            seeds=[row.seed],
            settings={"temperature": cfg.temperature, "setting": row.setting, "retrieval": row.retrieval},
        )
        sub = as_submission(bench.rundir / row.answers_file, out / f"submission-{row.llm}-s{row.seed}.jsonl", meta)
        rec = submit(
            sub,
            bench.dataset_path,
            board,
            cfg.options(row.seed),
            [*DEFAULT_METRICS, "geval"] if cfg.judge else list(DEFAULT_METRICS),
            dataset_name="kalma demo",
        )
        f1 = show(rec.summary.value("citation.f1_micro"))
        click.echo(f"[4] submission {meta.name}: {rec.answers_scored} answers, {rec.malformed_citations} malformed citations, F1 {f1}")
    page, damaged = render(board, out / "site")
    (out / "demo.json").write_text(
        dumps({"tables": {k: [r.model_dump() for r in v] for k, v in results.tables.items()}, "builder": report}, indent=2, default=str)
    )
    click.echo(f"[5] leaderboard: {here(page)}" + (f" ({len(damaged)} damaged board files left off)" if damaged else ""))
    click.echo(
        f"done in {time.time() - t0:.0f} s. Notes: `template` answers are fixed patterns, not a model; "
        "`lexical` entailment is an approximation; SmolLM2-135M is a real but very small model."
    )
