"""`kalma leaderboard DIR -o SITE`: a static page of every submission beside the paper's
reference rows, the ablation plots (PNG and SVG), and the same table as Markdown and CSV.

DIR holds `submissions/<name>/submission.json` (from `kalma bench submit`) and, optionally,
`runs/<name>/results.json` (from `kalma bench run`), whose ablations become plots.
"""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from kalma.jsonl import RecordError
from kalma.schema import Summary, metric_value

# (qualified output, heading): the board reads each declared output by name, so a renamed one fails `render`.
COLUMNS = [
    ("alignment.alignment_micro", "Align."),
    ("citation.correctness_micro", "Corr."),
    ("citation.precision_micro", "Prec."),
    ("citation.recall_micro", "Rec."),
    ("citation.f1_micro", "F1"),
    ("na.na_precision_micro", "[NA] P"),
    ("na.na_recall_micro", "[NA] R"),
    ("geval.fluency_mean", "Fluency"),
]
UNSCALED = {"geval.fluency_mean"}  # a 1-5 score, shown as is
# KaLMA paper, Table 3 (micro, specific questions) and Table 5 / Figure 5 (ChatGPT, temperature 0.5).
PAPER_COLUMNS = ["alignment.alignment_micro", "citation.correctness_micro", "citation.precision_micro", "citation.recall_micro", "citation.f1_micro"]
PAPER_ROWS = [
    {"name": name, **dict(zip(PAPER_COLUMNS, values))}
    for name, values in (
        ("GPT-4 (0.5)", (92.0, 97.6, 36.0, 43.6, 39.4)),
        ("ChatGPT (0.5)", (84.5, 94.8, 29.9, 49.0, 37.2)),
        ("LLaMA-7B", (47.8, 70.2, 7.7, 41.1, 13.0)),
    )
]
PAPER_REMOVAL: dict[str, list[float]] = {
    "k": [0, 1, 2, 3],
    "precision": [30.1, 26.1, 21.0, 16.3],
    "recall": [57.1, 42.5, 31.4, 20.4],
    "f1": [39.4, 32.3, 25.2, 18.1],
}
PAPER_RETRIEVAL: dict[str, list[float]] = {"accuracy": [100, 80], "recall": [57.1, 42.5]}


class _Submission(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    model: str = ""
    seed: int | str = ""


class _Filed(BaseModel):
    """What the board reads of a `submission.json`; the rest (when filed, what it replaced, the
    malformed count) is read from `model_extra`."""

    model_config = ConfigDict(extra="allow")
    submission: _Submission
    summary: Summary


class _Table(BaseModel):
    condition: str
    llm: str
    model_config = ConfigDict(extra="allow")


class _Results(BaseModel):
    """What the plots read of a `results.json` from `kalma bench run`."""

    model_config = ConfigDict(extra="allow")
    tables: dict[str, list[_Table]] = {}


M = TypeVar("M", bound=BaseModel)


def _load(path: Path, model: type[M]) -> M:
    """A board file, or one error naming it with the line or field that is wrong: a hand-edited
    or truncated entry stops the page instead of vanishing from it."""
    try:
        return model.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise RecordError(path, exc.lineno, "", f"not valid JSON ({exc.msg}); file the entry again, or remove its folder") from None
    except UnicodeDecodeError as exc:
        raise RecordError(path, 1, "", f"not UTF-8 (byte {exc.start})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise RecordError(path, 1, ".".join(str(p) for p in first["loc"]), first["msg"]) from None


def _pct(v: float | None) -> float | None:
    return None if v is None else (100 * v if abs(v) <= 1 else v)


def _filed(rec: dict[str, Any]) -> str:
    """When the entry was filed, and when the one it replaced had been (a resubmission)."""
    filed = str(rec.get("filed") or "")[:16].replace("T", " ")
    old = (rec.get("replaces") or {}).get("filed")
    return filed + (f" (replaces the entry of {str(old)[:16].replace('T', ' ')})" if old else "")


def collect(board: Path) -> list[dict[str, Any]]:
    rows = []
    for f in sorted(board.glob("submissions/*/submission.json")):
        if f.parent.name.startswith("."):  # a submission still being scored, or one cut short
            continue
        filed = _load(f, _Filed)
        rec, s, meta = filed.model_extra or {}, filed.summary, filed.submission
        row = {
            "name": meta.name,
            "model": meta.model + (" (fixed patterns, not a model)" if meta.model == "template" else ""),
            "seed": meta.seed,
            "reference": False,
            "backends": "; ".join(f"{k}: {v}" for k, v in s.models.items() if k != "answers"),
            "malformed": rec.get("malformed_citations", 0),
            "filed": _filed(rec),
        }
        for key, _ in COLUMNS:
            v = metric_value(s.metrics, key)
            row[key] = v if key in UNSCALED else _pct(v)
        rows.append(row)
    for p in PAPER_ROWS:
        rows.append(
            {
                **{k: None for k, _ in COLUMNS},
                **p,
                "model": p["name"],
                "seed": "",
                "reference": True,
                "malformed": "",
                "filed": "",
                "backends": "paper's setting: alignment by TRUE (T5-11B); reference values, not rerun here",
            }
        )
    return rows


def plots(board: Path, site: Path) -> list[str]:
    """Ablation figures from every run under board/runs, as PNG and SVG. Returns the PNG names."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for res_file in sorted(board.glob("runs/*/results.json")):
        run = res_file.parent.name
        tables = {exp: [r.model_dump() for r in rows] for exp, rows in _load(res_file, _Results).tables.items()}
        for exp, title in (("knowledge_removal", "Knowledge removal"), ("retrieval", "Retrieval accuracy")):
            rows = tables.get(exp)
            if not rows:
                continue
            fig, ax = plt.subplots(figsize=(6, 3.6), dpi=110)
            for llm in sorted({r["llm"] for r in rows}):
                mine = sorted((r for r in rows if r["llm"] == llm), key=lambda r: float(r["condition"].split("=")[-1]))
                xs = [float(r["condition"].split("=")[-1]) for r in mine]
                for metric, style in (
                    ("citation.precision_micro", "o-"),
                    ("citation.recall_micro", "s-"),
                    ("citation.f1_micro", "^-"),
                    ("na.na_recall_micro", "x:"),
                ):
                    ys = [_pct(r[metric]["mean"]) if r.get(metric) else None for r in mine]
                    if any(y is not None for y in ys):
                        ax.plot(
                            [x for x, y in zip(xs, ys) if y is not None],
                            [y for y in ys if y is not None],
                            style,
                            label=f"{llm}: {metric.split('.')[-1].replace('_micro', '')}",
                        )
            ref = PAPER_REMOVAL if exp == "knowledge_removal" else PAPER_RETRIEVAL
            xs = ref["k"] if exp == "knowledge_removal" else ref["accuracy"]
            for metric in ("precision", "recall", "f1"):
                if metric in ref:
                    ax.plot(xs, ref[metric], "--", color="grey", alpha=0.7, label=f"paper ChatGPT: {metric}")
            ax.set_xlabel("removed triples k" if exp == "knowledge_removal" else "retrieval accuracy (%)")
            ax.set_ylabel("micro score (×100)")
            ax.set_title(f"{title} ({run}; entailment: {rows[0]['models'].get('na', rows[0]['models'].get('alignment', '?')).split(' (')[0]})", fontsize=9)
            if exp == "retrieval":
                ax.invert_xaxis()
            else:
                ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            ax.legend(fontsize=6, ncol=2)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            stem = f"{run}-{exp}"
            fig.savefig(site / f"{stem}.png")
            fig.savefig(site / f"{stem}.svg")
            plt.close(fig)
            made.append(f"{stem}.png")
    return made


def _cell(v: Any) -> str:
    if v is None or v == "":
        return "–"
    return f"{v:.1f}" if isinstance(v, float) else html.escape(str(v))


def render(board: str | Path, site: str | Path) -> Path:
    from evaluation.base import check_outputs

    check_outputs([k for k, _ in COLUMNS] + PAPER_COLUMNS, "leaderboard columns")
    board, site = Path(board), Path(site)
    site.mkdir(parents=True, exist_ok=True)
    rows = collect(board)
    images = plots(board, site)
    head = ["Submission", "Model", "Seed"] + [h for _, h in COLUMNS] + ["Malformed", "Filed (UTC)", "Backends per metric"]
    keys = ["name", "model", "seed"] + [k for k, _ in COLUMNS] + ["malformed", "filed", "backends"]
    with (site / "leaderboard.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head + ["kind"])
        for r in rows:
            w.writerow([r.get(k) if r.get(k) is not None else "" for k in keys] + ["paper reference" if r["reference"] else "submission"])
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join((_cell(r.get(k)) + (" *(paper)*" if k == "name" and r["reference"] else "")) for k in keys) + " |" for r in rows]
    (site / "leaderboard.md").write_text("\n".join(md) + "\n\nValues ×100 (fluency 1-5). Rows marked (paper) are the KaLMA paper's Table 3, for reference.\n")
    body = "\n".join(
        f'<tr class="{"reference" if r["reference"] else "submission"}">'
        + "".join(
            f'<td data-v="{r.get(k) if isinstance(r.get(k), (int, float)) else ""}">{_cell(r.get(k))}'
            + (' <span class="tag">paper</span>' if k == "name" and r["reference"] else "")
            + "</td>"
            for k in keys
        )
        + "</tr>"
        for r in rows
    )
    figs = "\n".join(
        f'<figure><img src="{html.escape(i)}" alt="{html.escape(i)}" onload="loaded()" onerror="failed(this)">'
        f'<figcaption><a href="{html.escape(i[:-4])}.svg">SVG</a></figcaption></figure>'
        for i in images
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>KaLMA leaderboard</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2rem;color:#222}} table{{border-collapse:collapse;font-size:.85rem}}
th,td{{border:1px solid #ccc;padding:.3rem .5rem;text-align:right}} td:nth-child(-n+3),td:last-child{{text-align:left}}
th{{background:#f0f0f0;cursor:pointer;user-select:none}} tr.reference{{background:#fff8e1;font-style:italic}}
.tag{{font-size:.7rem;background:#f0c36d;border-radius:3px;padding:0 .3rem;font-style:normal}}
figure{{display:inline-block;margin:1rem}} img{{max-width:560px;border:1px solid #ddd}}
</style></head>
<body data-images="{len(images)}" data-images-loaded="0">
<h1>KaLMA leaderboard</h1>
<p>Micro scores ×100 on the benchmark's dataset, specific questions; fluency is G-Eval 1-5. Click a column to sort.
Rows marked <span class="tag">paper</span> are the KaLMA paper's Table 3, shown for reference and not rerun here.
The last column names the model behind each metric; <em>lexical</em> is a rule-based approximation of entailment.</p>
<table id="board"><thead><tr>{"".join(f"<th>{html.escape(h)}</th>" for h in head)}</tr></thead>
<tbody>
{body}
</tbody></table>
<p>Also as <a href="leaderboard.md">Markdown</a> and <a href="leaderboard.csv">CSV</a>.</p>
<h2>Ablations</h2>
{figs or "<p>No bench runs found.</p>"}
<script>
function loaded(){{const b=document.body;b.dataset.imagesLoaded=String(+b.dataset.imagesLoaded+1);}}
function failed(img){{img.alt="failed to load "+img.src;document.body.dataset.imageErrors=(+(document.body.dataset.imageErrors||0)+1);}}
document.querySelectorAll("#board th").forEach((th,i)=>th.addEventListener("click",()=>{{
  const tb=document.querySelector("#board tbody"), rows=[...tb.rows], asc=th.dataset.asc!=="1";
  rows.sort((a,b)=>{{const x=a.cells[i].dataset.v,y=b.cells[i].dataset.v;
    if(x!==""&&y!=="")return asc?x-y:y-x; if(x!=="")return -1; if(y!=="")return 1;
    return asc?a.cells[i].textContent.localeCompare(b.cells[i].textContent):b.cells[i].textContent.localeCompare(a.cells[i].textContent);}});
  th.dataset.asc=asc?"1":"0"; rows.forEach(r=>tb.appendChild(r));}}));
</script>
</body></html>
"""
    (site / "index.html").write_text(page)
    return site / "index.html"
