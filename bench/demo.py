"""`kalma demo`: the whole pipeline offline on the bundled demo knowledge graph.

Builds the demo dataset, answers it with every requested backend (the labelled `template`
patterns and the real SmolLM2 model), scores each answers file with every metric that runs
offline, and prints where everything is. Every number printed names the model behind it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click


def _rows(out: Path, spec: str) -> list:
    from kalma.jsonl import read_jsonl
    from kalma.schema import AnswerScores

    return list(read_jsonl(out / f"eval-{_slug(spec)}" / "scores.jsonl", AnswerScores))


def _slug(spec: str) -> str:
    return spec.replace(":", "_").replace("/", "_")


@click.command("demo")
@click.option("-o", "--output", default="runs/demo", show_default=True, type=click.Path(file_okay=False))
@click.option("--llms", default="template,smollm2", show_default=True, help="Comma-separated LLM specs to answer with.")
@click.option("--judge", default="smollm2", show_default=True, help="G-Eval judge ('' to skip).")
@click.option("--nli", default="lexical", show_default=True)
@click.option("--seed", default=0, show_default=True)
def demo(output: str, llms: str, judge: str, nli: str, seed: int) -> None:
    """Run dataset → baseline → evaluation offline on the bundled demo."""
    from baselines.pipeline import BaselineConfig, answer_dataset
    from dataset_builder.demo import demo_entries
    from evaluation.base import EvalOptions
    from evaluation.runner import evaluate
    from kalma.jsonl import write_jsonl
    from kalma.kg import open_source
    from kalma.provenance import provenance

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    entries = demo_entries(open_source("demo"))
    write_jsonl(out / "dataset.jsonl", entries, "dataset", provenance(source="kalma demo questions", kg="demo"))
    click.echo(f"[1] dataset: {len(entries)} hand-written questions about the KaLMA paper's people -> {out / 'dataset.jsonl'}")
    rows = []
    for spec in [s.strip() for s in llms.split(",") if s.strip()]:
        name = _slug(spec)
        answers = out / f"answers-{name}.jsonl"
        report = answer_dataset(entries, answers, BaselineConfig(llm=spec, kg="demo", seeds=[seed], temperatures=[0.0], max_tokens=160))
        click.echo(f"[2] {spec}: retrieval precision {report['precision']:.2f}, recall {report['recall']:.2f} -> {answers}")
        metrics = ["citation", "alignment", "na"] + (["geval"] if judge else [])
        summary = evaluate(out / "dataset.jsonl", answers, out / f"eval-{name}", metrics=metrics, options=EvalOptions(nli=nli, judge=judge or None, seed=seed))
        rows.append((spec, summary))
    click.echo("\n[3] scores (micro, x100; alignment by " + rows[0][1].models.get("alignment", nli) + ")")
    click.echo(f"{'answers by':<12} {'cites':>6} {'correct':>8} {'prec':>6} {'recall':>7} {'F1':>6} {'align':>6} {'fluency':>8} {'invalid':>8}")
    for spec, s in rows:
        m = s.metrics
        pct = lambda k: "n/a" if m.get(k) is None else f"{100 * m[k]:.1f}"  # noqa: E731
        flu = "n/a" if m.get("fluency_mean") is None else f"{m['fluency_mean']:.2f}"
        inv = "n/a" if m.get("fluency_invalid") is None else f"{m['fluency_invalid']:.0f}"
        cites = sum(r.counts.get("citations", 0) for r in _rows(out, spec))
        click.echo(f"{spec:<12} {cites:>6} {pct('correctness_micro'):>8} {pct('precision_micro'):>6} {pct('recall_micro'):>7} {pct('f1_micro'):>6} {pct('alignment_micro'):>6} {flu:>8} {inv:>8}")
    click.echo("(n/a: undefined, e.g. no citations to judge; invalid: judge replies that were not a score 1-5)")
    notes = sorted({n for _, s in rows for n in s.notes if "template" in n or "APPROXIMATION" in n})
    for n in notes:
        click.echo(f"note: {n}")
    if judge:
        click.echo(f"note: fluency and the other G-Eval aspects are judged by {judge}")
    (out / "demo.json").write_text(json.dumps({spec: s.model_dump() for spec, s in rows}, indent=2))
    click.echo(f"\ndone in {time.time() - t0:.0f} s; results under {out}/ (summary.md in each eval-* folder)")
