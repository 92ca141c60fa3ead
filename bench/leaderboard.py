"""`kalma leaderboard DIR -o SITE`: a static page of every submission, one table per dataset,
the ablation plots (PNG and SVG), and the same tables as Markdown and CSV.

DIR holds `submissions/<name>/submission.json` (from `kalma bench submit`) and, optionally,
`runs/<name>/results.json` (from `kalma bench run`), whose ablations become plots.

Numbers are ranked only like with like: one table per dataset (by the digest of its entries),
each row with the answers it was computed over and its seeds. Every figure carries its 95%
interval over the dataset's entries; every pair of ranked rows is tested on the ranking figure
(paired approximate randomization over entries, `evaluation.compare`), and a row no test
separates from the row above is marked tied, with the ranks it could hold. The KaLMA paper's own rows sit in
the table of the authors' release when it is on the board, and otherwise in a table of their
own; they are reference values, never rerun here. A damaged entry is listed under the tables,
with its file and the reason, and never takes the rest of the board down.
"""

from __future__ import annotations

import csv
import html
import json
import shutil
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evaluation.base import UNUSABLE_LIMIT, show, show_signed
from evaluation.runner import FULL_POOL, any_language
from evaluation.text_quality import SELF_JUDGED
from evaluation.uncertainty import RESAMPLES, Difference
from evaluation.verdict_page import prose
from kalma.frames import csv_safe
from kalma.jsonl import RecordError
from kalma.schema import Bounds, Summary, metric_value

from .records import BenchResults, DatasetId, FiledSubmission, Stat, TableRow
from .submissions import filed_entries

# (qualified output, heading): the board reads each declared output by name, so a renamed one fails `render`.
COLUMNS = [
    ("alignment.alignment_micro", "Align."),
    ("citation.correctness_micro", "Corr."),
    ("citation.precision_micro", "Prec."),
    ("citation.recall_micro", "Rec."),
    ("citation.f1_micro", "F1"),
    ("na.na_precision_micro", "[NA] P"),
    ("na.na_recall_micro", "[NA] R"),
    ("geval.fluency_mean", "Fluency (1-5)"),
]
RANK_BY = "citation.f1_micro"
ALPHA = 0.05  # a pair is told apart when its paired test's p is below this
INTERVALS_NOTE = (
    "Each value's bracket is its 95% interval over the dataset's entries (percentile bootstrap, each entry resampled with all of its "
    "answers): it covers the sampling of the questions, not the judge's own error (an entailment model's mistakes move every row "
    "alike and no interval shows them). Rank: the ranks a row could hold given the paired tests; = marks a row no test tells "
    f"apart from the row above (paired approximate randomization on F1 over entries, two-sided, p ≥ {ALPHA}, not corrected for "
    "the number of pairs)."
)
# KaLMA paper, Table 3 (micro, specific questions of BioKaLMA) and Table 5 / Figure 5 (ChatGPT, temperature 0.5).
PAPER_COLUMNS = ["alignment.alignment_micro", "citation.correctness_micro", "citation.precision_micro", "citation.recall_micro", "citation.f1_micro"]
PAPER_ROWS = [
    (name, dict(zip(PAPER_COLUMNS, (v / 100 for v in values))))
    for name, values in (
        ("GPT-4 (0.5)", (92.0, 97.6, 36.0, 43.6, 39.4)),
        ("ChatGPT (0.5)", (84.5, 94.8, 29.9, 49.0, 37.2)),
        ("LLaMA-7B", (47.8, 70.2, 7.7, 41.1, 13.0)),
    )
]
KNOWLEDGE_DIFFERS = "given different knowledge"  # what `kalma compare` says of two evaluations whose answers had other knowledge
PAPER_DATASET = "BioKaLMA as the paper measured it (1,085 specific questions with minimum sets)"
PAPER_REMOVAL: dict[str, list[float]] = {
    "k": [0, 1, 2, 3],
    "citation.correctness_micro": [95.5, 94.1, 94.0, 93.9],
    "citation.precision_micro": [30.1, 26.1, 21.0, 16.3],
    "citation.recall_micro": [57.1, 42.5, 31.4, 20.4],
    "citation.f1_micro": [39.4, 32.3, 25.2, 18.1],
}
PAPER_RETRIEVAL: dict[str, list[float]] = {"accuracy": [100, 80], "citation.recall_micro": [57.1, 42.5]}
PLOTTED = {  # metric -> (label, colour, marker)
    "citation.correctness_micro": ("correctness", "tab:gray", "D"),
    "citation.precision_micro": ("precision", "tab:blue", "o"),
    "citation.recall_micro": ("recall", "tab:orange", "s"),
    "citation.f1_micro": ("F1", "tab:green", "^"),
    "na.na_recall_micro": ("[NA] recall", "tab:red", "x"),
}
M = TypeVar("M", bound=BaseModel)


@dataclass
class Row:
    name: str
    model: str
    url: str
    answers: int | str
    seeds: str
    values: dict[str, float | None]
    malformed: int | str
    filed: str
    backends: str
    reference: bool = False
    read_first: str = ""  # the model behind a figure failed: unreadable judge replies, answers that cite nothing
    folder: Path | None = None  # the filed entry: its per-answer page is linked from the row
    partial: bool = False  # scored part of the dataset: never ranked with complete submissions
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # per column: its 95% interval over entries
    rank: str = ""  # the ranks the paired tests allow it, "2" or "2-4"
    tied: bool = False  # no paired test separates it from the row above
    unranked: str = ""  # why it is set apart from the ranking: comparable with no other row ("other knowledge")
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)  # a dataset with splits (changed, unchanged): the figures of each


@dataclass
class Table:
    dataset: str
    rows: list[Row] = field(default_factory=list)
    note: str = ""
    language: str = "en"  # of the dataset's questions and labels (its title says it too where it is not English)
    tests: dict[tuple[str, str], Difference | str] = field(default_factory=dict)  # (row, row): the paired test on RANK_BY, or why none


@dataclass
class Board:
    tables: list[Table]
    damaged: list[str]


def _load(path: Path, model: type[M]) -> M:
    """A board file, or one error naming it with the line or field that is wrong."""
    try:
        return model.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise RecordError(path, 1, "", "missing: the entry's folder holds no record; file the entry again, or remove its folder") from None
    except json.JSONDecodeError as exc:
        raise RecordError(path, exc.lineno, "", f"not valid JSON ({exc.msg}); file the entry again, or remove its folder") from None
    except UnicodeDecodeError as exc:
        raise RecordError(path, 1, "", f"not UTF-8 (byte {exc.start})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise RecordError(path, 1, ".".join(str(p) for p in first["loc"]), first["msg"].removeprefix("Value error, ")) from None


def _when(stamp: str) -> str:
    return stamp[:16].replace("T", " ")


def _row(rec: FiledSubmission, folder: Path | None = None) -> Row:
    s, meta = rec.summary, rec.submission
    filed = _when(rec.filed) + (f" (replaces the entry of {_when(rec.replaces.filed)})" if rec.replaces else "")
    return Row(
        name=meta.name,
        model=meta.model + (" (fixed patterns, not a model)" if meta.model == "template" else ""),
        url=meta.url,
        answers=rec.answers_scored if s.coverage is None else f"{rec.answers_scored} ({s.coverage.label()})",
        seeds=",".join(map(str, meta.seeds)) or "–",
        values={k: metric_value(s.metrics, k) for k, _ in COLUMNS},
        malformed=rec.malformed_citations,
        filed=filed,
        backends="; ".join(f"{k}: {v}" for k, v in s.models.items() if k != "answers"),
        read_first="; ".join(_failures(s)),
        folder=folder,
        partial=s.coverage is not None,
        intervals={k: (b.low, b.high) for k, _ in COLUMNS if (b := _bounds(s, k)) is not None and b.low is not None and b.high is not None},
        splits=s.splits,
    )


def _bounds(s: Summary, key: str) -> Bounds | None:
    metric, _, name = key.partition(".")
    return s.intervals.get(metric, {}).get(name)


def _rank(table: Table, resamples: int) -> None:
    """Test every pair of ranked rows on RANK_BY with the evaluations' scores, then give each row
    the ranks the tests allow it (1 + the rows significantly above it, to n - the rows
    significantly below) and mark the rows no test separates from the row above."""
    from evaluation.compare import Evaluation, compare
    from kalma.errors import KalmaError

    # A row whose F1 is n/a has no place in a ranking by F1: it is listed, unranked.
    ranked = [r for r in table.rows if not r.reference and r.values.get(RANK_BY) is not None]
    evals: dict[str, Evaluation | str] = {}
    for r in ranked:
        try:
            evals[r.name] = Evaluation.read(r.folder / "eval") if r.folder is not None else "no scores filed"
        except (KalmaError, OSError) as exc:
            evals[r.name] = f"its scores cannot be read ({exc})"
    for i, a in enumerate(ranked):
        for b in ranked[i + 1 :]:
            ea, eb = evals[a.name], evals[b.name]
            if isinstance(ea, str) or isinstance(eb, str):
                table.tests[a.name, b.name] = ea if isinstance(ea, str) else str(eb)
                continue
            try:
                found = compare(ea, eb, resamples=resamples, only={RANK_BY}).figures.get(RANK_BY)
            except KalmaError as exc:  # other knowledge given, no metric in common
                table.tests[a.name, b.name] = str(exc)
                continue
            table.tests[a.name, b.name] = found if found is not None else f"{RANK_BY} not computed alike"
    for r in ranked:  # a row no test compares with any other is no tie: it is set apart
        whys = [t for o in ranked if o is not r for t in (table.tests.get((r.name, o.name)), table.tests.get((o.name, r.name))) if t is not None]
        if whys and all(isinstance(t, str) for t in whys):
            r.unranked = "other knowledge" if any(KNOWLEDGE_DIFFERS in str(t) for t in whys) else "comparable with no other row"
    ranked = [r for r in ranked if not r.unranked]
    for r, (rank, tied) in zip(ranked, ranks([r.name for r in ranked], table.tests)):
        r.rank, r.tied = rank, tied
    if unranked := [r.name for r in table.rows if not r.reference and r not in ranked]:
        why = f"{len(unranked)} row{'s have' if len(unranked) > 1 else ' has'} no {RANK_BY} (no minimum knowledge sets, or nothing cited): listed, not ranked."
        table.note = " ".join(x for x in (table.note, why) if x)


def ranks(names: list[str], tests: dict[tuple[str, str], Difference | str]) -> list[tuple[str, bool]]:
    """For rows in their order on the board: the ranks the paired tests allow each (from 1 + the
    rows significantly better, to n - the rows significantly worse) and whether no test separates
    it from the row above (a pair without a test separates nothing).

    >>> d = lambda diff, p: Difference(0.0, 0.0, diff, None, None, p, 1000, 0)
    >>> ranks(["a", "b", "c"], {("a", "b"): d(0.01, 0.4), ("a", "c"): d(0.05, 0.001), ("b", "c"): d(0.04, 0.2)})
    [('1-2', False), ('1-3', True), ('2-3', True)]
    """
    n, out = len(names), []
    for i, name in enumerate(names):
        better = worse = 0
        for other in names:
            d = _test(tests, name, other)
            if d is not None and d.p is not None and d.p < ALPHA and d.diff is not None:
                better += d.diff < 0
                worse += d.diff > 0
        above = _test(tests, name, names[i - 1]) if i else None
        tied = bool(i) and (above is None or above.p is None or above.p >= ALPHA)
        out.append((f"{1 + better}" if 1 + better == n - worse else f"{1 + better}-{n - worse}", tied))
    return out


def _test(tests: dict[tuple[str, str], Difference | str], a: str, b: str) -> Difference | None:
    """The paired test of row `a` against row `b` (A - B), whichever order it was run in.

    >>> t = _test({("x", "y"): Difference(0.6, 0.5, 0.1, 0.02, 0.2, 0.01, 1000, 0)}, "y", "x")
    >>> (t.a, t.b, t.diff, t.low, t.high, t.p)
    (0.5, 0.6, -0.1, -0.2, -0.02, 0.01)
    """
    if (found := tests.get((a, b))) is not None:
        return found if isinstance(found, Difference) else None
    found = tests.get((b, a))
    if not isinstance(found, Difference):
        return None

    def flip(x: float | None) -> float | None:
        return None if x is None else 0.0 - x  # never -0.0

    return Difference(found.b, found.a, flip(found.diff), flip(found.high), flip(found.low), found.p, found.resamples, found.undefined, found.level, found.seed)


def _failures(s: Summary) -> list[str]:
    """How often the models behind a row failed, as its summary counted it."""
    out = [
        f"{metric}: {f['unusable']} of {f['replies']} {f.get('what', 'replies')} unreadable from {f['model']}"
        + ("; its values n/a" if f.get("over_limit") else "")
        for metric, f in s.failures.items()
    ]
    bare, answers = s.counts.get("answers_citing_nothing", 0), s.counts.get("answers", 0)
    if answers and bare / answers > UNUSABLE_LIMIT:  # the share above which evaluate says it first
        out.append(f"{bare} of {answers} answers cite nothing")
    out += [c for c in s.caveats if c.startswith(SELF_JUDGED)]  # a G-Eval judge rating its own answers
    out += [c for c in s.caveats if FULL_POOL in c]  # why an [NA] figure may be 0: no answer said which knowledge it had
    return out


def _backends_once(t: Table) -> str:
    """The backends every row of `t` shares, said once above it ("" when the rows differ)."""
    found = {r.backends for r in t.rows}
    return found.pop() if len(found) == 1 else ""


def _paper_rows() -> list[Row]:
    backends = "the paper's setting: alignment by TRUE (T5-11B); reference values, not rerun here"
    return [Row(name, name, "", 1085, "–", {k: v.get(k) for k, _ in COLUMNS}, "", "", backends, reference=True) for name, v in PAPER_ROWS]


def collect(board: Path, resamples: int = RESAMPLES) -> Board:
    """Every filed submission, one table per dataset, ranked by F1 with its paired tests; partial
    submissions (part of the dataset, or its first entries) in a table of their own under it,
    never ranked with complete ones; damaged entries aside."""
    groups: dict[str, tuple[DatasetId, list[Row], list[Row]]] = {}
    damaged: list[str] = []
    measured = _negated_measured(board, damaged)
    judge_notes: dict[int, str] = {}  # per row: what its alignment judge is known to do with a denial
    for folder in filed_entries(board).values():  # never a staging folder: a submission still being scored
        f = folder / "submission.json"
        try:
            rec = _load(f, FiledSubmission)
        except RecordError as exc:
            damaged.append(str(exc))
            continue
        if not rec.summary.finished:  # read from the record, never from a word in its text
            damaged.append(f"{f}: its evaluation is unfinished ({rec.answers_scored} of {rec.summary.to_score or '?'} answers scored); file it again")
            continue
        _, whole, part = groups.setdefault(rec.dataset.digest, (rec.dataset, [], []))
        row = _row(rec, folder)
        judge_notes[id(row)] = _negated_note(rec.summary, measured)
        (whole if rec.summary.coverage is None else part).append(row)
    tables = []
    release = next((d for d, _, _ in groups.values() if d.is_biokalma_release()), None)
    for dataset, rows, partial in groups.values():
        rows.sort(key=lambda r: -(r.values.get(RANK_BY) or -1.0))
        table = Table(dataset.label(), rows, _said_once(rows, judge_notes), language=dataset.language)
        _rank(table, resamples)
        if dataset is release:
            table.rows += _paper_rows()
            paper = "Rows marked paper are the KaLMA paper's Table 3 on BioKaLMA, with minimum sets this release lacks: reference values, not rerun here."
            table.note = " ".join(x for x in (table.note, paper) if x)
        if table.rows:  # a dataset with partial submissions only has no ranked table
            tables.append(table)
        if partial:
            note = "Each of these scored only part of the dataset (n says which part): not ranked, and not comparable with the table above or with each other."
            note = " ".join(x for x in (note, _said_once(partial, judge_notes)) if x)
            tables.append(Table(f"{dataset.label()}: partial submissions, not ranked", sorted(partial, key=lambda r: r.name), note, language=dataset.language))
    if release is None and (not groups or any(d.of_people() for d, _, _ in groups.values())):  # the paper's people beside people only
        tables.append(
            Table(PAPER_DATASET, _paper_rows(), "The KaLMA paper's Table 3, for reference: measured on another dataset than any above, never ranked with them.")
        )
    return Board(tables, damaged)


def plots(board: Path, site: Path) -> tuple[list[str], list[str]]:
    """Ablation figures from every run under board/runs, as PNG and SVG: each metric's mean over
    seeds with its 95% interval over the dataset's entries as error bars (± one sample standard
    deviation over seeds for a run made before intervals), and the paper's curves in the same
    colours, dashed. Returns (PNG names, damaged run files)."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made, damaged = [], []
    for res_file in sorted(board.glob("runs/*/results.json")):
        run = res_file.parent.name
        try:
            results = _load(res_file, BenchResults)
        except RecordError as exc:
            damaged.append(str(exc))
            continue
        for exp, title in (("knowledge_removal", "Knowledge removal"), ("retrieval", "Retrieval accuracy")):
            rows = results.tables.get(exp)
            if not rows:
                continue
            fig, ax = plt.subplots(figsize=(7.5, 3.8), dpi=110)
            _draw(ax, exp, rows)
            ax.set_xlabel("removed triples k" if exp == "knowledge_removal" else "retrieval accuracy (%)")
            ax.set_ylabel("micro score (x100)")
            entail = rows[0].models.get("alignment", rows[0].models.get("na", "?")).split(" (")[0]
            seeds = len(rows[0].seeds)
            bars = "95% interval over entries" if any(s is not None and s.low is not None for r in rows for s in r.values.values()) else "± sd over seeds"
            ax.set_title(
                f"{title}: {results.dataset.label()}\n{seeds} seed(s), n = {rows[0].answers} answers each; bars: {bars}; entailment {entail}", fontsize=8
            )
            if exp == "retrieval":
                ax.invert_xaxis()
            else:
                ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            stem = f"{run}-{exp}"
            fig.savefig(site / f"{stem}.png", bbox_inches="tight")
            fig.savefig(site / f"{stem}.svg", bbox_inches="tight")
            plt.close(fig)
            made.append(f"{stem}.png")
    return made, damaged


def _x(condition: str) -> float:
    """The x of a condition: `k=2` -> 2, `60` -> 60."""
    return float(condition.split("=")[-1])


def _bar(s: Stat) -> tuple[float, float]:
    """How far a point's bar reaches below and above it: to its interval over entries, else ± the seeds' deviation."""
    assert s.mean is not None
    if s.low is not None and s.high is not None:
        return max(0.0, s.mean - s.low), max(0.0, s.high - s.mean)
    return s.std or 0.0, s.std or 0.0


def _draw(ax: Any, exp: str, rows: list[TableRow]) -> None:
    for n, llm in enumerate(sorted({r.llm for r in rows})):
        mine = sorted((r for r in rows if r.llm == llm), key=lambda r: _x(r.condition))
        xs = [_x(r.condition) for r in mine]
        for metric, (label, colour, marker) in PLOTTED.items():
            points = [(x, s.mean, _bar(s)) for x, r in zip(xs, mine) if (s := r.values.get(metric)) is not None and s.mean is not None]
            if points:
                ax.errorbar(
                    [x for x, _, _ in points],
                    [100 * m for _, m, _ in points],
                    yerr=[[100 * lo for _, _, (lo, _) in points], [100 * hi for _, _, (_, hi) in points]],
                    fmt=marker + ("-" if n == 0 else ":"),
                    color=colour,
                    capsize=3,
                    label=f"{llm}: {label}",
                )
    ref = PAPER_REMOVAL if exp == "knowledge_removal" else PAPER_RETRIEVAL
    xs = ref["k"] if exp == "knowledge_removal" else ref["accuracy"]
    for metric, (label, colour, marker) in PLOTTED.items():
        if metric in ref:
            ax.plot(xs, ref[metric], "--", marker=marker, markerfacecolor="none", color=colour, alpha=0.6, label=f"paper, ChatGPT on BioKaLMA: {label}")


def _cell(v: Any, scale: str = "rate") -> str:
    if v is None or v == "":
        return "–"
    return show(v, scale) if isinstance(v, float) else str(v)


def _value(r: Row, key: str, scale: str) -> str:
    """A metric cell: n/a where a submission's figure could not be computed, – where the paper gives none."""
    v = r.values.get(key)
    return "–" if v is None and (r.reference or key not in r.values) else show(v, scale)


def _link(url: str, text: str) -> str:
    """A link only for http(s) URLs; anything else (javascript:, data:) is shown as text."""
    if urllib.parse.urlsplit(url).scheme in {"http", "https"}:
        return f'<a href="{html.escape(url)}" rel="nofollow noopener">{html.escape(text)}</a>'
    return html.escape(text)


def _answer_pages(state: Board, site: Path) -> set[str]:
    """Each submission's per-answer page (`evaluation.verdict_page`) under site/answers/: the one
    its evaluation wrote, or, for an entry filed before there were pages, one made from its scores
    (without the questions, which the scores do not hold). Returns the names that have one."""
    from evaluation.runner import PAGE_FILE, SCORES_FILE
    from evaluation.verdict_page import render_page
    from kalma.jsonl import read_jsonl
    from kalma.schema import AnswerScores

    done = set()
    (site / "answers").mkdir(exist_ok=True)
    for name, folder in ((r.name, r.folder) for t in state.tables for r in t.rows if r.folder is not None):
        written, scores, target = folder / "eval" / PAGE_FILE, folder / "eval" / SCORES_FILE, site / "answers" / f"{name}.html"
        try:
            if written.is_file():
                shutil.copyfile(written, target)
            else:
                rec = _load(folder / "submission.json", FiledSubmission)
                target.write_text(render_page(rec.summary, list(read_jsonl(scores, AnswerScores, kind="scores")), title=name), encoding="utf-8")
        except (OSError, RecordError):  # no scores to show: the row stays, without a link
            continue
        done.add(name)
    return done


def _local(name: str) -> str:
    """A link to a file of the site itself, never read as a URL scheme (a run named `javascript:…`)."""
    return "./" + urllib.parse.quote(name)


def _bracket(r: Row, key: str, scale: str) -> str:
    """A value's interval as every rendering prints it, or "" when it has none."""
    b = r.intervals.get(key)
    return f"[{show(b[0], scale)}, {show(b[1], scale)}]" if b else ""


def _rank_cell(r: Row) -> str:
    if r.unranked:
        return f"not ranked: {r.unranked}"
    return f"{r.rank}{' =' if r.tied else ''}" if r.rank else "–"


def _pairs(t: Table) -> list[tuple[Row, Row, Difference | str]]:
    """Every tested pair of the table's ranked rows, in rank order."""
    ranked = [r for r in t.rows if r.rank]
    out = []
    for i, a in enumerate(ranked):
        for b in ranked[i + 1 :]:
            found = t.tests.get((a.name, b.name))
            out.append((a, b, found if found is not None else "not tested"))
    return out


def _verdict(d: Difference | str) -> str:
    """A pair's test in a few words: the difference in F1 points and p, or why there is none."""
    if isinstance(d, str):
        return "not comparable"
    if d.diff is None or d.p is None:
        return "n/a"
    from evaluation.compare import show_p

    return f"{show_signed(d.diff)} (p {show_p(d.p, d.resamples)})"


def _tests_md(t: Table) -> list[str]:
    pairs = _pairs(t)
    if not pairs:
        return []
    lines = [f"Paired tests on {RANK_BY} (row - column, x100; p of a paired approximate-randomization test over entries):", ""]
    lines += ["| A | B | A - B (p) | told apart |", "|---|---|---|---|"]
    for a, b, d in pairs:
        apart = d if isinstance(d, str) else "n/a" if d.p is None else "yes" if d.p < ALPHA else "no"
        lines.append(f"| {a.name} | {b.name} | {_verdict(d)} | {apart} |")
    return lines + [""]


def _tests_html(t: Table) -> str:
    """The pairs as a compact matrix: row minus column, significant cells in bold."""
    ranked = [r for r in t.rows if r.rank]
    if len(ranked) < 2:
        return ""
    cells = []
    for a in ranked:
        row = [f"<th>{html.escape(a.name)}</th>"]
        for b in ranked:
            d = _test(t.tests, a.name, b.name) if a is not b else None
            why = t.tests.get((a.name, b.name), t.tests.get((b.name, a.name)))
            if a is b:
                row.append("<td>·</td>")
            elif d is None:
                row.append(f'<td title="{html.escape(str(why))}">not comparable</td>')
            else:
                apart = d.p is not None and d.p < ALPHA
                text = html.escape(_verdict(d))
                row.append(f'<td class="{"apart" if apart else "tied"}">{f"<b>{text}</b>" if apart else text}</td>')
        cells.append("<tr>" + "".join(row) + "</tr>")
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(r.name)}</th>" for r in ranked) + "</tr>"
    return (
        f'<p class="note">Paired tests on {RANK_BY}: row minus column, x100, and the p of a two-sided paired approximate-randomization '
        f'test over entries; bold: p &lt; {ALPHA}.</p>\n<table class="tests"><thead>{head}</thead><tbody>{"".join(cells)}</tbody></table>'
    )


def render(board: str | Path, site: str | Path, resamples: int = RESAMPLES) -> tuple[Path, list[str]]:
    """Write the page, Markdown and CSV; return the page and the damaged entries left off it."""
    from evaluation.base import check_outputs

    check_outputs([k for k, _ in COLUMNS] + PAPER_COLUMNS, "leaderboard columns")
    board, site = Path(board), Path(site)
    site.mkdir(parents=True, exist_ok=True)
    state = collect(board, resamples)
    pages = _answer_pages(state, site)
    images, bad_runs = plots(board, site)
    damaged = state.damaged + bad_runs
    scales = {k: ("1-5" if k.startswith("geval.") else "rate") for k, _ in COLUMNS}
    head = ["Submission", "Model", "n", "Seeds", "Rank"] + [h for _, h in COLUMNS] + ["Malformed", "Filed (UTC)", "Backends per metric", "Read first"]
    # on the page, Read first goes under each name (never a last column off-screen)
    with (site / "leaderboard.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        figures = [x for k, _ in COLUMNS for x in (k, f"{k} low", f"{k} high")]
        named = ["dataset", "language", "kind", "submission", "model", "url", "answers", "seeds", "rank", "tied with the row above"]
        w.writerow([*named, *figures, "malformed", "filed", "backends", "read first"])
        for t in state.tables:
            for r in t.rows:
                values = [x for k, _ in COLUMNS for x in (r.values.get(k), *r.intervals.get(k, (None, None)))]
                fixed = [
                    t.dataset,
                    t.language,
                    "paper reference" if r.reference else "partial submission" if r.partial else "submission",
                    r.name,
                    r.model,
                    r.url,
                    r.answers,
                    "" if r.seeds == "–" else r.seeds,  # no seeds is an empty cell, as every CSV reader reads it
                    r.rank or (_rank_cell(r) if r.unranked else ""),
                    "yes" if r.tied else "",
                ]
                w.writerow([csv_safe(x) for x in fixed + values + [r.malformed, r.filed, r.backends, r.read_first]])
    md: list[str] = []
    sections: list[str] = []
    for t in state.tables:
        cells = [
            [r.name + (" *(paper)*" if r.reference else ""), r.model, str(r.answers), r.seeds, _rank_cell(r)]
            + [" ".join(x for x in (_value(r, k, scales[k]), _bracket(r, k, scales[k])) if x) for k, _ in COLUMNS]
            + [_cell(v) for v in (r.malformed, r.filed, r.backends, r.read_first)]  # as the page shows them: 0 malformed is 0, not –
            for r in t.rows
        ]
        md += [f"## {t.dataset}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        md += ["| " + " | ".join(c) + " |" for c in cells] + ([f"\n{t.note}"] if t.note else []) + [""] + _tests_md(t) + _splits_md(t)
        once = _backends_once(t)
        shown = [h for h in head[:-1] if not (once and h == "Backends per metric")]
        body = "\n".join(
            f'<tr class="{"reference" if r.reference else "submission"}">'
            + f"<td>{_link(r.url, r.name) if r.url else html.escape(r.name)}"
            + (' <span class="tag">paper</span>' if r.reference else "")
            + (f' <a class="answers" href="{_local("answers/" + r.name + ".html")}">answers</a>' if r.name in pages else "")
            + (f'<div class="read-first"><b>Read first:</b> {prose(r.read_first)}</div>' if r.read_first else "")
            + "</td>"
            + "".join(f'<td data-v="{v if isinstance(v, (int, float)) else ""}">{html.escape(_cell(v))}</td>' for v in (r.model, r.answers, r.seeds))
            + f'<td class="{"tie" if r.tied else ""}">{html.escape(_rank_cell(r))}</td>'
            + "".join(
                f'<td data-v="{"" if (v := r.values.get(k)) is None else v}">{html.escape(_value(r, k, scales[k]))}'
                + (f'<br><span class="ci">{html.escape(ci)}</span>' if (ci := _bracket(r, k, scales[k])) else "")
                + "</td>"
                for k, _ in COLUMNS
            )
            + f"<td>{html.escape(_cell(r.malformed))}</td>"
            + "".join(f'<td class="text">{html.escape(_cell(v))}</td>' for v in (r.filed, *([] if once else [r.backends])))
            + "</tr>"
            for r in t.rows
        )
        said_once = f'<p class="backends"><b>Backends per metric</b>, the same for every row: {html.escape(once)}</p>' if once else ""
        sections.append(
            f"<h2>{html.escape(t.dataset)}</h2>{said_once}\n"
            f'<div class="wide"><table class="board"><thead><tr>{"".join(f"<th>{html.escape(h)}</th>" for h in shown)}</tr></thead>'
            f"\n<tbody>\n{body}\n</tbody></table></div>" + (f'\n<p class="note">{html.escape(t.note)}</p>' if t.note else "") + _tests_html(t) + _splits_html(t)
        )
    scale_note = "Values x100 (rates); fluency is G-Eval's 1-5. n: answers scored. One table per dataset: numbers are only ranked against the same questions."
    judged = board / "sensitivity" / "sensitivity.md"  # `kalma judge sensitivity BOARD`, when it ran
    sensitivity = judged.read_text(encoding="utf-8") if judged.is_file() else ""
    (site / "leaderboard.md").write_text("# KaLMA leaderboard\n\n" + scale_note + "\n\n" + INTERVALS_NOTE + "\n\n" + "\n".join(md) + sensitivity)
    figs = "\n".join(
        f'<figure><img src="{_local(i)}" alt="{html.escape(i)}" onload="loaded()" onerror="failed(this)">'
        f'<figcaption><a href="{_local(i[:-4] + ".svg")}">SVG</a></figcaption></figure>'
        for i in images
    )
    missing = "".join(f"<li>{html.escape(d)}</li>" for d in damaged)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>KaLMA leaderboard</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2rem;color:#222}} table{{border-collapse:collapse;font-size:.85rem;margin-bottom:.5rem}}
th,td{{border:1px solid #ccc;padding:.3rem .5rem;text-align:right}} td:nth-child(-n+2),td.text{{text-align:left}}
.wide{{overflow-x:auto;max-width:100%}} td:first-child{{min-width:18rem;max-width:26rem}} .read-first{{font-size:.75rem;color:#7a4b00;margin-top:.2rem}}
th{{background:#f0f0f0;cursor:pointer;user-select:none}} tr.reference{{background:#fff8e1;font-style:italic}}
.tag{{font-size:.7rem;background:#f0c36d;border-radius:3px;padding:0 .3rem;font-style:normal}} .note{{font-size:.8rem;color:#555}}
figure{{display:inline-block;margin:1rem}} img{{max-width:700px;border:1px solid #ddd}} .damaged{{color:#a00}}
.ci{{font-size:.7rem;color:#666;white-space:nowrap}} td.tie{{color:#555}} table.tests td.apart{{background:#e8f5e9}} table.tests td.tied{{color:#777}}
</style></head>
<body data-images="{len(images)}" data-images-loaded="0" data-tables="{len(state.tables)}" data-damaged="{len(damaged)}">
<h1>KaLMA leaderboard</h1>
<p>{html.escape(scale_note)} Micro scores on specific questions; click a column to sort. Backends per metric name the model behind
each metric; <em>lexical</em> is a rule-based approximation of entailment. What to read before a row's numbers is under its name.
Also as <a href="./leaderboard.md">Markdown</a> and <a href="./leaderboard.csv">CSV</a>.</p>
<p class="intervals">{html.escape(INTERVALS_NOTE)}</p>
{"".join(sections)}
{f'<section id="sensitivity"><pre class="sensitivity">{html.escape(sensitivity)}</pre></section>' if sensitivity else ""}
{f'<h2>Not shown</h2><ul class="damaged">{missing}</ul>' if damaged else ""}
<h2>Ablations</h2>
<p>Each point is the mean over seeds, its bar the 95% interval over the dataset's entries of the figure over all seeds' answers
(the sampling of the questions; a run made before intervals shows ± one sample standard deviation over seeds, as its title says);
dashed: the paper's ChatGPT curves on BioKaLMA.</p>
{figs or "<p>No bench runs found.</p>"}
<script>
function loaded(){{const b=document.body;b.dataset.imagesLoaded=String(+b.dataset.imagesLoaded+1);}}
function failed(img){{img.alt="failed to load "+img.src;document.body.dataset.imageErrors=(+(document.body.dataset.imageErrors||0)+1);}}
document.querySelectorAll("table.board").forEach(table=>table.querySelectorAll("th").forEach((th,i)=>th.addEventListener("click",()=>{{
  const tb=table.tBodies[0], rows=[...tb.rows], asc=th.dataset.asc!=="1";
  rows.sort((a,b)=>{{const x=a.cells[i].dataset.v,y=b.cells[i].dataset.v;
    if(x&&y)return asc?x-y:y-x; if(x)return -1; if(y)return 1;
    return asc?a.cells[i].textContent.localeCompare(b.cells[i].textContent):b.cells[i].textContent.localeCompare(a.cells[i].textContent);}});
  th.dataset.asc=asc?"1":"0"; rows.forEach(r=>tb.appendChild(r));}})));
</script>
</body></html>
"""
    (site / "index.html").write_text(page, encoding="utf-8")
    return site / "index.html", damaged


__all__ = ["render", "collect", "plots"]


SPLITS_NOTE = (
    "Per split of the dataset (`changed`: knowledge new or changed since the previous KG; `unchanged`: held by both), "
    "each figure with its interval over that split's entries."
)


def _split_cells(t: Table) -> list[list[str]]:
    """Each submission's figures per split of its dataset, with their intervals; none without splits."""
    out = []
    for r in t.rows:
        for split, found in r.splits.items():
            cells = []
            for k, _ in COLUMNS:
                metric, _, name = k.partition(".")
                scale = "1-5" if k.startswith("geval.") else "rate"
                b = found["intervals"].get(metric, {}).get(name) or {}
                ci = f" [{show(b['low'], scale)}, {show(b['high'], scale)}]" if b.get("low") is not None and b.get("high") is not None else ""
                cells.append(show(found["metrics"].get(metric, {}).get(name), scale) + ci)
            out.append([r.name, split, str(found["entries"]), *cells])
    return out


def _splits_md(t: Table) -> list[str]:
    rows = _split_cells(t)
    if not rows:
        return []
    head = ["Submission", "Split", "Entries"] + [h for _, h in COLUMNS]
    return [SPLITS_NOTE, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows] + [""]


def _splits_html(t: Table) -> str:
    rows = _split_cells(t)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["Submission", "Split", "Entries"] + [h for _, h in COLUMNS])
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    table = f'<div class="wide"><table class="board splits"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>'
    return f'\n<p class="note">{html.escape(SPLITS_NOTE)}</p>\n{table}'


JUDGE_QUALITY = "judge-quality"  # BOARD/judge-quality/**/judge.json: `kalma judge evaluate -o` run on the board's judges


def _negated_measured(board: Path, damaged: list[str]) -> dict[str, str]:
    """Each judge the board's judge-quality reports measured on `negated` pairs (a sentence that
    denies its citation), by spec across languages: its accuracy there, with its interval and file."""
    out: dict[str, str] = {}
    for f in sorted((board / JUDGE_QUALITY).rglob("judge.json")):
        try:
            judged = json.loads(f.read_text(encoding="utf-8"))["judges"]
            for j in judged:
                kind = j.get("accuracy_by_kind", {}).get("negated")
                if kind:
                    iv, level = kind["accuracy"], j.get("bootstrap", {}).get("level", 0.95)
                    out[any_language(j["spec"])] = (
                        f"{show(iv['point'])} right on {kind['pairs']} negated pairs (a sentence that denies its citation; "
                        f"{int(100 * level)}% interval {show(iv['low'])} to {show(iv['high'])}; {f.relative_to(board)})"
                    )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            damaged.append(f"{f}: not a judge.json of `kalma judge evaluate` ({type(exc).__name__}: {exc}); write it again with `kalma judge evaluate -o`")
    return out


def _said_once(rows: list[Row], notes: dict[int, str]) -> str:
    """A judge note every row of a table shares, said once under the table, as shared backends
    are (a row's Read first stays short enough to sit under its name); "" when the rows' notes
    differ, each then said in its own row's Read first."""
    found = {notes.get(id(r), "") for r in rows}
    if len(found) == 1:
        return found.pop()
    for r in rows:
        r.read_first = _joined(r.read_first, notes.get(id(r), ""))
    return ""


def _joined(*said: str) -> str:
    return "; ".join(x for x in said if x)


def _negated_note(s: Summary, measured: dict[str, str]) -> str:
    """What a row's alignment judge is known to do with a sentence that denies what it cites."""
    spec = s.judges.get("nli", {}).get("spec")
    if not spec:  # no alignment judge behind this row's figures
        return ""
    found = measured.get(any_language(str(spec)))
    if found:
        return f"alignment judge {spec}: {found}"
    return f"alignment judge {spec} not measured on negated pairs: its alignment cannot tell a sentence that denies its citation from one that states it"
