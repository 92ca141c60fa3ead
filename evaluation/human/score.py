"""People against the automatic numbers: the paper's Table 6 (alignment) and Table 2 (dataset
quality), with agreement between annotators and between the automatic metric and them.

Alignment, per model: automatic alignment on the sampled pairs (the entailment backend given,
on exactly the premise and hypothesis the metric reads) and on all of the model's pairs; human
alignment as the mean over units of the annotators' mean label, and as the share of units whose
majority says supported (ties are left out and counted); the gap, automatic minus human on the
same units, with a paired bootstrap interval; agreement among annotators (percent, Cohen's kappa
for two, Fleiss' kappa and Krippendorff's alpha for more) and of the automatic label with the
human majority (accuracy, kappa, confusion counts). The majority labels are written as a
`table:` entailment file, so that an evaluation can be rerun with people as the judge.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.base import show
from kalma.jsonl import dumps
from kalma.resume import file_digest
from kalma.schema import normalize_text

from . import agreement as ag
from .labels import unlabelled
from .sample import alignment_pairs, load_entries, located
from .units import LABELS, Label, Sample

# The paper's figures, set beside ours (KaLMA Table 6 and Table 2; Appendix C's agreement).
PAPER_TABLE6 = {"ChatGPT (0.5)": (84.5, 82.0), "LLaMA-7B": (47.8, 45.5), "Vicuna-13B": (66.9, 64.5)}
PAPER_TABLE2 = {
    "authenticity": {"general": 1.00, "specific": 1.00},
    "relevance": {"general": 0.73, "specific": 0.84},
    "naturalness": {"general": 4.38, "specific": 3.52},
    "significance": {"general": 3.94, "specific": 3.68},
}
MAJORITY_FILE, REPORT_JSON, REPORT_MD = "majority.jsonl", "human.json", "human.md"


def _by_unit(labels: Sequence[Label], field: str) -> dict[str, dict[str, Any]]:
    """{unit id: {annotator: label}} for one field."""
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for lb in labels:
        if field in lb.labels:
            out[lb.unit_id][lb.annotator] = lb.labels[field]
    return out


def annotator_agreement(
    by_unit: dict[str, dict[str, Any]], units: Sequence[str], level: str = "nominal", within: float = 0, scale: Sequence[int] | None = None
) -> dict[str, Any]:
    """Agreement among annotators over `units`: percent agreement, Cohen's kappa (two
    annotators), Fleiss' kappa (three or more, over the units every one labelled), alpha.
    `scale`: the rating's declared values (1-5), which weighted kappa steps on."""
    annotators = sorted({a for u in units for a in by_unit.get(u, {})})
    rows = [[by_unit[u][a] for a in annotators if a in by_unit.get(u, {})] for u in units]
    both = [u for u in units if len(by_unit.get(u, {})) == len(annotators)]
    out: dict[str, Any] = {"annotators": annotators, "units_with_two_labels": sum(len(r) >= 2 for r in rows)}
    out["percent"] = ag.percent_agreement(rows, within)
    if len(annotators) == 2:
        a, b = annotators
        weights = None if level == "nominal" else "linear"
        out["cohen_kappa"] = ag.cohen([by_unit[u][a] for u in both], [by_unit[u][b] for u in both], weights, scale)
        out["cohen_units"] = len(both)
    elif len(annotators) > 2:
        out["fleiss_kappa"] = ag.fleiss([[by_unit[u][a] for a in annotators] for u in both])
        out["fleiss_units"] = len(both)
    out["krippendorff_alpha"] = ag.alpha([[by_unit.get(u, {}).get(a) for u in units] for a in annotators], level)
    return out


def _majority(votes: Sequence[int]) -> int | None:
    yes = sum(votes)
    return 1 if 2 * yes > len(votes) else 0 if 2 * yes < len(votes) else None


def score_alignment(sample: Sample, labels: Sequence[Label], nli: str, threshold: float = 0.5, seed: int = 0) -> dict[str, Any]:
    from kalma.models import get_entailment

    ent = get_entailment(nli)
    votes = _by_unit(labels, "supported")
    labelled = [u for u in sample.units if votes.get(u.unit_id)]
    auto = dict(zip([u.unit_id for u in labelled], (p >= threshold for p in ent.probs([(u.premise, u.hypothesis) for u in labelled]))))
    everything = _all_pairs_alignment(sample, nli, threshold)
    models: dict[str, Any] = {}
    for model in sorted(sample.info["models"]):
        mine = [u.unit_id for u in labelled if u.model == model]
        human = [statistics.fmean(votes[u].values()) for u in mine]
        a = [float(auto[u]) for u in mine]
        decided = [(m, float(auto[u])) for u in mine if (m := _majority(list(votes[u].values()))) is not None]
        row: dict[str, Any] = {
            "sampled": sample.info["models"][model]["sampled"],
            "labelled": len(mine),
            "auto_sampled": statistics.fmean(a) if a else None,
            "auto_all": everything.get(model, {}).get("alignment"),
            "auto_all_pairs": everything.get(model, {}).get("pairs", sample.info["models"][model]["pairs"]),
            "human": statistics.fmean(human) if human else None,
            "human_ci": ag.bootstrap([human], statistics.fmean, seed),
            "human_majority": statistics.fmean(m for m, _ in decided) if decided else None,
            "ties": len(mine) - len(decided),
            "gap": statistics.fmean(a) - statistics.fmean(human) if human else None,
            "gap_ci": ag.bootstrap([a, human], lambda x, y: statistics.fmean(x) - statistics.fmean(y), seed),
            "annotators": annotator_agreement(votes, mine),
            "auto_vs_majority": _auto_vs_majority(decided),
        }
        models[model] = row
    every = [u.unit_id for u in labelled]
    decided_all = [(m, float(auto[u])) for u in every if (m := _majority(list(votes[u].values()))) is not None]
    return {
        "task": "alignment",
        "entailment": nli + (" (rule-based approximation, not an NLI model)" if ent.approximate else ""),
        "threshold": threshold,
        "units": len(sample.units),
        "labels": sum(len(v) for v in votes.values()),
        "unlabelled": unlabelled(sample, labels),
        "all_pairs_note": everything.get("", {}).get("note"),
        "models": models,
        "overall": {"annotators": annotator_agreement(votes, every), "auto_vs_majority": _auto_vs_majority(decided_all)},
    }


def _auto_vs_majority(decided: Sequence[tuple[int, float]]) -> dict[str, Any]:
    human, auto = [m for m, _ in decided], [int(a) for _, a in decided]
    return {"units": len(decided), "accuracy": ag.accuracy(human, auto), "cohen_kappa": ag.cohen(human, auto), "confusion": ag.confusion(human, auto)}


def _all_pairs_alignment(sample: Sample, nli: str, threshold: float) -> dict[str, dict[str, Any]]:
    """Automatic alignment per model over every pair of the answers files sampled from, read
    again; {"": {"note": why}} when they changed or are gone (the column is then n/a)."""
    from kalma.models import get_entailment

    sources, dataset = sample.info["answers"], sample.info["dataset"]
    where = {f["path"]: located(sample, f["path"]) for f in [dataset, *sources]}
    for f in [dataset, *sources]:
        if not where[f["path"]].is_file():
            return {"": {"note": f"{where[f['path']]} is gone since sampling: automatic alignment over all pairs is n/a"}}
        if file_digest(where[f["path"]]) != f["digest"]:
            return {"": {"note": f"{where[f['path']]} changed since sampling: automatic alignment over all pairs is n/a"}}
    entries = load_entries(where[dataset["path"]])
    verbalized = bool(sample.info.get("verbalized"))
    pairs = [p for f in sources for p in alignment_pairs(where[f["path"]], entries, verbalized, f.get("model"))]
    probs = get_entailment(nli).probs([(p.premise, p.hypothesis) for p in pairs]) if pairs else []
    out: dict[str, list[bool]] = defaultdict(list)
    for p, prob in zip(pairs, probs):
        out[p.model].append(prob >= threshold)
    return {m: {"alignment": sum(v) / len(v), "pairs": len(v)} for m, v in out.items()}


def majority_table(sample: Sample, labels: Sequence[Label]) -> list[dict[str, Any]]:
    """The human judgements as `table:` entailment rows, one per distinct (premise, hypothesis):
    the annotators' majority label. A tie has no majority and no row: one rule with the report's
    human majority, which leaves ties out (and `table:…,unjudged=skip` counts them unjudged)."""
    votes = _by_unit(labels, "supported")
    pooled: dict[tuple[str, str], list[int]] = defaultdict(list)
    for u in sample.units:
        pooled[(normalize_text(u.premise), normalize_text(u.hypothesis))] += list(votes.get(u.unit_id, {}).values())
    rows = []
    for (premise, hyp), v in pooled.items():
        if not v:
            continue
        m = _majority(v)
        if m is not None:
            rows.append({"premise": premise, "hypothesis": hyp, "label": "entailment" if m else "not_entailment", "annotators": len(v), "supported": sum(v)})
    return rows


def score_dataset(sample: Sample, labels: Sequence[Label], seed: int = 0) -> dict[str, Any]:
    """Table 2: per setting, the mean of each criterion (relevance: the share of the minimum set
    marked necessary), with the paper's figures and Appendix C's agreement measures."""
    fields = {f: _by_unit(labels, f) for f in LABELS["dataset"]}
    settings: dict[str, Any] = {}
    for setting in sample.info["settings"]:
        units = [u for u in sample.units if u.setting == setting and fields["authenticity"].get(u.unit_id)]
        ids = [u.unit_id for u in units]
        sizes = {u.unit_id: len(u.shown.get("knowledge") or []) for u in units}
        relevance = {
            u: {a: len(ticked) / sizes[u] for a, ticked in fields["necessary"].get(u, {}).items()} for u in ids if sizes[u]
        }  # per unit and annotator: the share of the minimum set marked necessary
        row: dict[str, Any] = {"labelled": len(units)}
        for name in ("authenticity", "naturalness", "significance"):
            per_unit = [statistics.fmean(fields[name][u].values()) for u in ids]
            row[name] = {"mean": statistics.fmean(per_unit) if per_unit else None, "ci": ag.bootstrap([per_unit], statistics.fmean, seed)}
        rel = [statistics.fmean(v.values()) for v in relevance.values() if v]
        row["relevance"] = {"mean": statistics.fmean(rel) if rel else None, "ci": ag.bootstrap([rel], statistics.fmean, seed), "units": len(rel)}
        # Appendix C: exact agreement for 0/1 labels (relevance per knowledge line), within 1 for ratings
        per_line = {f"{u}#{i}": {a: int(i in ticked) for a, ticked in fields["necessary"].get(u, {}).items()} for u in ids for i in range(1, sizes[u] + 1)}
        row["agreement"] = {
            "authenticity": annotator_agreement(fields["authenticity"], ids),
            "relevance": annotator_agreement(per_line, list(per_line)),
            "naturalness": annotator_agreement(fields["naturalness"], ids, "ordinal", within=1, scale=LABELS["dataset"]["naturalness"]),
            "significance": annotator_agreement(fields["significance"], ids, "ordinal", within=1, scale=LABELS["dataset"]["significance"]),
        }
        settings[setting] = row
    return {"task": "dataset", "units": len(sample.units), "labels": len(labels), "unlabelled": unlabelled(sample, labels), "settings": settings}


def _ci(ci: Sequence[float] | None, scale: str = "rate") -> str:
    return f"[{show(ci[0], scale)}, {show(ci[1], scale)}]" if ci else "n/a"


def _k(x: float | None) -> str:
    return "n/a (undefined: one label throughout)" if x is None else f"{x:.3f}"


def _two(x: float | None) -> str:
    """Table 2's figures, as the paper prints them: two decimals (1.00, 0.73, 4.38)."""
    return "n/a" if x is None else f"{x:.2f}"


def _agreement_line(a: dict[str, Any], within: bool = False) -> str:
    parts = [f"{'within 1' if within else 'agreement'} {show(a['percent'])}% over {a['units_with_two_labels']} units"]
    if "cohen_kappa" in a:
        parts.append(f"Cohen's kappa {_k(a['cohen_kappa'])} ({a['cohen_units']} units)")
    if "fleiss_kappa" in a:
        parts.append(f"Fleiss' kappa {_k(a['fleiss_kappa'])} ({a['fleiss_units']} units)")
    parts.append(f"Krippendorff's alpha {_k(a['krippendorff_alpha'])}")
    return f"{len(a['annotators'])} annotators: " + ", ".join(parts)


def markdown(report: dict[str, Any], sample: Sample) -> str:
    lines = [f"# Human evaluation: {'text-citation alignment (KaLMA Table 6)' if report['task'] == 'alignment' else 'dataset quality (KaLMA Table 2)'}", ""]
    lines += [f"Sample {sample.digest} ({sample.path}), seed {sample.info['seed']}: {report['units']} units, {report['labels']} labels."]
    if report["unlabelled"]:
        shown = ", ".join(report["unlabelled"][:5]) + (", …" if len(report["unlabelled"]) > 5 else "")
        lines += [
            "",
            f"Read first: {len(report['unlabelled'])} of {report['units']} units have no label from anyone ({shown}); they are left out of every figure.",
        ]
    lines.append("")
    if report["task"] == "alignment":
        lines += [f"Automatic alignment by {report['entailment']}, threshold {report['threshold']}. Rates x100; 95% bootstrap intervals.", ""]
        if report["all_pairs_note"]:
            lines += [f"Note: {report['all_pairs_note']}.", ""]
        head: tuple[str, ...] = ("model", "pairs (all)", "labelled", "automatic (all pairs)", "automatic (sampled)", "human (mean)", "human CI")
        head += ("human (majority)", "gap", "gap CI")
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for m, r in report["models"].items():
            cells: tuple[Any, ...] = (m, r["auto_all_pairs"], r["labelled"], show(r["auto_all"]), show(r["auto_sampled"]), show(r["human"]), _ci(r["human_ci"]))
            cells += (f"{show(r['human_majority'])} ({r['ties']} ties)", show(r["gap"]), _ci(r["gap_ci"]))
            lines.append("| " + " | ".join(map(str, cells)) + " |")
        for m, (auto, human) in PAPER_TABLE6.items():
            lines.append(f"| *{m}, paper* | – | 100 | – | *{auto}* | *{human}* | – | – | *{auto - human:.1f}* | – |")
        lines += ["", "Agreement among annotators, and of the automatic label with the human majority (ties left out):", ""]
        for m, r in [*report["models"].items(), ("all models", report["overall"])]:
            v = r["auto_vs_majority"]
            c = v["confusion"]
            lines.append(f"- {m}: {_agreement_line(r['annotators'])}")
            lines.append(
                f"  - automatic vs majority over {v['units']} units: accuracy {show(v['accuracy'])}%, Cohen's kappa {_k(v['cohen_kappa'])}; "
                f"both supported {c['both_yes']}, both not {c['both_no']}, human only {c['human_yes_auto_no']}, automatic only {c['human_no_auto_yes']}"
            )
        lines += ["", "Paper (Appendix C): two annotators per model, agreement 90% (ChatGPT), 97% (LLaMA-7B), 89% (Vicuna-13B)."]
    else:
        settings = report["settings"]
        lines += ["| criterion (full score) | " + " | ".join(f"{s} | {s} 95% CI | {s}, paper" for s in settings) + " |"]
        lines += ["|---|" + "---|---|---|" * len(settings)]
        for name, full in (("authenticity", 1), ("relevance", 1), ("naturalness", 5), ("significance", 5)):
            row = []
            for s, r in settings.items():
                v = r[name]
                ci = f"[{_two(v['ci'][0])}, {_two(v['ci'][1])}]" if v["ci"] else "n/a"
                row.append(f"{_two(v['mean'])} | {ci} | {PAPER_TABLE2[name].get(s, '–')}")
            lines.append(f"| {name} ({full}) | " + " | ".join(row) + " |")
        lines += ["", "Agreement between annotators (Appendix C: 100% authenticity, 86% relevance, 92% and 90% of scores within 1):", ""]
        for s, r in settings.items():
            for name, a in r["agreement"].items():
                lines.append(f"- {s}, {name}: {_agreement_line(a, within=name in ('naturalness', 'significance'))}")
    return "\n".join(lines) + "\n"


def write_report(report: dict[str, Any], sample: Sample, labels: Sequence[Label], out_dir: str | Path, provenance: dict[str, Any]) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / REPORT_JSON, out / REPORT_MD]
    paths[0].write_text(dumps({**report, "sample": {"path": str(sample.path), "digest": sample.digest}, "provenance": provenance}, indent=1) + "\n")
    paths[1].write_text(markdown(report, sample))
    if report["task"] == "alignment":
        paths.append(out / MAJORITY_FILE)
        paths[2].write_text("".join(dumps(r, ensure_ascii=False) + "\n" for r in majority_table(sample, labels)))
    return paths


def human_check(path: str | Path, nli: str) -> str:
    """The line a report carries when its alignment was checked against people
    (`alignment:human=REPORT`); a report on another entailment backend is refused."""
    from kalma.errors import ConfigError

    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"alignment:human={path}: cannot read it ({exc})") from None
    if not isinstance(report, dict) or report.get("task") != "alignment":
        raise ConfigError(f"alignment:human={path}: not an alignment report of `kalma human score` ({REPORT_JSON})")
    if str(report.get("entailment", "")).split(" (")[0] != nli:
        raise ConfigError(f"alignment:human={path}: it checks {report.get('entailment')!r} against people, not this run's --nli {nli!r}")
    overall = report["overall"]
    v, a = overall["auto_vs_majority"], overall["annotators"]
    kappa = a.get("cohen_kappa", a.get("fleiss_kappa"))
    return (
        f"Alignment checked against {report['labels']} human labels on {v['units']} pairs ({len(a['annotators'])} annotators, "
        f"inter-annotator kappa {_k(kappa)}): {report['entailment']} agrees with the human majority on {show(v['accuracy'])}% (kappa {_k(v['cohen_kappa'])})."
    )
