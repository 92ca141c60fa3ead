"""`kalma compare A B`: two evaluations of the same questions, figure by figure, with the test a
paper reports beside a difference.

For every figure both metrics computed alike: A's value, B's, A - B, a 95% paired bootstrap
interval of A - B (entries resampled jointly for both systems) and a two-sided paired
approximate-randomization p-value (each entry's answers swapped between A and B at random). An
entry is the unit of both: it goes with all of its answers, sentences and citations.

A and B are evaluation folders (`kalma evaluate -o DIR`) or their `scores.jsonl`. Two evaluations
of different questions, or of answers given different knowledge, are refused: a paired test
needs the same entries under the same conditions. Entries only one of them scored (a `--limit`
or partial run) are left out, and counted.

Two evaluations of localizations of one dataset (`kalma dataset localize`: the same entry ids and
minimum sets, the labels and questions in another language) are paired entry by entry, and the
comparison says that the languages differ: the paired test then measures the language alone. Their
datasets are read where the evaluations recorded them; each entry's minimum set must be the same
facts (subject, PID, value) on both sides, and the answers asked under the same settings.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import click
import numpy as np

from kalma.errors import KalmaError
from kalma.jsonl import dumps, read_header, read_jsonl
from kalma.schema import AnswerScores

from .base import EvalOptions, Metric, get_metric, show, show_signed
from .identity import differs
from .runner import MISSING, SCORES_FILE, SUMMARY_FILE, any_language, na_reasons, scored
from .uncertainty import LEVEL, METHOD, RESAMPLES, TEST, Difference, Table, paired, table


def unfinished(scores: Path, prov: dict[str, Any], rows: int) -> str | None:
    """How far an evaluation got, when it stopped before every answer was scored: read from the
    count its scores header says is to be scored, and from its summary's `finished` (a run
    stopped before its first row has a summary saying so and no rows)."""
    to_score = prov.get("to_score")
    summary = scores.with_name(SUMMARY_FILE)  # the summary of this scores file, in its evaluation folder
    try:
        finished = json.loads(summary.read_text(encoding="utf-8")).get("finished", True) if scores.name == SCORES_FILE and summary.is_file() else True
    except (OSError, ValueError, AttributeError):
        finished = True  # a damaged summary says nothing; the header's count still does
    if isinstance(to_score, int) and rows < to_score:
        return f"{rows} of {to_score} answers scored"
    return None if finished is not False else f"{rows} answers scored, its summary says it did not finish"


@dataclass
class Evaluation:
    """One side of a comparison: its scores and what made them."""

    path: Path
    rows: list[AnswerScores]
    config: dict[str, Any]
    answers: str  # the answers' model, as the evaluation named it
    knowledge: dict[str, str] | None  # per entry, a digest of the knowledge its answers were given
    unfinished: str | None = None  # how far its evaluation got, when it stopped before every answer was scored
    judges: dict[str, Any] | None = None  # each judge's identity (summary.json), None where it is not recorded

    @classmethod
    def read(cls, given: str | Path) -> Evaluation:
        path = Path(given)
        scores = path / SCORES_FILE if path.is_dir() else path
        if not scores.is_file():
            raise KalmaError(f"{given}: no {SCORES_FILE} here; give an evaluation folder (`kalma evaluate -o DIR`) or its {SCORES_FILE}")
        header = read_header(scores)
        if header.get("kind") != "scores":
            raise KalmaError(f"{scores}:1: not a scores file of `kalma evaluate` (its header says {header.get('kind')!r})")
        prov = _field(scores, header, "provenance", dict, {})
        config = _field(scores, prov, "config", dict, {}, "provenance.")
        metrics = _field(scores, config, "metrics", list, [], "provenance.config.")
        if not metrics or not all(isinstance(m, str) for m in metrics):
            raise KalmaError(f"{scores}:1: field 'provenance.config.metrics': {metrics!r} names no metric; the header does not say which made these scores")
        options = _field(scores, config, "options", dict, {}, "provenance.config.")
        if unknown := set(options) - {f.name for f in fields(EvalOptions)}:
            raise KalmaError(f"{scores}:1: field 'provenance.config.options': {', '.join(sorted(unknown))} is no option of kalma evaluate")
        _field(scores, config, "dataset_digest", str, None, "provenance.config.")
        knowledge = _field(scores, prov, "knowledge", dict, None, "provenance.")
        rows = list(read_jsonl(scores, AnswerScores, kind="scores"))
        summary = scores.parent / SUMMARY_FILE
        judges = _judges(summary, summary.read_text(encoding="utf-8") if summary.is_file() else "")
        return cls(scores, rows, config, ", ".join(map(str, prov.get("answer_models", []))) or "?", knowledge, unfinished(scores, prov, len(rows)), judges)

    def metrics(self) -> dict[str, tuple[str, Metric]]:
        """Each metric by name, with the spec and options it ran under."""
        options = EvalOptions(**self.config.get("options", {}))
        out = {}
        for spec in self.config["metrics"]:
            m = get_metric(spec, options)
            out[m.name] = (spec, m)
        return out

    def options(self, m: Metric) -> dict[str, Any]:
        """The options `m`'s figures depend on: the models it needs, the entailment threshold with
        one, the formulas (--compat). The evaluation's own seed (CONNER's negatives, G-Eval's
        samples) is not among them: two draws of it are still one metric."""
        used = {"compat", *m.needs} | ({"threshold"} if "nli" in m.needs else set())
        return {k: any_language(v) if k == "nli" else v for k, v in self.config.get("options", {}).items() if k in used}


def _judges(path: Path, text: str) -> dict[str, Any] | None:
    """The judges' identities a summary.json records (None: no summary, or one made before they were)."""
    if not text:
        return None
    try:
        found = json.loads(text).get("judges")
    except (json.JSONDecodeError, AttributeError):
        raise KalmaError(f"{path}: not the JSON summary of `kalma evaluate`") from None
    return found if isinstance(found, dict) and found else None


def _same_judges(a: Evaluation, b: Evaluation, m: Metric) -> str | None:
    """Why `m`'s figures are not compared: its judges differ beyond the spec (weights, threshold,
    direction, dtype), naming what differs; None when they are one judge, or not recorded."""
    for role in (r for r in ("nli", "judge") if r in m.needs):
        ja, jb = ({**j, "spec": any_language(str(j.get("spec")))} if (j := e.judges.get(role) if e.judges else None) else None for e in (a, b))
        if ja is not None and jb is not None and (diff := differs(ja, jb)):
            return f"{m.name}: not compared, its judges differ ({'; '.join(diff)})"
    return None


def _field(path: Path, obj: dict[str, Any], name: str, kind: type, default: Any, where: str = "") -> Any:
    """A header field of the expected JSON type, or one line naming it."""
    value = obj.get(name, default)
    if value is not default and not isinstance(value, kind):
        raise KalmaError(f"{path}:1: field '{where}{name}': {type(value).__name__} where {'an object' if kind is dict else kind.__name__} was expected")
    return value


@dataclass
class Comparison:
    figures: dict[str, Difference]
    scales: dict[str, str]
    entries: int
    notes: list[str]
    why: dict[str, str]  # per figure with no value on a side: which side, and why (as summary.md says it)


def _older(e: Evaluation, what: str) -> str:
    return f"{e.path} does not record the {what} (scored by an older version): the entries are paired by id alone"


def _refuse_others(a: Evaluation, b: Evaluation, entries: list[str]) -> list[str]:
    """Refuse two evaluations of other questions, or whose answers to one entry were given other
    knowledge (pool, none, some removed, retrieved); notes where either does not record it."""
    notes = []
    x, y = a.config.get("dataset_digest"), b.config.get("dataset_digest")
    if x is None or y is None:
        notes.append(_older(a if x is None else b, "dataset it was scored on"))
    elif x != y:
        if (parallel := _localizations(a, b, entries)) is None:
            unread = [p for e in (a, b) if not Path(p := str(e.config.get("dataset", ""))).is_file()]
            why = f" (whether they are localizations of one dataset is read from them: {', '.join(unread)} cannot be read from here)" if unread else ""
            raise KalmaError(
                f"{a.path} and {b.path} were scored on different datasets ({x[:19]}… and {y[:19]}…){why}; a paired comparison needs the same questions"
            )
        # the knowledge given differs by its labels: the datasets' facts were checked instead
        return [*notes, parallel]
    if a.knowledge is None or b.knowledge is None:
        notes += [_older(e, "knowledge its answers were given") for e in (a, b) if e.knowledge is None]
    elif differ := [e for e in entries if MISSING not in (x := a.knowledge.get(e), y := b.knowledge.get(e)) and x != y]:
        raise KalmaError(
            f"{a.path} and {b.path} answered {len(differ)} of {len(entries)} entries (first {differ[0]}) given different knowledge "
            "(the entry's pool, none, some removed, or retrieved) or another of its questions (general, specific): "
            "a paired comparison needs the same setting"
        )
    return notes


def _localizations(a: Evaluation, b: Evaluation, entries: list[str]) -> str | None:
    """The note that A and B scored localizations of one dataset in two languages, when their
    datasets (as the evaluations recorded them) are: one localized from the other, or both from a
    third. Refused when an entry's minimum set differs, or the answers were asked otherwise."""
    from kalma.languages import file_language
    from kalma.resume import path_digest
    from kalma.schema import DatasetEntry

    paths = [Path(str(e.config.get("dataset", ""))) for e in (a, b)]
    if not all(p.is_file() for p in paths):
        return None
    made = [read_header(p, "dataset").get("provenance") or {} for p in paths]
    origin = [(m.get("source_dataset") or {}).get("digest") or path_digest(p) for m, p in zip(made, paths)]
    if origin[0] != origin[1]:
        return None
    facts = [{e.id: sorted((t.subject, t.relation, t.value) for t in e.minimum_set or ()) for e in read_jsonl(p, DatasetEntry, kind="dataset")} for p in paths]
    if differ := [e for e in entries if facts[0].get(e) != facts[1].get(e)]:
        raise KalmaError(
            f"{paths[0]} and {paths[1]}: entry {differ[0]} has another minimum set on each side ({len(differ)} differ): not localizations of one dataset"
        )
    if a.config.get("settings") != b.config.get("settings"):
        raise KalmaError(
            f"{a.path} and {b.path} answered other questions ({a.config.get('settings')}, {b.config.get('settings')}): a paired test needs the same setting"
        )
    la, lb = (file_language(m) for m in made)
    return (
        f"the languages differ: A is in {la}, B in {lb}, localizations of one dataset ({origin[0][:19]}…) with the same minimum set entry by entry, "
        "so the paired test measures the language alone (each side's knowledge is that set in its language's labels)"
        if la != lb
        else f"A and B are both in {la}: two localizations of one dataset ({origin[0][:19]}…) with the same minimum set entry by entry"
    )


def _unanswered(e: Evaluation, entries: list[str]) -> set[str]:
    """The entries `e` has no answer to, which its evaluation scored as empty answers."""
    answered = {r.entry_id for r in e.rows if "missing" not in r.notes}
    return set(entries) - answered


def _per_entry(t: Table, rows: list[AnswerScores], entries: list[str]) -> dict[Any, np.ndarray]:
    """`t`'s column sums for `entries`, in that order, each divided by the entry's number of
    answers: an entry that A answered three times (seeds) and B once swaps as one entry."""
    count = Counter(r.entry_id for r in rows)
    index = {u: i for i, u in enumerate(t.units)}
    rows_of = [index[e] for e in entries]
    per = np.array([count[e] for e in entries], dtype=float)[:, None]
    sums = t.sums[rows_of] / per
    return {k: sums[:, i] for i, k in enumerate(t.keys)}


def compare(a: Evaluation, b: Evaluation, *, resamples: int = RESAMPLES, seed: int = 0, only: set[str] | None = None) -> Comparison:
    """A against B on every figure both computed alike (`only`: these qualified figures alone)."""
    ea, eb = {r.entry_id for r in a.rows}, {r.entry_id for r in b.rows}
    both = sorted(ea & eb)
    notes = _refuse_others(a, b, both)
    if a.path.resolve() == b.path.resolve():
        notes.append(f"A and B are the same file, {a.path}: every difference is 0")
    notes += [
        f"{side}'s evaluation is UNFINISHED ({e.unfinished}): rerun its kalma evaluate to score the rest" for side, e in (("A", a), ("B", b)) if e.unfinished
    ]
    if not both:
        raise KalmaError(f"{a.path} and {b.path} scored no entry in common; nothing to compare")
    if ea != eb:
        notes.append(f"{len(ea - eb)} entries only A scored and {len(eb - ea)} only B scored are left out: compared over the {len(both)} entries both scored")
    for (side, e), (name, other) in ((("A", a), ("B", b)), (("B", b), ("A", a))):
        if lacking := _unanswered(e, both) - _unanswered(other, both):
            said = f"{side}'s scored as empty answers, as kalma evaluate scores a missing answer"
            notes.append(f"{len(lacking)} entries only {name} answered: {said}")
    ma, mb = a.metrics(), b.metrics()
    shared = []
    for name, (spec, m) in ma.items():
        if name not in mb:
            notes.append(f"{name}: only A has it")
        elif mb[name][0] != spec or a.options(m) != b.options(m):
            notes.append(f"{name}: not compared, it ran under other settings ({spec} {a.options(m)} against {mb[name][0]} {b.options(mb[name][1])})")
        elif why := _same_judges(a, b, m):
            notes.append(why)
        elif (a.judges is None) != (b.judges is None) and set(m.needs) & {"nli", "judge"}:
            notes.append(f"{name}: not compared, {(a if a.judges is None else b).path} does not record its judges (scored by an older version)")
        else:
            shared.append(m)
    notes += [f"{name}: only B has it" for name in mb if name not in ma]
    if not shared:
        raise KalmaError(f"{a.path} and {b.path} share no metric computed alike; nothing to compare")
    ta, tb = table(a.rows, shared), table(b.rows, shared)
    estimates = {k: f for k, f in ta.estimates.items() if only is None or k in only}
    found = paired(_per_entry(ta, a.rows, both), _per_entry(tb, b.rows, both), estimates, resamples=resamples, seed=seed)
    scales = {f"{m.name}.{k}": m.scale(k) for m in shared for k in m.figures() if f"{m.name}.{k}" in estimates}
    return Comparison(found, scales, len(both), notes, _why_na(found, shared, {"A": a, "B": b}, set(both)))


def _why_na(found: dict[str, Difference], shared: list[Metric], sides: dict[str, Evaluation], both: set[str]) -> dict[str, str]:
    """Each figure with no value on a side: the side and the reason, over the entries compared."""
    reasons: dict[str, dict[str, str]] = {}
    for m in shared:
        for side, e in sides.items():
            rows = [r for r in e.rows if r.entry_id in both]
            lacking = [k for k in m.figures() if (d := found.get(f"{m.name}.{k}")) is not None and (d.a if side == "A" else d.b) is None]
            for k, why in na_reasons(m, rows, scored(m, rows), lacking).items():
                reasons.setdefault(f"{m.name}.{k}", {})[side] = why
    return {
        k: f"n/a in A and B: {by['A']}" if by.get("A") == by.get("B") else "; ".join(f"n/a in {s}: {w}" for s, w in by.items()) for k, by in reasons.items()
    }


def show_p(p: float | None, resamples: int) -> str:
    """A p-value as every report prints it: at its floor, 1 / (resamples + 1), as a bound."""
    if p is None:
        return "–"
    return f"≤ {1 / (resamples + 1):.2g}" if p <= 1 / (resamples + 1) else f"{p:.3g}"


def render(c: Comparison, a: Evaluation, b: Evaluation, resamples: int, seed: int) -> str:
    level = f"{100 * LEVEL:g}%"
    lines = [f"A: {a.path} ({a.answers})", f"B: {b.path} ({b.answers})", ""]
    lines += [f"- {n}" for n in c.notes] + ([""] if c.notes else [])
    lines += [f"| figure | A | B | A - B | {level} interval of A - B | p |", "|---|---|---|---|---|---|"]
    for k, d in c.figures.items():
        scale = c.scales[k]
        ci = f"[{show_signed(d.low, scale)}, {show_signed(d.high, scale)}]" if d.low is not None and d.high is not None else "–"
        if d.undefined and d.low is not None:
            ci += f" ({d.undefined:,} of {d.resamples:,} resamples without a value)"
        lines.append(f"| {k} | {show(d.a, scale)} | {show(d.b, scale)} | {show_signed(d.diff, scale)} | {ci} | {show_p(d.p, resamples)} |")
    said = [f"- {k}: {why}" for k, why in c.why.items()] + _few(c)
    lines += [""] + said if said else []
    lines += [
        "",
        f"Over {c.entries:,} entries. Interval: paired {METHOD} over entries (each entry resampled for A and B at once), "
        f"{resamples:,} resamples, seed {seed}. p: {TEST} (each entry's answers swapped between A and B with probability 1/2), "
        f"{resamples:,} permutations; not corrected for the number of figures. Rates are shown x100. "
        "Both cover the sampling of the questions, not the judge's own error.",
    ]
    return "\n".join(lines)


FEW_ENTRIES = 30  # below this many entries, a percentile bootstrap's interval is too narrow to trust


def _few(c: Comparison) -> list[str]:
    """What so few entries allow: the smallest p the test can reach for the entries that differ
    (figures grouped), and whether the bootstrap interval can be trusted at all."""
    out = []
    by_k: dict[int, list[str]] = {}
    for k, d in c.figures.items():
        if d.p is not None and d.differing and (d.smallest_p() or 0) > 0.05:  # 0 differing: alike on every entry, p = 1
            by_k.setdefault(d.differing, []).append(k)
    for n, figures in sorted(by_k.items()):
        smallest = min(1.0, 2 / 2**n)
        out.append(
            f"- {', '.join(figures)}: A and B differ on {n} of {c.entries} entries; swapping those {n} gives {2**n} outcomes in mirrored pairs, "
            f"so the smallest two-sided p the test can reach is {smallest:.3g}: no difference here can reach p < 0.05, however large."
        )
    if c.entries < FEW_ENTRIES:
        out.append(
            f"- Over only {c.entries} entries the bootstrap interval is unreliable: it resamples {c.entries} values and comes out too narrow "
            "(it may exclude 0 where the test's p does not reach 0.05); read it as descriptive and the p as the test."
        )
    return out


def as_json(c: Comparison) -> dict[str, Any]:
    """For each figure: a, b, diff, ci (low, high), p, and how they were drawn."""
    return {
        k: {
            "a": d.a,
            "b": d.b,
            "diff": d.diff,
            "ci": [d.low, d.high],
            "p": d.p,
            "entries": c.entries,
            "resamples": d.resamples,
            "undefined_resamples": d.undefined,
            "seed": d.seed,
            "level": d.level,
            "interval": f"paired {METHOD} over entries",
            "test": TEST,
            "scale": c.scales[k],
            "differing_entries": d.differing,
            "smallest_p": d.smallest_p(),
            **({"why_na": c.why[k]} if k in c.why else {}),
        }
        for k, d in c.figures.items()
    }


@click.command("compare")
@click.argument("a", type=click.Path(exists=True))
@click.argument("b", type=click.Path(exists=True))
@click.option("--resamples", type=click.IntRange(min=1), default=RESAMPLES, show_default=True, help="Bootstrap resamples, and permutations of the test.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the resamples and permutations.")
@click.option("--json", "as_json_", is_flag=True, help="Print JSON: for each figure, a, b, diff, ci and p (and how they were drawn).")
def compare_cmd(a: str, b: str, resamples: int, seed: int, as_json_: bool) -> None:
    """Compare two evaluations of the same dataset, figure by figure: A - B, its paired bootstrap
    interval and a paired approximate-randomization p-value."""
    ea, eb = Evaluation.read(a), Evaluation.read(b)
    c = compare(ea, eb, resamples=resamples, seed=seed)
    if as_json_:
        for n in c.notes:
            click.echo(f"note: {n}", err=True)
        click.echo(dumps(as_json(c), indent=1))
    else:
        click.echo(render(c, ea, eb, resamples, seed))


__all__ = ["compare", "Evaluation", "Comparison", "as_json", "render"]
