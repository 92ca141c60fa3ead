"""How good a judge is: an entailment backend measured on labelled (premise, hypothesis, label)
pairs, as LLM-AggreFact measures grounding checkers (`kalma judge evaluate`).

Card
- Measures: balanced accuracy (the mean of the recall of supported and of unsupported pairs) per
  dataset, and overall as LLM-AggreFact reports it: the mean over datasets; with the confusion
  matrix, each figure's bootstrap interval, and accuracy per kind of pair where the file says.
- Decision: supported when P(entailment) >= the threshold, as `kalma evaluate` counts it. The
  threshold is fixed (0.5 by default), or `tune`d per dataset on its development rows (`split`
  `dev`, or `--dev FILE`) as LLM-AggreFact does: the first of 0.01, 0.02, ..., 0.99 with the best
  development balanced accuracy; the report is then over the other rows only.
- Intervals: the evaluator's percentile bootstrap (`evaluation.uncertainty`, one implementation),
  resampling units within each dataset: the pairs that share a premise are drawn together (a
  sentence judged against several triples is one unit), and generated pairs by their entry. A tuned threshold stays as tuned.
- Input: JSON Lines, CSV or Parquet in LLM-AggreFact's row layout (`doc`/`document`, `claim`,
  `label`, `dataset`, optional `split`), or `premise`/`hypothesis` (what `kalma human score`
  writes as majority.jsonl, labels `entailment`/`not_entailment`). A label is 0 or 1 (also
  true/false, entailment/not_entailment); anything else, or a missing or null field, is one error
  naming the file, the line and the field. Rows without `dataset` are one dataset in every file.
- A judge that abstains (`table:…,unjudged=skip`): its unjudged pairs are left out and counted.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kalma.errors import KalmaError

from .base import UNUSABLE_LIMIT
from .uncertainty import LEVEL, METHOD, RESAMPLES, Interval, bootstrap, paired

BUNDLED = Path(__file__).parent / "data" / "judge_pairs.jsonl"
DOCUMENT = ("premise", "document", "doc")  # the side a checker reads as its document, by the names files use
CLAIM = ("hypothesis", "claim")
_YES = {"1", "true", "entailment", "entailed", "supported", "yes"}
_NO = {"0", "false", "not_entailment", "not entailment", "unsupported", "no"}
GRID = [i / 100 for i in range(1, 100)]  # LLM-AggreFact's thresholds


class PairsError(KalmaError, ValueError):
    """A labelled-pairs file that cannot be read as such."""


@dataclass(frozen=True)
class Pair:
    premise: str  # the checker's document by default (KaLMA: the sentence)
    hypothesis: str  # its claim (KaLMA: the cited triple)
    label: int  # 1: the premise supports the hypothesis
    dataset: str
    split: str = ""  # "dev" rows choose a tuned threshold and are not scored
    kind: str = ""
    where: str = ""  # file:line
    entry: str = ""  # the dataset entry a generated pair comes from (`kalma judge pairs`): its pairs are drawn together


NO_DATASET = "(no dataset field)"  # rows without one, in every file alike: a --dev file's match its --pairs'


def read_pairs(path: str | Path) -> list[Pair]:
    """Every labelled pair of `path` (.jsonl/.json, .csv or .parquet, by its suffix); the first bad
    row is the error, with how many more there are."""
    pairs, errors = scan_pairs(path)
    if errors:
        more = f" (and {len(errors) - 1} more bad row{'s' if len(errors) > 2 else ''}: --all-errors lists them)" if len(errors) > 1 else ""
        raise PairsError(errors[0] + more)
    return pairs


def scan_pairs(path: str | Path) -> tuple[list[Pair], list[str]]:
    """`path`'s good pairs and one error per bad row (file:line: field ...). A file that cannot be
    read as pairs at all (not there, not UTF-8, another format) is a PairsError."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            rows = _parquet(path)
        else:
            text = _text(path, path.read_bytes())
            rows = _csv(text) if suffix in {".csv", ".tsv"} else _jsonl(path, text)
    except OSError as exc:
        raise PairsError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    pairs, errors = [], []
    for line, row in rows:
        try:
            pairs.append(_pair(path, line, row))
        except PairsError as exc:
            errors.append(str(exc))
    if not pairs and not errors:
        raise PairsError(f"{path}: no labelled pairs in it")
    return pairs, errors


def check_file(path: str | Path) -> tuple[int, list[str]]:
    """`kalma check FILE --kind pairs`: how many rows are good pairs, and each bad row's error."""
    pairs, errors = scan_pairs(path)
    return len(pairs), errors


def _text(path: Path, data: bytes) -> str:
    """The file as text: UTF-8 (a spreadsheet's byte-order mark dropped), else one error saying what it is."""
    if data.startswith(b"PAR1"):
        raise PairsError(f"{path}: a Parquet file, not {path.suffix or 'text'}: name it .parquet")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PairsError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}): save it as UTF-8 (a spreadsheet: 'CSV UTF-8'; iconv -f latin1 -t utf-8)"
        ) from None


def _jsonl(path: Path, text: str) -> list[tuple[int, Any]]:
    rows: list[tuple[int, Any]] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                rows.append((line, PairsError(f"{path}:{line}: not JSON ({exc.msg})")))
                continue
            if not (line == 1 and isinstance(row, dict) and set(row) == {"kalma"}):  # a header line (`kalma judge pairs`) says how the file was made
                rows.append((line, row))
    return rows


def _csv(text: str) -> list[tuple[int, Any]]:
    dialect = csv.Sniffer().sniff(text[:4096], delimiters=",\t;") if text.strip() else csv.excel
    reader = csv.DictReader(io.StringIO(text), dialect=dialect)
    return [(reader.line_num, row) for row in reader]


def _parquet(path: Path) -> list[tuple[int, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return list(enumerate(pq.read_table(path).to_pylist(), start=1))
    except pa.ArrowException as exc:
        raise PairsError(f"{path}: not a Parquet file ({str(exc)[:120]}): give JSON Lines or CSV a .jsonl or .csv name") from None


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _field(path: Path, line: int, row: dict[str, Any], names: Sequence[str], required: bool = True) -> str:
    for name in names:
        value = row.get(name)
        if not _absent(value):
            if not isinstance(value, str):
                raise PairsError(f"{path}:{line}: field '{name}': text is required, got {value!r}")
            return value
    if required:
        null = next((n for n in names if n in row), None)  # the name this file uses, given as null
        if null is not None:
            raise PairsError(f"{path}:{line}: field '{null}' is null: text is required")
        raise PairsError(f"{path}:{line}: field '{names[0]}' is missing" + (f" (or {' / '.join(repr(n) for n in names[1:])})" if names[1:] else ""))
    return ""


def _pair(path: Path, line: int, row: Any) -> Pair:
    if isinstance(row, PairsError):
        raise row
    if not isinstance(row, dict):
        raise PairsError(f"{path}:{line}: expected an object with premise, hypothesis and label")
    premise, hypothesis = _field(path, line, row, DOCUMENT), _field(path, line, row, CLAIM)
    if "label" not in row or row["label"] in (None, ""):
        raise PairsError(f"{path}:{line}: field 'label' is " + ("null" if "label" in row and row["label"] is None else "missing"))
    raw = row["label"]
    text = str(raw).strip().lower() if not isinstance(raw, float) or not raw.is_integer() else str(int(raw))
    if text not in _YES | _NO:
        raise PairsError(f"{path}:{line}: field 'label': 0 or 1 (or entailment/not_entailment), got {raw!r}")
    split = _field(path, line, row, ("split",), required=False).strip().lower()
    dataset = _field(path, line, row, ("dataset",), required=False) or NO_DATASET
    kind, entry = _field(path, line, row, ("kind",), required=False), _field(path, line, row, ("entry_id",), required=False)
    return Pair(premise, hypothesis, int(text in _YES), dataset, split, kind, f"{path}:{line}", entry)


# ---------------------------------------------------------------- the measurement


def balanced_accuracy(labels: Sequence[int], predicted: Sequence[int]) -> float | None:
    """The mean of the two classes' recalls; None unless both classes occur.

    >>> balanced_accuracy([1, 1, 1, 0], [1, 1, 0, 0])
    0.8333333333333333
    """
    pos = sum(labels)
    neg = len(labels) - pos
    if not pos or not neg:
        return None
    tp = sum(1 for y, p in zip(labels, predicted) if y and p)
    tn = sum(1 for y, p in zip(labels, predicted) if not y and not p)
    return 0.5 * (tp / pos + tn / neg)


def tune(labels: Sequence[int], probs: Sequence[float]) -> tuple[float, float | None]:
    """LLM-AggreFact's threshold: the first of 0.01 ... 0.99 with the best balanced accuracy on
    these (development) pairs, and that accuracy.

    >>> tune([1, 1, 0, 0], [0.9, 0.6, 0.4, 0.1])
    (0.41, 1.0)
    """
    best, best_ba = 0.5, -1.0
    for t in GRID:
        ba = balanced_accuracy(labels, [int(p >= t) for p in probs])
        if ba is not None and ba > best_ba:
            best, best_ba = t, ba
    return best, (best_ba if best_ba >= 0 else None)


@dataclass
class Judged:
    """One judge's verdicts on the scored pairs, and what it ran as."""

    spec: str
    described: str
    approximate: bool
    probs: list[float]  # every pair of the file, dev included
    thresholds: dict[str, float]  # per dataset
    tuned_on: dict[str, tuple[int, float | None]] = field(default_factory=dict)  # dataset -> (dev pairs, dev balanced accuracy)
    inputs: list[tuple[int, bool, bool]] | None = None  # per pair: (chunks, cut, split), for a chunking checker
    by_word: tuple[int, int] = (0, 0)  # (replies read by their word: no log-probabilities given, of those unreadable)

    def judged(self, i: int) -> bool:
        """Whether pair `i` has a judgement (`table:…,unjudged=skip` gives none to a pair it lacks)."""
        return not math.isnan(self.probs[i])


def judge(spec: str, pairs: Sequence[Pair], threshold: float | None) -> Judged:
    """`spec`'s P(entailment) for every pair, and the threshold of each dataset: `threshold`, or
    (None) tuned on that dataset's development pairs."""
    from kalma.models import ENTAILMENT, describe, get_entailment
    from kalma.models.table import MissingJudgement

    ent = get_entailment(spec)
    texts = [(p.premise, p.hypothesis) for p in pairs]
    before = (getattr(ent, "asked", 0), getattr(ent, "unreadable", 0))
    try:
        probs = ent.probs(texts)
    except MissingJudgement as exc:
        raise PairsError(f"{exc.missing}; to measure the judge on the pairs its table holds, give `--nli {spec},unjudged=skip`") from None
    described = describe(spec, ENTAILMENT)
    if ent.approximate:
        described += " (rule-based approximation, not an NLI model)"
    out = Judged(spec, described, ent.approximate, probs, {}, by_word=(getattr(ent, "asked", 0) - before[0], getattr(ent, "unreadable", 0) - before[1]))
    if pairs and out.by_word[1] / len(pairs) > UNUSABLE_LIMIT:  # its figures would be its default "no", not its judgement
        seen = "; ".join(repr(e) for e in list(dict.fromkeys(getattr(ent, "examples", [])))[:2])
        raise KalmaError(
            f"--nli {spec}: {out.by_word[1]} of its {len(pairs)} replies were neither yes nor no (e.g. {seen}), more than {UNUSABLE_LIMIT:.0%}: "
            "it cannot judge these pairs, so it is not measured (a model that follows the yes/no question is)"
        )
    inputs = getattr(ent, "inputs", None)
    if callable(inputs):
        per: dict[int, list[Any]] = {}
        for x in inputs(texts):
            per.setdefault(x.pair, []).append(x)
        out.inputs = [(len(per[i]), any(x.cut for x in per[i]), any(x.split for x in per[i])) for i in range(len(pairs))]
    for name in dict.fromkeys(p.dataset for p in pairs):
        if threshold is not None:
            out.thresholds[name] = threshold
            continue
        dev = [i for i, p in enumerate(pairs) if p.dataset == name and p.split == "dev" and out.judged(i)]
        if not dev:
            raise PairsError(f"--threshold tune: dataset {name!r} has no development pairs (split 'dev', or --dev FILE)")
        t, ba = tune([pairs[i].label for i in dev], [probs[i] for i in dev])
        out.thresholds[name], out.tuned_on[name] = t, (len(dev), ba)
    return out


def _columns(pairs: Sequence[Pair], scored: Sequence[int], verdicts: Sequence[int], datasets: Sequence[str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """Per unit (a dataset's document, or a generated pair's entry: its pairs drawn together), each
    dataset's tp, pos, tn, neg, and each kind's right verdicts and pairs (ok@KIND, n@KIND)."""
    key = {i: (pairs[i].dataset, pairs[i].entry or pairs[i].premise) for i in scored}
    units = sorted(set(key.values()))
    index = {u: k for k, u in enumerate(units)}
    sums = {f"{c}:{d}": np.zeros(len(units)) for d in datasets for c in ("tp", "pos", "tn", "neg")}
    sums |= {f"{c}@{kind}": np.zeros(len(units)) for kind in {pairs[i].kind for i in scored if pairs[i].kind} for c in ("ok", "n")}
    for i, v in zip(scored, verdicts):
        p, k = pairs[i], index[key[i]]
        if p.kind:
            sums[f"n@{p.kind}"][k] += 1
            sums[f"ok@{p.kind}"][k] += v == p.label
        sums[f"pos:{p.dataset}" if p.label else f"neg:{p.dataset}"][k] += 1
        if v == p.label:
            sums[f"tp:{p.dataset}" if p.label else f"tn:{p.dataset}"][k] += 1
    return [f"{d} | {t}" for d, t in units], sums


def _estimates(datasets: Sequence[str]) -> dict[str, Any]:
    def one(d: str) -> Any:
        return lambda s: 0.5 * (s[f"tp:{d}"] / s[f"pos:{d}"] + s[f"tn:{d}"] / s[f"neg:{d}"])

    per = {d: one(d) for d in datasets}
    return {**per, "overall": lambda s: sum(f(s) for f in per.values()) / len(per)}


@dataclass
class Report:
    pairs_file: str
    judged: Judged
    scored: list[int]  # the pairs reported on (development pairs left out)
    verdicts: list[int]
    intervals: dict[str, Interval]
    confusion: dict[str, dict[str, int]]
    kinds: dict[str, tuple[int, int]]  # kind -> (correct, pairs)
    resamples: int
    seed: int
    level: float
    unjudged: int = 0  # pairs left out: the judge gave them no judgement
    kind_intervals: dict[str, Interval] = field(default_factory=dict)  # each kind's accuracy, over the same resamples

    def weakest(self) -> list[str]:
        """The kinds the judge fails: those whose accuracy's whole interval lies below its overall
        balanced accuracy, worst first."""
        overall = self.intervals["overall"].point
        low = [k for k, iv in self.kind_intervals.items() if overall is not None and iv.high is not None and iv.high < overall]
        return sorted(low, key=lambda k: self.kind_intervals[k].point or 0.0)

    def as_dict(self) -> dict[str, Any]:
        j = self.judged
        chunks = None
        if j.inputs is not None:
            mine = [j.inputs[i] for i in self.scored]
            chunks = {"chunked": sum(n > 1 for n, _, _ in mine), "cut": sum(c for _, c, _ in mine), "split_sentences": sum(s for _, _, s in mine)}
        return {
            "judge": j.described,
            "spec": j.spec,
            "approximate": j.approximate,
            "pairs_file": self.pairs_file,
            "pairs": len(self.scored),
            "unjudged_pairs": self.unjudged,
            "replies_read_by_word": {"replies": j.by_word[0], "unreadable_counted_as_no": j.by_word[1]},
            "decision": "supported when P(entailment) >= threshold",
            "thresholds": j.thresholds,
            "tuned_on_dev": {d: {"pairs": n, "balanced_accuracy": ba} for d, (n, ba) in j.tuned_on.items()},
            "balanced_accuracy": {k: asdict(v) for k, v in self.intervals.items()},
            "confusion": self.confusion,
            "accuracy_by_kind": {k: {"correct": c, "pairs": n, "accuracy": asdict(self.kind_intervals[k])} for k, (c, n) in self.kinds.items()},
            "weakest_kinds": self.weakest(),
            "inputs": chunks,
            "bootstrap": {
                "method": METHOD,
                "unit": "a document (premise) within its dataset, with all its pairs; a generated pair's entry (entry_id) where it names one",
                "resamples": self.resamples,
                "seed": self.seed,
                "level": self.level,
            },
        }


def measure(
    spec: str, pairs: Sequence[Pair], threshold: float | None = 0.5, *, pairs_file: str = "", resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL
) -> Report:
    """One judge on `pairs`: balanced accuracy per dataset and overall, with intervals."""
    judged = judge(spec, pairs, threshold)
    test = [i for i, p in enumerate(pairs) if p.split != "dev"]
    if not test:
        raise PairsError(f"{pairs_file or 'the pairs'}: every pair is a development pair: nothing is left to score")
    scored = [i for i in test if judged.judged(i)]
    if not scored:
        raise PairsError(f"{spec}: judges none of the {len(test)} pairs of {pairs_file or 'the pairs'}: nothing is left to score")
    verdicts = [int(judged.probs[i] >= judged.thresholds[pairs[i].dataset]) for i in scored]
    datasets = list(dict.fromkeys(pairs[i].dataset for i in scored))
    _, sums = _columns(pairs, scored, verdicts, datasets)
    kinds_seen = sorted({pairs[i].kind for i in scored if pairs[i].kind})
    per_kind = {f"kind@{k}": (lambda s, k=k: s[f"ok@{k}"] / s[f"n@{k}"]) for k in kinds_seen}
    found = bootstrap(sums, _estimates(datasets) | per_kind, resamples=resamples, seed=seed, level=level)  # one draw of units for every figure
    intervals = {k: v for k, v in found.items() if k not in per_kind}
    confusion: dict[str, dict[str, int]] = {}
    for name in [*datasets, "all"]:
        mine = [(pairs[i].label, v) for i, v in zip(scored, verdicts) if name in ("all", pairs[i].dataset)]
        confusion[name] = {
            "true_positive": sum(1 for y, v in mine if y and v),
            "false_negative": sum(1 for y, v in mine if y and not v),
            "false_positive": sum(1 for y, v in mine if not y and v),
            "true_negative": sum(1 for y, v in mine if not y and not v),
        }
    kinds: dict[str, tuple[int, int]] = {}
    for i, v in zip(scored, verdicts):
        if pairs[i].kind:
            c, n = kinds.get(pairs[i].kind, (0, 0))
            kinds[pairs[i].kind] = (c + int(v == pairs[i].label), n + 1)
    by_kind = {k: found[f"kind@{k}"] for k in kinds_seen}
    unjudged = len(test) - len(scored)
    return Report(pairs_file, judged, scored, verdicts, intervals, confusion, kinds, resamples, seed, level, unjudged=unjudged, kind_intervals=by_kind)


def compare(a: Report, b: Report, pairs: Sequence[Pair]) -> dict[str, Any]:
    """Two judges on the same pairs: the paired difference (A - B) of each balanced accuracy, its
    bootstrap interval over the same documents, and an approximate-randomization p-value."""
    both = sorted(set(a.scored) & set(b.scored))  # a pair either judge left unjudged is in neither side
    va, vb = dict(zip(a.scored, a.verdicts)), dict(zip(b.scored, b.verdicts))
    datasets = list(dict.fromkeys(pairs[i].dataset for i in both))
    _, sa = _columns(pairs, both, [va[i] for i in both], datasets)
    _, sb = _columns(pairs, both, [vb[i] for i in both], datasets)
    found = paired(sa, sb, _estimates(datasets), resamples=a.resamples, seed=a.seed, level=a.level)
    return {k: asdict(v) for k, v in found.items()}


def scores_rows(report: Report, pairs: Sequence[Pair]) -> list[dict[str, Any]]:
    """Every scored pair with the judge's probability and verdict (development pairs marked)."""
    j = report.judged
    verdict = dict(zip(report.scored, report.verdicts))
    out = []
    for i, p in enumerate(pairs):
        row: dict[str, Any] = {"where": p.where, "dataset": p.dataset, "premise": p.premise, "hypothesis": p.hypothesis, "label": p.label}
        row |= {"kind": p.kind} if p.kind else {}
        row |= {"split": p.split} if p.split else {}
        row |= {"probability": j.probs[i] if j.judged(i) else None, "threshold": j.thresholds[p.dataset]}
        if i in verdict:
            row |= {"predicted": verdict[i], "correct": verdict[i] == p.label}
        if j.inputs is not None:
            row |= {"chunks": j.inputs[i][0], "cut": j.inputs[i][1]}
        out.append(row)
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _span(iv: Interval) -> str:
    return "n/a" if iv.low is None or iv.high is None else f"{_pct(iv.low)} to {_pct(iv.high)}"


def markdown(report: Report, difference: dict[str, Any] | None = None, other: str = "") -> str:
    """The report as people read it: the judge, its threshold, and every figure."""
    d = report.as_dict()
    j = report.judged
    lines = [f"## {j.spec}", "", f"- judge: {j.described}"]
    if j.approximate:
        lines.append("- this judge is a rule-based APPROXIMATION of an entailment model, measured here so that its error is known")
    if j.tuned_on:
        tuned = ", ".join(
            f"{k} {v:.2f} (tuned on {j.tuned_on[k][0]} dev pairs, dev balanced accuracy {_pct(j.tuned_on[k][1])})" for k, v in j.thresholds.items()
        )
        lines.append(f"- threshold: {tuned}; supported when P >= threshold")
    else:
        lines.append(f"- threshold: {next(iter(j.thresholds.values())):g} (fixed); supported when P >= threshold")
    lines.append(f"- pairs: {len(report.scored)} from {report.pairs_file}")
    if report.unjudged:
        lines.append(f"- unjudged: {report.unjudged} pairs the judge gave no judgement, left out of every figure")
    if j.by_word[0]:
        unreadable = f", {j.by_word[1]} unreadable (counted as no)" if j.by_word[1] else ""
        lines.append(f"- read by the reply's word: {j.by_word[0]} replies came without log-probabilities (P is 1 for yes, 0 for no){unreadable}")
    if d["inputs"] is not None:
        i = d["inputs"]
        lines.append(f"- inputs: {i['chunked']} pairs chunked, {i['cut']} cut to the maximum length, {i['split_sentences']} with a sentence split at words")
    b = d["bootstrap"]
    lines += ["", f"| dataset | balanced accuracy | {int(100 * report.level)}% interval | pairs | TP | FN | FP | TN |", "|---|---|---|---|---|---|---|---|"]
    for name, iv in report.intervals.items():
        c = report.confusion["all" if name == "overall" else name]
        n = sum(c.values())
        label = "overall (mean over datasets)" if name == "overall" else name
        cells = [label, _pct(iv.point), _span(iv), str(n), *(str(c[k]) for k in ("true_positive", "false_negative", "false_positive", "true_negative"))]
        lines.append("| " + " | ".join(cells) + " |")
    if report.kinds:
        weak = report.weakest()
        if weak:
            named = ", ".join(f"{k} ({_pct(report.kind_intervals[k].point)})" for k in weak)
            lines += ["", f"Fails most on: {named}, each with its whole interval below the overall balanced accuracy."]
        order = weak + sorted((k for k in report.kinds if k not in weak), key=lambda k: report.kinds[k][0] / report.kinds[k][1])
        lines += ["", f"| kind of pair | accuracy | {int(100 * report.level)}% interval | pairs |", "|---|---|---|---|"]
        lines += [f"| {k} | {_pct(report.kind_intervals[k].point)} | {_span(report.kind_intervals[k])} | {report.kinds[k][1]} |" for k in order]
    lines += ["", f"Intervals: {b['method']}, {b['resamples']:,} resamples (seed {b['seed']}), each unit {b['unit']}."]
    if difference is not None:
        o = difference["overall"]
        lines += [
            "",
            f"Against {other}: overall balanced accuracy {_pct(o['diff'])} points "
            + ("(n/a)" if o["low"] is None else f"({_pct(o['low'])} to {_pct(o['high'])}, p = {o['p']:.3g}, paired over the same documents)"),
        ]
    return "\n".join(lines) + "\n"


def compare_all(reports: Sequence[Report], pairs: Sequence[Pair]) -> dict[tuple[int, int], dict[str, Any]]:
    """Every two judges' paired difference (`compare`), by their positions (i < j)."""
    return {(i, j): compare(reports[i], reports[j], pairs) for i in range(len(reports)) for j in range(i + 1, len(reports))}


def ranking(reports: Sequence[Report], differences: dict[tuple[int, int], dict[str, Any]], alpha: float = 0.05) -> list[tuple[int, bool]]:
    """The judges best first by overall balanced accuracy (n/a last), each with whether its paired
    test against the judge above fails to tell them apart (p >= alpha, or no test): a tie."""

    def point(i: int) -> float:
        found = reports[i].intervals["overall"].point
        return -1.0 if found is None else found

    order = sorted(range(len(reports)), key=lambda i: -point(i))
    out = []
    for k, i in enumerate(order):
        if not k:
            out.append((i, False))
            continue
        d = differences[tuple(sorted((i, order[k - 1])))]["overall"]  # type: ignore[index]
        out.append((i, d["p"] is None or d["p"] >= alpha))
    return out


def ranking_markdown(reports: Sequence[Report], differences: dict[tuple[int, int], dict[str, Any]]) -> str:
    """Every pair's paired difference, then the judges ranked: what choosing among several needs."""
    name = [r.judged.spec for r in reports]
    lines = ["## The judges compared", "", "| A | B | A - B (points) | interval | p |", "|---|---|---|---|---|"]
    for (i, j), d in differences.items():
        o = d["overall"]
        span = "n/a" if o["low"] is None else f"{_pct(o['low'])} to {_pct(o['high'])}"
        lines.append(f"| {name[i]} | {name[j]} | {_pct(o['diff'])} | {span} | {'n/a' if o['p'] is None else format(o['p'], '.3g')} |")
    lines += ["", "Ranked by overall balanced accuracy (= : the paired test does not tell it from the judge above, p >= 0.05):", ""]
    lines += [
        f"{k}. {name[i]}: {_pct(reports[i].intervals['overall'].point)}{' =' if tied else ''}" for k, (i, tied) in enumerate(ranking(reports, differences), 1)
    ]
    return "\n".join(lines) + "\n"
