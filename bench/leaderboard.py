"""`kalma leaderboard DIR -o SITE`: a static page of every submission, one table per dataset,
the ablation plots (PNG and SVG), and the same tables as Markdown and CSV.

DIR holds `submissions/<name>/submission.json` (from `kalma bench submit`) and, optionally,
`runs/<name>/results.json` (from `kalma bench run`), whose ablations become plots.

Numbers are ranked only like with like: one table per dataset (by the digest of its entries),
each row with the answers it was computed over and its seeds. The KaLMA paper's own rows sit in
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

from evaluation.base import UNUSABLE_LIMIT, show
from kalma.frames import csv_safe
from kalma.jsonl import RecordError
from kalma.schema import Summary, metric_value

from .records import BenchResults, DatasetId, FiledSubmission, TableRow
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


@dataclass
class Table:
    dataset: str
    rows: list[Row] = field(default_factory=list)
    note: str = ""


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
    )


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
    return out


def _paper_rows() -> list[Row]:
    backends = "the paper's setting: alignment by TRUE (T5-11B); reference values, not rerun here"
    return [Row(name, name, "", 1085, "–", {k: v.get(k) for k, _ in COLUMNS}, "", "", backends, reference=True) for name, v in PAPER_ROWS]


def collect(board: Path) -> Board:
    """Every filed submission, one table per dataset, ranked by F1; partial submissions (part of
    the dataset, or its first entries) in a table of their own under it, never ranked with
    complete ones; damaged entries aside."""
    groups: dict[str, tuple[DatasetId, list[Row], list[Row]]] = {}
    damaged = []
    for folder in filed_entries(board).values():  # never a staging folder: a submission still being scored
        f = folder / "submission.json"
        try:
            rec = _load(f, FiledSubmission)
        except RecordError as exc:
            damaged.append(str(exc))
            continue
        _, whole, part = groups.setdefault(rec.dataset.digest, (rec.dataset, [], []))
        (whole if rec.summary.coverage is None else part).append(_row(rec, folder))
    tables = []
    release = next((d for d, _, _ in groups.values() if d.is_biokalma_release()), None)
    for dataset, rows, partial in groups.values():
        rows.sort(key=lambda r: -(r.values.get(RANK_BY) or -1.0))
        table = Table(dataset.label(), rows)
        if dataset is release:
            table.rows += _paper_rows()
            table.note = "Rows marked paper are the KaLMA paper's Table 3 on BioKaLMA, with minimum sets this release lacks: reference values, not rerun here."
        if table.rows:  # a dataset with partial submissions only has no ranked table
            tables.append(table)
        if partial:
            note = "Each of these scored only part of the dataset (n says which part): not ranked, and not comparable with the table above or with each other."
            tables.append(Table(f"{dataset.label()}: partial submissions, not ranked", sorted(partial, key=lambda r: r.name), note))
    if release is None:
        tables.append(
            Table(PAPER_DATASET, _paper_rows(), "The KaLMA paper's Table 3, for reference: measured on another dataset than any above, never ranked with them.")
        )
    return Board(tables, damaged)


def plots(board: Path, site: Path) -> tuple[list[str], list[str]]:
    """Ablation figures from every run under board/runs, as PNG and SVG: each metric's mean over
    seeds with ± one sample standard deviation as error bars, and the paper's curves in the same
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
            ax.set_title(f"{title}: {results.dataset.label()}\n{seeds} seed(s), n = {rows[0].answers} answers each; entailment {entail}", fontsize=8)
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


def _draw(ax: Any, exp: str, rows: list[TableRow]) -> None:
    for n, llm in enumerate(sorted({r.llm for r in rows})):
        mine = sorted((r for r in rows if r.llm == llm), key=lambda r: _x(r.condition))
        xs = [_x(r.condition) for r in mine]
        for metric, (label, colour, marker) in PLOTTED.items():
            points = [(x, s.mean, s.std or 0.0) for x, r in zip(xs, mine) if (s := r.values.get(metric)) is not None and s.mean is not None]
            if points:
                ax.errorbar(
                    [x for x, _, _ in points],
                    [100 * m for _, m, _ in points],
                    yerr=[100 * sd for _, _, sd in points],
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


def render(board: str | Path, site: str | Path) -> tuple[Path, list[str]]:
    """Write the page, Markdown and CSV; return the page and the damaged entries left off it."""
    from evaluation.base import check_outputs

    check_outputs([k for k, _ in COLUMNS] + PAPER_COLUMNS, "leaderboard columns")
    board, site = Path(board), Path(site)
    site.mkdir(parents=True, exist_ok=True)
    state = collect(board)
    pages = _answer_pages(state, site)
    images, bad_runs = plots(board, site)
    damaged = state.damaged + bad_runs
    scales = {k: ("1-5" if k.startswith("geval.") else "rate") for k, _ in COLUMNS}
    head = ["Submission", "Model", "n", "Seeds"] + [h for _, h in COLUMNS] + ["Malformed", "Filed (UTC)", "Backends per metric", "Read first"]
    with (site / "leaderboard.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["dataset", "kind", "submission", "model", "url", "answers", "seeds", *[k for k, _ in COLUMNS], "malformed", "filed", "backends", "read first"]
        )
        for t in state.tables:
            for r in t.rows:
                values = [r.values.get(k) for k, _ in COLUMNS]
                fixed = [
                    t.dataset,
                    "paper reference" if r.reference else "partial submission" if r.partial else "submission",
                    r.name,
                    r.model,
                    r.url,
                    r.answers,
                    r.seeds,
                ]
                w.writerow([csv_safe(x) for x in fixed + values + [r.malformed, r.filed, r.backends, r.read_first]])
    md: list[str] = []
    sections: list[str] = []
    for t in state.tables:
        cells = [
            [r.name + (" *(paper)*" if r.reference else ""), r.model, str(r.answers), r.seeds]
            + [_value(r, k, scales[k]) for k, _ in COLUMNS]
            + [_cell(v) for v in (r.malformed, r.filed, r.backends, r.read_first)]  # as the page shows them: 0 malformed is 0, not –
            for r in t.rows
        ]
        md += [f"## {t.dataset}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        md += ["| " + " | ".join(c) + " |" for c in cells] + ([f"\n{t.note}"] if t.note else []) + [""]
        body = "\n".join(
            f'<tr class="{"reference" if r.reference else "submission"}">'
            + f"<td>{_link(r.url, r.name) if r.url else html.escape(r.name)}"
            + (' <span class="tag">paper</span>' if r.reference else "")
            + (f' <a class="answers" href="{_local("answers/" + r.name + ".html")}">answers</a>' if r.name in pages else "")
            + "</td>"
            + "".join(f'<td data-v="{v if isinstance(v, (int, float)) else ""}">{html.escape(_cell(v))}</td>' for v in (r.model, r.answers, r.seeds))
            + "".join(f'<td data-v="{"" if (v := r.values.get(k)) is None else v}">{html.escape(_value(r, k, scales[k]))}</td>' for k, _ in COLUMNS)
            + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in (r.malformed, r.filed, r.backends, r.read_first))
            + "</tr>"
            for r in t.rows
        )
        sections.append(
            f'<h2>{html.escape(t.dataset)}</h2>\n<table class="board"><thead><tr>{"".join(f"<th>{html.escape(h)}</th>" for h in head)}</tr></thead>'
            f"\n<tbody>\n{body}\n</tbody></table>" + (f'\n<p class="note">{html.escape(t.note)}</p>' if t.note else "")
        )
    scale_note = "Values x100 (rates); fluency is G-Eval's 1-5. n: answers scored. One table per dataset: numbers are only ranked against the same questions."
    (site / "leaderboard.md").write_text("# KaLMA leaderboard\n\n" + scale_note + "\n\n" + "\n".join(md))
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
th,td{{border:1px solid #ccc;padding:.3rem .5rem;text-align:right}} td:nth-child(-n+2),td:nth-last-child(-n+2){{text-align:left}}
th{{background:#f0f0f0;cursor:pointer;user-select:none}} tr.reference{{background:#fff8e1;font-style:italic}}
.tag{{font-size:.7rem;background:#f0c36d;border-radius:3px;padding:0 .3rem;font-style:normal}} .note{{font-size:.8rem;color:#555}}
figure{{display:inline-block;margin:1rem}} img{{max-width:700px;border:1px solid #ddd}} .damaged{{color:#a00}}
</style></head>
<body data-images="{len(images)}" data-images-loaded="0" data-tables="{len(state.tables)}" data-damaged="{len(damaged)}">
<h1>KaLMA leaderboard</h1>
<p>{html.escape(scale_note)} Micro scores on specific questions; click a column to sort. The last column names the model behind
each metric; <em>lexical</em> is a rule-based approximation of entailment. Also as <a href="./leaderboard.md">Markdown</a> and
<a href="./leaderboard.csv">CSV</a>.</p>
{"".join(sections)}
{f'<h2>Not shown</h2><ul class="damaged">{missing}</ul>' if damaged else ""}
<h2>Ablations</h2>
<p>Each point is the mean over seeds, its bar ± one sample standard deviation; dashed: the paper's ChatGPT curves on BioKaLMA.</p>
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
