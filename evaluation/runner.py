"""One evaluation run: answers + dataset → per-answer scores, a summary and a markdown table.

    from evaluation.runner import evaluate
    summary = evaluate("dataset.jsonl", "answers.jsonl", "runs/eval", metrics=["citation", "alignment"])

The per-answer file is written row by row (fsynced). A killed run resumes from it: answers
already scored are skipped, and the summary is always computed from the stored rows, so a
resumed run reports exactly what an uninterrupted one would.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from kalma.answers_file import AnswersFile, Problem, load_answers
from kalma.errors import ConfigError
from kalma.jsonl import read_jsonl
from kalma.provenance import provenance
from kalma.resume import ResumableOutput, fingerprint
from kalma.schema import Answer, AnswerScores, DatasetEntry, Summary, first_entries

from .base import DEFAULT_METRICS, MALFORMED_REASONS, MARKUP_TOTALS, SCALES, UNUSABLE_LIMIT, EvalItem, EvalOptions, Metric, Scored, get_metric, show

SCORES_FILE, SUMMARY_FILE, TABLE_FILE = "scores.jsonl", "summary.json", "summary.md"


def fill_missing(answers: list[Answer], entries: dict[str, DatasetEntry]) -> tuple[list[Answer], int]:
    """Every entry gets an answer in every run: a missing one is scored as an empty answer."""
    model = answers[0].model if answers else "none"
    filled = list(answers) + [
        Answer(entry_id=eid, text="", model=model, run=run, meta={"missing": True})
        for run, ids in AnswersFile(list(answers)).missing(list(entries)).items()
        for eid in ids
    ]
    return filled, len(filled) - len(answers)


def evaluate(
    dataset: str | Path | Sequence[DatasetEntry],
    answers: str | Path | Sequence[Answer],
    out_dir: str | Path,
    metrics: Iterable[str] = DEFAULT_METRICS,
    options: EvalOptions | None = None,
    kg_source: str | None = None,
    chunk_size: int = 64,
    progress: bool = True,
    stop_after: int | None = None,
    overwrite: bool = False,
    desc: str | None = None,
    limit: int | None = None,
    model: str | None = None,
    named: str | None = None,
) -> Summary:
    """Score `answers` against `dataset` into `out_dir` (see the module docstring).

    `limit` scores the answers to the first `limit` entries only, and says so in every report.
    `model` names the model of answers whose lines and header name none (`--model`); `named` is
    what the reports call the answers' model (a submission's model: one name everywhere).
    `stop_after` scores at most that many new answers, then returns (used to test resumption).
    An existing output made from other inputs or settings is refused (`kalma.resume`), or
    started over with `overwrite`.
    """
    options = options or EvalOptions()
    out = Path(out_dir)  # made by the scores file's writer: a run that fails before it leaves no folder
    entry_list = list(read_jsonl(dataset, DatasetEntry, kind="dataset")) if isinstance(dataset, (str, Path)) else list(dataset)
    entries = {e.id: e for e in entry_list}
    problems: list[Problem] = []
    unnamed: list[str] = []
    if isinstance(answers, (str, Path)):
        loaded = load_answers(answers, entries, model or named)
        answer_list, problems = loaded.answers, loaded.problems
        unnamed = [c] if (c := loaded.model_caveat()) else []
    else:
        answer_list = list(answers)
    entry_list, limited = first_entries(entry_list, limit)
    if limited:
        entries = {e.id: e for e in entry_list}
        answer_list = [a for a in answer_list if a.entry_id in entries]
    answer_list, n_missing = fill_missing(answer_list, entries)
    if kg_source:
        answer_list = _attach_kg(answer_list, entries, kg_source)

    names = list(dict.fromkeys(metrics))
    active: list[Metric] = [get_metric(n, options) for n in names]
    given: dict[str, str] = {}
    for m, spec in zip(active, names):  # one namespace per metric: two option sets of one metric are two runs
        if m.name in given:
            raise ConfigError(f"metric {m.name!r} is given twice ({given[m.name]!r} and {spec!r}); evaluate each into its own output")
        given[m.name] = spec
    unavailable = {m.name: need for m in active for need in m.needs if need in {"judge", "lm"} and not getattr(options, need)}
    for m in active:
        m.prepare(entry_list)
    config = {
        "metrics": names,
        "options": asdict(options),
        "kg_source": kg_source,
        **({"limit": limit} if limited else {}),
        "dataset": str(dataset) if isinstance(dataset, (str, Path)) else "<in memory>",
        "answers": str(answers) if isinstance(answers, (str, Path)) else "<in memory>",
    }
    models = {k: v for m in active for k, v in m.models().items()}  # builds every backend: a missing model fails here
    limits = ([limited] if limited else []) + dataset_limits(entry_list, answer_list, [m.name for m in active])
    if progress:  # said once, before any scoring
        for line in limits:
            tqdm.write(f"note: {line}", file=sys.stderr)
    answer_models = sorted({a.model for a in answer_list if not a.meta.get("missing")})
    if named and answer_models != [named]:
        answer_models = [f"{named} (the answers say {', '.join(answer_models) or 'nothing'})" if answer_models else named]

    run = fingerprint(
        {"dataset": dataset if isinstance(dataset, (str, Path)) else entry_list, "answers": answers if isinstance(answers, (str, Path)) else answer_list},
        {"metrics": names, "options": asdict(options), "kg_source": kg_source, **({"limit": limit} if limited else {})},
        components={"nli": options.nli, "judge": options.judge, "lm": options.lm, "kg": kg_source},  # files they name, by content
    )
    with ResumableOutput(
        out / SCORES_FILE,
        "scores",
        AnswerScores,
        lambda r: r.answer_id,
        run,
        provenance(config=config, models=models, answer_models=answer_models),
        overwrite=overwrite,
    ) as output:
        done = {r.answer_id: r for r in output.existing}
        problems += [Problem("corrupt_line", f"resume: {e}") for e in output.errors]
        todo = [a for a in answer_list if a.answer_id() not in done]
        if stop_after is not None:
            todo = todo[:stop_after]
        bar = tqdm(total=len(todo), desc=f"evaluate: {desc}" if desc else "evaluate", unit="answer", disable=not progress)
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start : start + chunk_size]
            items = [EvalItem.build(a, entries.get(a.entry_id)) for a in chunk]
            rows = [AnswerScores(answer_id=a.answer_id(), entry_id=a.entry_id, markup=it.markup_counts()) for a, it in zip(chunk, items)]
            for m in active:
                if m.name in unavailable:  # declared needs, enforced once here
                    for row in rows:
                        row.notes[m.name] = f"{m.name} unavailable: it needs --{unavailable[m.name]}"
                    continue
                for row, s in zip(rows, m.score(items)):
                    row.values[m.name], row.counts[m.name] = s.values, s.counts
                    row.notes.update(s.notes)
                    if s.details:
                        row.details[m.name] = s.details
            for a, row in zip(chunk, rows):
                if a.meta.get("missing"):
                    row.notes["missing"] = "no answer for this entry: scored as empty"
                output.write(row)
                done[row.answer_id] = row
            bar.update(len(chunk))
        bar.close()

        wanted = [a.answer_id() for a in answer_list]
        rows = [done[k] for k in wanted if k in done]
        notices = [a.meta["note"] for a in answer_list if isinstance(a.meta.get("note"), str)]
        from_cache = sum(bool(a.meta.get("cached")) for a in answer_list)
        first = unnamed + answer_caveats(answer_list, rows, answer_models)
        summary = summarize(rows, active, config, models, answer_models, problems, n_missing, limits, notices, len(rows) == len(wanted), from_cache, first)
        (out / SUMMARY_FILE).write_text(summary.model_dump_json(indent=2))
        (out / TABLE_FILE).write_text(markdown_table(summary))
    return summary


def _attach_kg(answers: list[Answer], entries: dict[str, DatasetEntry], spec: str) -> list[Answer]:
    """Judge answers without their own KG against `spec`'s subgraphs of the entry's people."""
    from kalma.kg import open_source
    from kalma.schema import KnowledgeGraph

    src = open_source(spec)
    people = sorted({q for a in answers if a.kg is None for q in entries[a.entry_id].people})
    graphs = src.subgraphs(people)
    return [
        a if a.kg is not None else a.model_copy(update={"kg": KnowledgeGraph(entities=[graphs[q] for q in entries[a.entry_id].people if q in graphs])})
        for a in answers
    ]


_KNOWLEDGE_LINE = re.compile(r"\bQ\d+\s*\|[^|\n]*\|")  # `Q1 | entity | relation | value`, the prompt's own lines


def cites_nothing(row: AnswerScores) -> bool:
    """An answer with no citation, [NA] or bracket of any kind."""
    return not any(row.markup.get(k, 0) for k in ("citations", "na_marks", "malformed"))


def answer_caveats(answers: Sequence[Answer], rows: Sequence[AnswerScores], models: Sequence[str]) -> list[str]:
    """What the answers say of the model before any metric does: most cite nothing (no citation,
    [NA] or bracket at all), or copy the knowledge lines instead of answering; cut at the token limit."""
    by_id = {r.answer_id: r for r in rows}
    written = [(a, by_id.get(a.answer_id())) for a in answers if not a.meta.get("missing")]
    who = ", ".join(models) or "the model"
    out = []
    bare = [a for a, r in written if r is not None and cites_nothing(r)]
    if written and len(bare) / len(written) > UNUSABLE_LIMIT:
        copied = sum(bool(_KNOWLEDGE_LINE.search(a.text)) for a in bare)
        how = f"; {copied} of them copy the knowledge list (`QID | entity | relation | value` lines) instead of answering" if copied else ""
        said = f"{len(bare)} of {len(written)} answers by {who} cite nothing (no citation, [NA] or bracket){how}"
        out.append(f"{said}: citation figures say little of the model.")
    cut = sum(a.meta.get("finish_reason") == "length" for a, _ in written)
    if cut:
        out.append(f"{cut} of {len(written)} answers by {who} were cut at the token limit (--max-tokens), and are scored as they are.")
    return out


def dataset_limits(entries: Sequence[DatasetEntry], answers: Sequence[Answer], metrics: Sequence[str]) -> list[str]:
    """What the dataset (and the answers' absent sets) cannot support, said once and up front."""
    out = []
    n = len(entries)
    no_set = sum(e.minimum_set is None for e in entries)
    if "citation" in metrics and no_set:
        who = "The dataset has no minimum knowledge sets" if no_set == n else f"{no_set} of {n} entries have no minimum knowledge set"
        out.append(f"{who} (as in the authors' release): citation precision, recall and F1 are n/a for them; correctness and alignment still apply.")
    no_ref = sum(not e.reference for e in entries)
    wanting = [m for m in ("kprec", "conner-extrinsic") if m in metrics]
    if wanting and no_ref:
        who = "No entry has a reference answer" if no_ref == n else f"{no_ref} of {n} entries have no reference answer"
        out.append(f"{who}: {', '.join(wanting)} reference-based values are n/a for them.")
    if "na" in metrics and answers and all(a.absent is None for a in answers):
        out.append(
            "No answer carries an absent set (what the KG given lacks of the minimum set): [NA] precision and recall are n/a. "
            "`kalma answer` and `kalma bench run` record one whenever the dataset has minimum sets."
        )
    return out


def summarize(
    rows: Sequence[AnswerScores],
    metrics: Sequence[Metric],
    config: dict[str, Any],
    models: dict[str, str],
    answer_models: list[str],
    problems: list[Problem],
    n_missing: int,
    limits: Sequence[str] = (),
    notices: Sequence[str] = (),
    complete: bool = True,
    from_cache: int = 0,
    first: Sequence[str] = (),
) -> Summary:
    values: dict[str, dict[str, float | None]] = {}
    dropped: dict[str, dict[str, int]] = {}
    support: dict[str, dict[str, int]] = {}
    failed: dict[str, dict[str, Any]] = {}
    failure_caveats: list[str] = []
    for m in metrics:
        own = [Scored(r.values.get(m.name, {}), r.counts.get(m.name, {}), details=r.details.get(m.name, {})) for r in rows]
        v, d = m.aggregate(own)
        if set(v) != set(m.outputs):  # a renamed key must fail here, not blank a table column downstream
            raise RuntimeError(f"metric {m.name!r} returned {sorted(set(v) ^ set(m.outputs))} against its declared outputs")
        f = m.failures(own)
        if f is not None and f.unusable:
            failed[m.name] = asdict(f) | {"over_limit": f.over_limit}
            failure_caveats.append(f.caveat("G-Eval" if m.name == "geval" else "Entailment" if "nli" in m.needs else m.name))
            if f.over_limit:  # never a number from the few replies that parsed
                v = {k: (x if m.scale(k) == "count" else None) for k, x in v.items()}
        values[m.name] = v
        support[m.name] = m.support(own, d)
        if d:
            dropped[m.name] = d
    caveats = ["INCOMPLETE: not every answer has been scored yet; rerun to resume."] if not complete else []
    caveats += list(first)  # what the answers themselves say of the model (none named, no citations)
    caveats += [f"Answers: {n}" for n in dict.fromkeys(notices)]  # e.g. the template backend is not a language model
    caveats += list(dict.fromkeys(failure_caveats))  # a judge whose replies could not be read
    caveats += list(dict.fromkeys(c for m in metrics for c in m.caveats()))
    caveats += list(limits)
    total = {k: sum(r.markup.get(k, 0) for r in rows) for k in MARKUP_TOTALS}
    if any("correct" in r.counts.get("citation", {}) for r in rows):
        total["correct_citations"] = sum(r.counts.get("citation", {}).get("correct", 0) for r in rows)
    malformed = {k: n for k in MALFORMED_REASONS if (n := sum(r.markup.get(f"malformed_{k}", 0) for r in rows))}
    return Summary(
        metrics=values,
        counts={
            "answers": len(rows),
            **total,
            "missing_answers_scored_empty": n_missing,
            "answers_from_cache": from_cache,
            "answers_citing_nothing": sum("missing" not in r.notes and cites_nothing(r) for r in rows),
        },
        malformed=malformed,
        dropped=dropped,
        support=support,
        scales={m.name: {k: m.scale(k) for k in m.outputs} for m in metrics},
        models={"answers": ", ".join(answer_models) or "none", **models},
        caveats=caveats,
        failures=failed,
        problems=dict(Counter(p.kind for p in problems)),
        notes=sorted({n for r in rows for n in r.notes.values()}) + [p.message for p in problems],
        provenance=provenance(config=config),
    )


def markdown_table(s: Summary) -> str:
    lines = [f"# Evaluation of {s.models.get('answers', '?')}", ""]
    if s.caveats:
        lines += ["Read first:", ""] + [f"- {c}" for c in s.caveats] + [""]
    lines += ["Totals: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.counts.items()), ""]
    if s.problems:
        lines += ["Problems of the answers file: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in s.problems.items()), ""]
    if s.malformed:
        lines += ["Malformed markup: " + ", ".join(f"{k} {v}" for k, v in s.malformed.items()), ""]
    lines += ["| metric | value | scale | computed over | dropped |", "|---|---|---|---|---|"]
    for name, values in s.metrics.items():
        for k, v in values.items():
            scale = s.scales.get(name, {}).get(k, "rate")
            over = s.support.get(name, {}).get(k, "")
            lines.append(f"| {name}.{k} | {show(v, scale)} | {SCALES.get(scale, scale)} | {over} | {s.dropped.get(name, {}).get(k, '')} |")
    lines += ["", "Models:", ""] + [f"- {k}: {v}" for k, v in s.models.items()]
    if s.notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in s.notes]
    return "\n".join(lines) + "\n"


__all__ = ["evaluate", "EvalOptions", "markdown_table"]
