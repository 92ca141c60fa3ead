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

import json
import time
from importlib import resources
from pathlib import Path

import click


@click.command("demo")
@click.option("-o", "--output", default="runs/demo", show_default=True, type=click.Path(file_okay=False))
@click.option("--config", default=None, type=click.Path(exists=True, dir_okay=False), help="Bench configuration (default: bench/configs/demo.toml).")
@click.option("--overwrite", is_flag=True, help="Start over instead of resuming OUTPUT (e.g. after an upgrade changed a file format).")
def demo(output: str, config: str | None, overwrite: bool) -> None:
    """Run dataset → builder → baseline → every metric → ablations → leaderboard, offline."""
    from dataset_builder.build import BuildConfig, build
    from dataset_builder.stats import dataset_stats
    from evaluation.base import DEFAULT_METRICS, EvalOptions
    from kalma.jsonl import read_jsonl
    from kalma.schema import DatasetEntry, metric_value

    from .experiments import Bench, BenchConfig, table_line
    from .leaderboard import render
    from .submissions import as_submission, submit

    t0 = time.time()
    out = Path(output)
    cfg = BenchConfig.load(config or str(resources.files("bench") / "configs" / "demo.toml"))
    bench = Bench(cfg, out / "board" / "runs" / cfg.name, overwrite=overwrite)
    click.echo(f"[1] dataset: {len(bench.entries)} hand-written questions -> {bench.dataset_path}")

    records = Path(str(resources.files("dataset_builder") / "data" / "demo_records.jsonl"))
    report = build(records, out / "built.jsonl", BuildConfig(llm="template", lm=cfg.lm or "smollm2"), overwrite=overwrite)
    stats = dataset_stats(list(read_jsonl(out / "built.jsonl", DatasetEntry)))
    click.echo(
        f"[2] builder: {report['disambiguation']} from {records.name}; {stats['entries']} entries, "
        f"mean minimum set {stats['mean_minimum_set_size']:.1f} (LLM template, coherence by {cfg.lm}) -> {out / 'built.jsonl'}"
    )

    results = bench.run()
    click.echo(f"[3] experiments (micro ×100; alignment/[NA] by lexical = rule-based APPROXIMATION; G-Eval judge {cfg.judge}; LM metrics by {cfg.lm})")
    for exp, rows in results["tables"].items():
        for r in rows:
            click.echo(f"    {exp:<18} {r['condition']:<8} {r['llm']:<9} {table_line(r)}")

    board = out / "board"
    for row in [r for r in results["results"] if r["experiment"] == "main"]:
        sub = as_submission(
            bench.rundir / row["answers_file"],
            out / f"submission-{row['llm']}.jsonl",
            {
                "name": f"baseline-{row['llm']}",
                "model": row["llm"],
                "seed": row["seed"],
                "settings": {"temperature": cfg.temperature, "setting": row["setting"], "retrieval": "gold"},
            },
        )
        rec = submit(
            sub,
            bench.dataset_path,
            board,
            EvalOptions(nli=cfg.nli, judge=cfg.judge or None, seed=row["seed"]),
            [*DEFAULT_METRICS, "geval"] if cfg.judge else list(DEFAULT_METRICS),
        )
        f1 = metric_value(rec["summary"]["metrics"], "citation.f1_micro")
        shown = "n/a" if f1 is None else f"{100 * f1:.1f}"
        click.echo(f"[4] submission baseline-{row['llm']}: {rec['malformed_citations']} malformed citations, F1 {shown}")
    page = render(board, out / "site")
    (out / "demo.json").write_text(json.dumps({"tables": results["tables"], "builder": report}, indent=2, default=str))
    click.echo(f"[5] leaderboard: {page.resolve()}")
    click.echo(
        f"done in {time.time() - t0:.0f} s. Notes: `template` answers are fixed patterns, not a model; "
        "`lexical` entailment is an approximation; SmolLM2-135M is a real but very small model."
    )
