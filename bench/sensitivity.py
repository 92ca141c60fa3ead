"""How much a board's figures depend on the judge (`kalma judge sensitivity BOARD --nli A --nli B`).

Card
- Re-scores every filed submission's judge-dependent figures (alignment, [NA] precision, [NA]
  recall; G-Eval's four aspects with `--judge`) under each judge, by `kalma evaluate` itself, whose
  judgements go through the call cache. Citation F1 does not depend on a judge and is never re-scored.
- Per figure: every system's value under each judge with its interval (`kalma evaluate`'s); Kendall's
  tau-b between the first judge's ordering of the systems and each other judge's, with a percentile
  bootstrap interval over dataset entries (every system's figure recomputed from the same drawn
  entries); the pairs of systems whose order flips (a strict order reversed; a tie under one judge
  and an order under the other is counted apart); and Cohen's kappa between the two judges'
  per-decision verdicts on the board's own sentences (each cited triple aligned or not, each [NA]
  sentence right or wrong; G-Eval's scores have no per-sentence decision). Kappa is 1 when the two
  agree on every decision, and undefined (n/a) when they disagree and all decisions fall in one class.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.base import EvalOptions
from evaluation.identity import ran_line
from evaluation.runner import evaluate
from evaluation.uncertainty import LEVEL, RESAMPLES, bootstrap
from kalma.errors import KalmaError
from kalma.jsonl import dumps, read_jsonl
from kalma.schema import AnswerScores

from .leaderboard import _load
from .records import FiledSubmission
from .submissions import filed_entries

# figure -> (metric, the per-answer count it sums, over the per-answer count it sums)
NLI_FIGURES: dict[str, tuple[str, str, str]] = {
    "alignment_micro": ("alignment", "aligned", "align_pairs"),
    "na_precision_micro": ("na", "na_sentences_correct", "na_sentences"),
    "na_recall_micro": ("na", "absent_entailed", "absent"),
}
GEVAL_ASPECTS = ("coherence", "consistency", "fluency", "relevance")
NA_RIGHT = {"entails absent knowledge", "irrelevant: counts correct"}


class SensitivityError(KalmaError, ValueError):
    """A board that cannot be re-scored: nothing filed, a dataset that is not there."""


@dataclass
class Scoring:
    """One submission scored under one judge: its summary and every answer's scores."""

    system: str
    judge: str
    values: dict[str, float | None]
    bounds: dict[str, tuple[float | None, float | None]]
    rows: list[AnswerScores]
    ran: dict[str, Any]
    limit: int | None = (
        None  # filed with `--limit N`: re-scored on its first N entries only, and said  # the judge as it ran (`evaluation.identity`): weights, dtype, device
    )


def _metric_base(spec: str) -> str:
    return spec.split(":", 1)[0]


def rescore(board: Path, out: Path, nli: Sequence[str], judges: Sequence[str], dataset: str | None, resamples: int) -> dict[str, dict[str, Scoring]]:
    """{judge spec: {system: Scoring}}: every filed submission re-scored under each judge."""
    filed = filed_entries(board)
    if not filed:
        raise SensitivityError(f"{board}: no filed submission (submissions/<name>/submission.json): nothing to re-score")
    records = {name: (folder, _load(folder / "submission.json", FiledSubmission)) for name, folder in filed.items()}
    digests = {r.dataset.digest for _, r in records.values()}
    if len(digests) > 1:
        raise SensitivityError(f"{board}: submissions on {len(digests)} datasets: judge sensitivity compares systems on one dataset")
    out_runs: dict[str, dict[str, Scoring]] = {}
    asked = [("nli", j) for j in nli] + [("judge", j) for j in judges]
    for k, (role, spec) in enumerate(asked):
        label = f"{role}:{spec}" if role == "judge" else spec
        label = label if label not in out_runs else f"{label} #{k + 1}"  # the same judge twice: a control, told apart
        per: dict[str, Scoring] = {}
        for name, (folder, rec) in records.items():
            config = rec.summary.provenance.get("config", {})  # what it was scored with
            data = dataset or str(config.get("dataset", ""))
            if not Path(data).is_file():
                raise SensitivityError(f"{folder / 'submission.json'}: its dataset {data!r} is not there: give --dataset")
            answers = next((p for p in (folder / "answers.jsonl", folder / "answers.eval") if p.exists()), None)
            if answers is None:
                raise SensitivityError(f"{folder}: no answers file (answers.jsonl) to re-score")
            options = EvalOptions(**{**config.get("options", {}), role: spec})
            wanted = {"nli": ("alignment", "na"), "judge": ("geval",)}[role]
            metrics = [m for m in config.get("metrics", []) if _metric_base(m) in wanted] or list(wanted)
            summary = evaluate(
                data,
                answers,
                out / f"judge-{k}" / name,
                metrics=metrics,
                options=options,
                kg_source=config.get("kg_source"),
                progress=False,
                named=rec.submission.model,
                limit=config.get("limit"),
                resamples=resamples,
                overwrite=True,
                partial=rec.summary.coverage is not None and rec.summary.coverage.how == "partial",
            )
            rows = list(read_jsonl(out / f"judge-{k}" / name / "scores.jsonl", AnswerScores, kind="scores"))
            values, bounds = {}, {}
            for figure in (f for f in _figures(role) if figure_metric(f) in {_metric_base(m) for m in metrics}):  # what the board scored
                metric = figure_metric(figure)
                values[figure] = summary.metrics.get(metric, {}).get(figure)
                b = summary.intervals.get(metric, {}).get(figure)
                bounds[figure] = (b.low, b.high) if b is not None else (None, None)
            per[name] = Scoring(name, label, values, bounds, rows, (summary.judges or {}).get(role, {}), config.get("limit"))
        out_runs[label] = per
    return out_runs


def _figures(role: str) -> list[str]:
    return list(NLI_FIGURES) if role == "nli" else [f"{a}_mean" for a in GEVAL_ASPECTS]


def figure_metric(figure: str) -> str:
    return NLI_FIGURES[figure][0] if figure in NLI_FIGURES else "geval"


def _per_entry(rows: Sequence[AnswerScores], figure: str, entries: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(numerator, denominator) of `figure` per dataset entry: summed counts for a micro figure,
    summed values and their number for G-Eval's means."""
    index = {e: i for i, e in enumerate(entries)}
    num, den = np.zeros(len(entries)), np.zeros(len(entries))
    for r in rows:
        i = index[r.entry_id]
        if figure in NLI_FIGURES:
            metric, top, bottom = NLI_FIGURES[figure]
            counts = r.counts.get(metric, {})
            if figure.startswith("na_") and "absent" not in counts:
                continue  # no absent set: the [NA] figures leave the answer out, as the evaluator does
            num[i] += counts.get(top, 0)
            den[i] += counts.get(bottom, 0)
        else:
            v = r.values.get("geval", {}).get(figure.removesuffix("_mean"))
            if v is not None:
                num[i] += v
                den[i] += 1
    return num, den


def kendall_tau(x: Sequence[Any], y: Sequence[Any]) -> Any:
    """Kendall's tau-b of two orderings of the same systems (elementwise over arrays of resamples);
    NaN where either has no value or one judge ties every system.

    >>> float(kendall_tau([0.9, 0.5, 0.1], [0.8, 0.6, 0.2])), float(kendall_tau([0.9, 0.5, 0.1], [0.1, 0.5, 0.9]))
    (1.0, -1.0)
    >>> round(float(kendall_tau([0.9, 0.5, 0.1], [0.5, 0.9, 0.1])), 4)
    0.3333
    """
    concordant: Any = 0.0
    apart_x: Any = 0.0
    apart_y: Any = 0.0
    for a, b in combinations(range(len(x)), 2):
        dx, dy = np.sign(np.asarray(x[a]) - np.asarray(x[b])), np.sign(np.asarray(y[a]) - np.asarray(y[b]))
        concordant = concordant + dx * dy
        apart_x, apart_y = apart_x + (dx != 0), apart_y + (dy != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return concordant / np.sqrt(apart_x * apart_y)


def flips(systems: Sequence[str], x: Sequence[float | None], y: Sequence[float | None]) -> tuple[list[list[str]], list[list[str]]]:
    """(pairs whose strict order reverses, pairs tied under one judge and ordered under the other),
    each pair [the first judge's higher, the other]."""
    reversed_, tied = [], []
    for a, b in combinations(range(len(systems)), 2):
        xa, xb, ya, yb = x[a], x[b], y[a], y[b]
        if None in (xa, xb, ya, yb):
            continue
        dx, dy = np.sign(xa - xb), np.sign(ya - yb)  # type: ignore[operator]
        first, second = (systems[a], systems[b]) if dx >= 0 else (systems[b], systems[a])
        if dx * dy < 0:
            reversed_.append([first, second])
        elif (dx == 0) != (dy == 0):
            tied.append([first, second])
    return reversed_, tied


def decisions(rows: Sequence[AnswerScores]) -> dict[tuple[str, ...], bool]:
    """Every per-sentence decision a judge made on these answers: each cited triple aligned or not,
    each [NA] sentence right or wrong, keyed by answer, sentence and citation."""
    out: dict[tuple[str, ...], bool] = {}
    for r in rows:
        for s in r.verdicts:
            for c, cit in enumerate(s.citations):
                if cit.aligned is not None and not cit.unjudged:
                    out[(r.answer_id, str(s.index), str(c))] = cit.aligned
            if s.na is not None and s.na.outcome != "unscored":
                out[(r.answer_id, str(s.index), "na")] = s.na.outcome in NA_RIGHT
    return out


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' yes/no decisions on the same items; 1 when they agree on every
    one, None when they do not and chance agreement is already 1 (or there is nothing to rate).

    >>> cohen_kappa([True, True, False, False], [True, False, False, False])
    0.5
    """
    n = len(a)
    if not n:
        return None
    agree = sum(x == y for x, y in zip(a, b)) / n
    if agree == 1.0:
        return 1.0
    pa, pb = sum(a) / n, sum(b) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    return None if chance == 1.0 else (agree - chance) / (1 - chance)


def _none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _tau_of(systems: Sequence[str], a: str, b: str) -> Callable[[Any], Any]:
    """Kendall's tau between judges a and b, from each system's summed columns (full data or resamples)."""

    def value(sums: Any, j: str) -> list[Any]:
        return [sums[f"num|{j}|{s}"] / sums[f"den|{j}|{s}"] for s in systems]

    return lambda sums: kendall_tau(value(sums, a), value(sums, b))


def analyse(runs: dict[str, dict[str, Scoring]], resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL) -> dict[str, Any]:
    """The report (see the card) from the re-scored runs: per figure, values, tau, flips, kappa."""
    judges = list(runs)
    nli = [j for j in judges if not j.startswith("judge:")]
    geval = [j for j in judges if j.startswith("judge:")]
    systems = sorted(next(iter(runs.values())))
    entries = sorted({r.entry_id for per in runs.values() for s in per.values() for r in s.rows})
    figures: dict[str, Any] = {}
    unavailable: list[str] = []
    for group in (nli, geval):
        if not group:
            continue
        for figure in (f for f in _figures("judge" if group is geval else "nli") if f in runs[group[0]][systems[0]].values):
            if all(runs[j][s].values[figure] is None for j in group for s in systems):
                unavailable.append(figure)  # e.g. [NA] recall of answers given no absent set
                continue
            sums: dict[str, np.ndarray] = {}
            for j in group:
                for s in systems:
                    sums[f"num|{j}|{s}"], sums[f"den|{j}|{s}"] = _per_entry(runs[j][s].rows, figure, entries)
            estimates = {o: _tau_of(systems, group[0], o) for o in group[1:]}
            taus = bootstrap(sums, estimates, resamples=resamples, seed=seed, level=level) if estimates else {}
            per_judge = {
                j: {s: {"value": runs[j][s].values[figure], "low": runs[j][s].bounds[figure][0], "high": runs[j][s].bounds[figure][1]} for s in systems}
                for j in group
            }
            against = {}
            for other in group[1:]:
                x = [runs[group[0]][s].values[figure] for s in systems]
                y = [runs[other][s].values[figure] for s in systems]
                reversed_, tied = flips(systems, x, y)
                t = taus[other]
                flat = [j for j, v in ((group[0], x), (other, y)) if len({val for val in v if val is not None}) <= 1]
                against[other] = {
                    "kendall_tau": t.point,
                    "why_undefined": (f"{' and '.join(flat)} gave every system the same value: no order to compare" if flat else "") if t.point is None else "",
                    "low": t.low,
                    "high": t.high,
                    "undefined_resamples": t.undefined,
                    "flipped": reversed_,
                    "tie_broken": tied,
                }
            figures[figure] = {"judges": per_judge, "against_first": against}
    kappa: dict[str, Any] = {}
    for other in nli[1:]:
        base = {(s, *k): v for s in systems for k, v in decisions(runs[nli[0]][s].rows).items()}
        them = {(s, *k): v for s in systems for k, v in decisions(runs[other][s].rows).items()}
        both = sorted(set(base) & set(them))
        kappa[other] = {
            "cohen_kappa": cohen_kappa([base[k] for k in both], [them[k] for k in both]),
            "decisions": len(both),
            "agree": sum(base[k] == them[k] for k in both),
        }
    return {
        "systems": systems,
        "limited": {s: per[s].limit for per in runs.values() for s in systems if per[s].limit is not None},
        "judges": judges,
        "first_judge": {"nli": nli[0] if nli else None, "geval": geval[0] if geval else None},
        "figures": figures,
        "unavailable": unavailable,
        "agreement_on_sentences": kappa,
        "not_re_scored": "citation F1 and every figure no judge decides",
        "bootstrap": {"unit": "a dataset entry, every system's figure recomputed from the same draw", "resamples": resamples, "seed": seed, "level": level},
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def markdown(report: dict[str, Any], described: dict[str, str]) -> str:
    """The report as people read it, and as the leaderboard page shows it."""
    lines = ["## How much the figures depend on the judge", ""]
    lines += [f"- `{j}`: {described.get(j, j)}" for j in report["judges"]]
    lines += ["", "What ran:", "", *(ran_line(j, what) for j, what in report.get("ran", {}).items())]
    b = report["bootstrap"]
    lines += [f"- tau intervals: percentile bootstrap over dataset entries, {b['resamples']:,} resamples (seed {b['seed']}); citation F1 is not re-scored"]
    limited = report.get("limited", {})
    if limited:  # a board of limited submissions is compared on fewer entries: said before any figure
        lines.append(f"- filed with --limit, re-scored on their first entries only: {', '.join(f'{n} ({k} entries)' for n, k in limited.items())}")
    lines.append("")
    for figure, f in report["figures"].items():
        judges = list(f["judges"])
        lines += [f"### {figure}", "", "| system | " + " | ".join(f"`{j}`" for j in judges) + " |", "|---" * (len(judges) + 1) + "|"]
        for s in report["systems"]:
            cells = [f"{_pct(v['value'])} ({_pct(v['low'])} to {_pct(v['high'])})" for v in (f["judges"][j][s] for j in judges)]
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        for other, a in f["against_first"].items():
            flipped = "; ".join(f"{x} > {y}" for x, y in a["flipped"]) or "none"
            ties = f"; tie broken: {'; '.join(f'{x} / {y}' for x, y in a['tie_broken'])}" if a["tie_broken"] else ""
            why = f" (n/a: {a['why_undefined']})" if a.get("why_undefined") else ""
            undefined = f"; undefined in {a['undefined_resamples']:,} of {b['resamples']:,} resamples" if a.get("undefined_resamples") else ""
            lines += [
                "",
                f"`{judges[0]}` against `{other}`: Kendall's tau {_num(a['kendall_tau'])}{why} ({_num(a['low'])} to {_num(a['high'])}{undefined}); "
                f"order flipped: {flipped}{ties}",
            ]
        lines.append("")
    if report["unavailable"]:
        lines += [f"n/a for every system under every judge, not shown: {', '.join(report['unavailable'])}.", ""]
    for other, k in report["agreement_on_sentences"].items():
        first = report["first_judge"]["nli"]
        lines.append(
            f"Agreement of `{first}` and `{other}` on the board's {k['decisions']:,} per-sentence decisions: "
            f"{k['agree']:,} alike, Cohen's kappa {_num(k['cohen_kappa'])}."
        )
    return "\n".join(lines) + "\n"


def described(specs: Sequence[str]) -> dict[str, str]:
    """Each judge as every report names it (spec, and how it ran)."""
    from evaluation.alignment import entailment_label  # the rule-based stand-in labelled as such
    from kalma.models import LLMS, describe

    return {s: describe(s.split(" #")[0].removeprefix("judge:"), LLMS) if s.startswith("judge:") else entailment_label(s.split(" #")[0]) for s in specs}


def run(
    board: str | Path, out: str | Path, nli: Sequence[str], judges: Sequence[str], *, dataset: str | None = None, resamples: int = RESAMPLES, seed: int = 0
) -> str:
    """Re-score `board` under every judge into `out` (runs/, sensitivity.json, sensitivity.md),
    built in a staging folder and moved into place whole; the report's text."""
    out = Path(out)
    staging = out.with_name(f".{out.name}.staging")
    if staging.exists():
        shutil.rmtree(staging)
    try:
        runs = rescore(Path(board), staging / "runs", nli, judges, dataset, resamples)
    except BaseException:  # interrupted or failed: no half-made folder left in the board
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report = analyse(runs, resamples, seed)
    names = described(report["judges"])
    report["described"] = names
    report["ran"] = {label: next(iter(per.values())).ran for label, per in runs.items()}
    text = markdown(report, names)
    (staging / "sensitivity.json").write_text(dumps(report, indent=1) + "\n")
    (staging / "sensitivity.md").write_text(text)
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return text
