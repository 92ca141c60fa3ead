"""`kalma bench run CONFIG -o RUNDIR`: the paper's experiments from one TOML file.

    name = "demo"
    dataset = "demo"            # a dataset.jsonl, or "demo" for the bundled questions
    kg = "demo"
    llms = ["template", "smollm2"]
    seeds = [0, 1, 2]
    temperature = 0.5
    setting = "specific"
    retrieval = "gold"          # what main and settings give the model: "gold" pools, or "ner" (the paper's pipeline)
    nli = "lexical"
    judge = ""                  # G-Eval judge, "" to skip
    metrics = ["citation", "alignment", "na"]

    [experiments.main]                       # Table 3: every LLM x seed
    retrieval = "ner"
    [experiments.knowledge_removal]          # Table 5, Figure 4: k triples removed (nested)
    llms = ["template"]
    k = [0, 1, 2, 3]
    [experiments.retrieval]                  # Figure 5: gold graphs replaced (nested steps)
    llms = ["template"]
    accuracies = [1.0, 0.8, 0.6, 0.4, 0.2]
    [experiments.settings]                   # Table 7: general vs specific questions
    llms = ["template"]

Every experiment runs each LLM of its `llms` under each of its `seeds` (default: the top-level
lists); a key an experiment does not use is refused when the file loads, like a misspelt one. Every
condition writes its answers file and evaluation folder under RUNDIR; `results.json` lists each
number with the dataset, files, models and configuration that produced it, and the tables give
each figure as the mean over seeds ± the sample standard deviation, with the number of answers.
Reruns resume.
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
import tomllib
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from baselines.pipeline import BaselineConfig, answer_dataset
from evaluation.base import DEFAULT_METRICS, EvalOptions, check_outputs, f1, get_metric, show
from evaluation.figures import harmonic
from evaluation.runner import SCORES_FILE, dataset_limits, evaluate
from evaluation.uncertainty import Estimate, Interval, Table, intervals, table
from kalma.errors import ConfigError
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.kg import open_source
from kalma.provenance import provenance
from kalma.registry import spec_of, suggest
from kalma.removal import Condition, remove_knowledge
from kalma.schema import AnswerScores, DatasetEntry, Setting, first_entries, metric_value

from .ablations import retrieval_accuracy
from .records import BenchResults, BenchRow, DatasetId, Stat, TableRow

HEADLINE = [
    "alignment.alignment_micro",
    "citation.correctness_micro",
    "citation.precision_micro",
    "citation.recall_micro",
    "citation.f1_micro",
    "na.na_precision_micro",
    "na.na_recall_micro",
    "na.na_f1_micro",
]
SHORT = {
    "alignment.alignment_micro": "align.",
    "citation.correctness_micro": "corr.",
    "citation.precision_micro": "prec.",
    "citation.recall_micro": "rec.",
    "citation.f1_micro": "F1",
    "na.na_precision_micro": "[NA] P",
    "na.na_recall_micro": "[NA] R",
    "na.na_f1_micro": "[NA] F1",
}
WITH_SUPPORT = {"na.na_precision_micro", "na.na_recall_micro"}  # their denominators are often empty: shown beside them

Finite = Annotated[float, Field(allow_inf_nan=False)]
# A component as a spec string or as a TOML table, `{name = "conner", agg = "mean"}`: kept as the spec.
Spec = Annotated[str, BeforeValidator(lambda v: spec_of(v) if isinstance(v, dict) else v)]
Retrieval = Literal["gold", "ner"]


class _Experiment(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    llms: list[Spec] | None = Field(default=None, min_length=1)
    seeds: list[int] | None = Field(default=None, min_length=1)
    metrics: list[Spec] | None = Field(default=None, min_length=1)


class MainExperiment(_Experiment):
    """Table 3: every LLM under every seed, with the run's retrieval or its own."""

    retrieval: Retrieval | None = None


class RemovalExperiment(_Experiment):
    """Table 5, Figure 4: k minimum-set triples removed from the gold pools."""

    k: list[Annotated[int, Field(ge=0)]] = Field(default=[0, 1, 2, 3], min_length=1)


class RetrievalExperiment(_Experiment):
    """Figure 5: a share of the gold person graphs replaced by other people's."""

    accuracies: list[Annotated[float, Field(gt=0.0, le=1.0)]] = Field(default=[1.0, 0.8, 0.6, 0.4, 0.2], min_length=1)


class SettingsExperiment(_Experiment):
    """Table 7: the general and the specific question of every entry."""

    retrieval: Retrieval | None = None


class Experiments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    main: MainExperiment | None = None
    knowledge_removal: RemovalExperiment | None = None
    retrieval: RetrievalExperiment | None = None
    settings: SettingsExperiment | None = None

    @model_validator(mode="after")
    def _something(self) -> Experiments:
        if not self.chosen():
            raise ValueError("no experiment: add at least one [experiments.<name>] table (main, knowledge_removal, retrieval, settings)")
        return self

    def chosen(self) -> dict[str, _Experiment]:
        return {name: ex for name in type(self).model_fields if (ex := getattr(self, name)) is not None}


class BenchConfig(BaseModel):
    """A bench TOML file, type-checked: a wrong key or value is an error naming the key."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = "bench"
    dataset: str = "demo"
    kg: Spec = "demo"
    llms: list[Spec] = Field(default=["template"], min_length=1)
    seeds: list[int] = Field(default=[0], min_length=1)
    temperature: Annotated[Finite, Field(ge=0.0)] = 0.0
    setting: Setting = "specific"
    retrieval: Retrieval = "gold"
    nli: Spec = "lexical"
    judge: Spec = ""
    lm: Spec = ""
    compat: Literal["default", "original"] = "default"
    metrics: list[Spec] = Field(default=list(DEFAULT_METRICS), min_length=1)
    max_tokens: Annotated[int, Field(gt=0)] = 160
    experiments: Experiments

    @classmethod
    def load(cls, path: str | Path) -> BenchConfig:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from None
        try:
            cfg = cls.model_validate(data)
        except ValidationError as exc:
            errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")  # a misspelt key first
            first = errors[0]
            key = ".".join(str(p) for p in first["loc"])
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            if first["loc"] == ("experiments",) and first["type"] == "missing":
                raise ConfigError(f"{path}: no [experiments.*] table: nothing to run (main, knowledge_removal, retrieval, settings){more}") from None
            if first["type"] == "extra_forbidden":
                known = _keys_at(cls, first["loc"][:-1])
                raise ConfigError(f"{path}: unknown key '{key}'.{suggest(str(first['loc'][-1]), known)}{more}") from None
            raise ConfigError(f"{path}: key '{key}': {first['msg'].removeprefix('Value error, ')}{more}") from None
        for key, check, spec in cfg.components():
            try:
                check(spec)
            except ConfigError as exc:
                raise ConfigError(f"{path}: key '{key}': {exc}") from None
        if cfg.dataset != "demo" and not Path(cfg.dataset).is_file():  # checked now, not after the first models load
            raise ConfigError(f"{path}: key 'dataset': no such file {cfg.dataset!r} (relative paths are read from {Path.cwd()})")
        return cfg

    def components(self) -> list[tuple[str, Callable[[str], None], str]]:
        """(key, checker, spec) of every component the file names, to check before any work."""
        from evaluation.base import METRICS
        from kalma.kg import check_source
        from kalma.models import ENTAILMENT, LLMS, SCORERS

        out: list[tuple[str, Callable[[str], None], str]] = [("kg", check_source, self.kg), ("nli", ENTAILMENT.check, self.nli)]
        out += [(k, LLMS.check if k == "judge" else SCORERS.check, s) for k, s in (("judge", self.judge), ("lm", self.lm)) if s]
        out += [(f"llms.{i}", LLMS.check, s) for i, s in enumerate(self.llms)]
        out += [(f"metrics.{i}", METRICS.check, s) for i, s in enumerate(self.metrics)]
        for name, ex in self.experiments.chosen().items():
            out += [(f"experiments.{name}.llms.{i}", LLMS.check, s) for i, s in enumerate(ex.llms or [])]
            out += [(f"experiments.{name}.metrics.{i}", METRICS.check, s) for i, s in enumerate(ex.metrics or [])]
        return out

    def options(self, seed: int) -> EvalOptions:
        """The scoring options of every evaluation this configuration runs (bench and demo alike)."""
        return EvalOptions(compat=self.compat, nli=self.nli, judge=self.judge or None, lm=self.lm or None, seed=seed)


def _keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the configuration's table at `loc` accepts, for "did you mean"."""
    for part in loc:
        field = model.model_fields.get(str(part))
        found = [a for a in (field.annotation, *typing.get_args(field.annotation)) if isinstance(a, type) and issubclass(a, BaseModel)] if field else []
        if not found:
            return []
        model = found[0]
    return list(model.model_fields)


def load_dataset(cfg: BenchConfig, rundir: Path) -> tuple[list[DatasetEntry], Path, DatasetId]:
    if cfg.dataset == "demo":
        from dataset_builder.demo import demo_entries

        path = rundir / "dataset.jsonl"
        if not path.exists():
            write_jsonl(path, demo_entries(open_source(cfg.kg)), "dataset", provenance(source="kalma demo questions"))
        entries = list(read_jsonl(path, DatasetEntry))
        return entries, path, DatasetId.of(entries, "kalma demo")
    entries = list(read_jsonl(cfg.dataset, DatasetEntry, kind="dataset"))
    return entries, Path(cfg.dataset), DatasetId.of(entries, DatasetId.title(cfg.dataset, entries))


def condition_file(*parts: str | int) -> str:
    """A file name for one condition: readable, and distinct for distinct conditions even where
    the readable part is not (`org/model` and `org_model` both read `org_model`)."""
    text = "-".join(str(p) for p in parts)
    readable = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text)[:120]
    return f"{readable}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


class Bench:
    def __init__(self, cfg: BenchConfig, rundir: str | Path, progress: bool = True, overwrite: bool = False, limit: int | None = None):
        self.cfg, self.rundir, self.progress, self.overwrite, self.limit = cfg, Path(rundir), progress, overwrite, limit
        self.rundir.mkdir(parents=True, exist_ok=True)
        entries, self.dataset_path, dataset = load_dataset(cfg, self.rundir)
        self.entries, self.limited = first_entries(entries, limit)
        # a limited run measures other questions: its dataset identity says so
        self.dataset = DatasetId.of(self.entries, f"{dataset.name} (first {limit})") if self.limited else dataset
        self.results: list[BenchRow] = []

    def condition(
        self, experiment: str, label: str, llm: str, seed: int, setting: Setting, retrieval: str, given: dict[str, Condition] | None = None
    ) -> BenchRow:
        """Answer and evaluate one condition; returns its row with provenance."""
        started = time.perf_counter()
        tag = condition_file(experiment, label, llm, f"s{seed}", setting, retrieval)
        answers = self.rundir / "answers" / f"{tag}.jsonl"
        answers.parent.mkdir(exist_ok=True)
        bcfg = BaselineConfig(
            llm=llm,
            kg=self.cfg.kg,
            retrieval="ner" if retrieval == "ner" else "gold",
            setting=setting,
            seeds=[seed],
            temperatures=[self.cfg.temperature],
            max_tokens=self.cfg.max_tokens,
        )
        desc = f"{experiment} {label} {llm} s{seed}"
        report = answer_dataset(
            self.entries,
            answers,
            bcfg,
            progress=self.progress,
            overwrite=self.overwrite,
            given={k: (c.kg, c.absent) for k, c in given.items()} if given is not None else None,
            desc=desc,
        )
        ex = self.cfg.experiments.chosen()[experiment]
        # Scores are derived from the answers: when new answers were written, score them afresh.
        summary = evaluate(
            self.dataset_path,
            answers,
            self.rundir / "eval" / tag,
            metrics=ex.metrics or self.cfg.metrics,
            options=self.cfg.options(seed),
            progress=self.progress,
            overwrite=self.overwrite or bool(report["written"]),
            desc=desc,
            limit=self.limit,
        )
        row = BenchRow(
            experiment=experiment,
            condition=label,
            llm=llm,
            seed=seed,
            setting=setting,
            retrieval=retrieval,
            answers=summary.counts.get("answers", 0),
            metrics=summary.metrics,
            support=summary.support,
            scales=summary.scales,
            models=summary.models,
            caveats=summary.caveats,
            answers_file=str(answers.relative_to(self.rundir)),
            eval_dir=str((self.rundir / "eval" / tag).relative_to(self.rundir)),
            notes=[c.note for c in (given or {}).values() if c.note],
            seconds=time.perf_counter() - started,
            from_cache=summary.counts.get("answers_from_cache", 0),
        )
        self.results.append(row)
        return row

    def seed_intervals(self, runs: list[BenchRow]) -> dict[str, Interval]:
        """The headline figures of one condition as its table row shows them, over its seeds, with
        their intervals over the dataset's entries (`over_seeds`)."""
        ex = self.cfg.experiments.chosen()[runs[0].experiment]
        metrics = [get_metric(spec, self.cfg.options(runs[0].seed)) for spec in ex.metrics or self.cfg.metrics]
        seeds = [table(list(read_jsonl(self.rundir / b.eval_dir / SCORES_FILE, AnswerScores, kind="scores")), metrics) for b in runs]
        return intervals(over_seeds(seeds), seed=0)

    def run(self) -> BenchResults:
        cfg, chosen = self.cfg, self.cfg.experiments.chosen()
        every = [m for ex in chosen.values() for m in (ex.metrics or cfg.metrics)]
        caveats = ([self.limited] if self.limited else []) + dataset_limits(self.entries, [], [m.partition(":")[0].partition(",")[0] for m in every])
        if self.progress:  # said once, up front
            for line in caveats:
                print(f"note: {line}", file=sys.stderr)
        for name, ex in chosen.items():
            for llm in ex.llms or cfg.llms:
                for seed in ex.seeds or cfg.seeds:
                    if isinstance(ex, MainExperiment):
                        retrieval = ex.retrieval or cfg.retrieval
                        self.condition(name, retrieval, llm, seed, cfg.setting, retrieval)
                    elif isinstance(ex, RemovalExperiment):
                        for k in ex.k:
                            self.condition(name, f"k={k}", llm, seed, cfg.setting, "gold, k removed", remove_knowledge(self.entries, k, seed))
                    elif isinstance(ex, RetrievalExperiment):
                        for p in ex.accuracies:
                            self.condition(name, f"{round(p * 100)}", llm, seed, cfg.setting, "gold, replaced", retrieval_accuracy(self.entries, p, seed))
                    elif isinstance(ex, SettingsExperiment):
                        for setting in ("general", "specific"):
                            self.condition(name, setting, llm, seed, setting, ex.retrieval or cfg.retrieval)
        out = BenchResults(
            config=cfg.model_dump(mode="json"),
            dataset=self.dataset,
            provenance=provenance(dataset_file=str(self.dataset_path), **({"limit": self.limit} if self.limited else {})),
            caveats=caveats,
            results=self.results,
            tables=tables(self.results, self.seed_intervals),
            tables_note=TABLE_NOTE,
        )
        (self.rundir / "results.json").write_text(out.model_dump_json(indent=2))
        return out


# F1 in a table is the paper's: computed from the seed means of precision and recall.
F1_OF = {"citation.f1_micro": ("citation.precision_micro", "citation.recall_micro"), "na.na_f1_micro": ("na.na_precision_micro", "na.na_recall_micro")}
TABLE_NOTE = (
    "micro x100; mean over seeds ± sample standard deviation (n-1); F1 = 2PR/(P+R) of the mean P and R, its ± the sample "
    "standard deviation of the per-seed F1; [low, high]: the 95% interval over the dataset's entries of the figure over all seeds' "
    "answers (percentile bootstrap, each entry with all its answers, 10,000 resamples, seed 0: the sampling of the questions, "
    "not the judge's error); n = answers per seed; "
    "(…) beside [NA] figures: [NA] sentences (P) and absent triples (R), over all seeds"
)


def over_seeds(seeds: list[Table]) -> Table:
    """One table of several seeds' evaluations of one condition, by entry, whose figures are the
    table's own: each headline figure the mean over the seeds that have it, F1 from the mean
    precision and recall (`seed_stats`). A resample draws entries with every seed's answers to
    them and computes each seed's figure on them before the mean, so the interval surrounds the
    very statistic the table shows."""
    units = sorted({u for t in seeds for u in t.units})
    at = {u: i for i, u in enumerate(units)}
    keys, columns = [], []
    for s, t in enumerate(seeds):
        rows = [at[u] for u in t.units]
        for j, key in enumerate(t.keys):
            col = np.zeros(len(units))
            col[rows] = t.sums[:, j]
            keys.append((s, key))
            columns.append(col)

    def mean(name: str) -> Estimate:
        def over(sums: Any) -> Any:
            per = np.stack([np.asarray(t.estimates[name]({key: sums[(s, key)] for key in t.keys}), dtype=float) for s, t in enumerate(seeds)])
            have = (~np.isnan(per)).sum(axis=0)
            return np.where(have > 0, np.nansum(per, axis=0) / np.maximum(have, 1), np.nan)

        return over

    names = [k for k in HEADLINE if all(k in t.estimates for t in seeds)]
    estimates: dict[str, Estimate] = {k: mean(k) for k in names}
    for k, (p, r) in F1_OF.items():
        if k in estimates and p in estimates and r in estimates:
            estimates[k] = _f1_of(estimates[p], estimates[r])
    return Table(units, np.column_stack(columns) if columns else np.zeros((len(units), 0)), keys, estimates)


def _f1_of(p: Estimate, r: Estimate) -> Estimate:
    return lambda sums: harmonic(p(sums), r(sums))


def seed_stats(runs: list[BenchRow]) -> dict[str, Stat | None]:
    """Per headline metric over seeds' rows: mean, sample std (None with one seed), seeds, support.

    >>> def row(p, r, f):
    ...     return BenchRow(experiment="e", condition="c", llm="m", seed=0, setting="specific", retrieval="gold", answers=6,
    ...         metrics={"citation": {"precision_micro": p, "recall_micro": r, "f1_micro": f}}, models={}, answers_file="", eval_dir="")
    >>> s = seed_stats([row(0.2, 0.6, 0.3), row(0.4, 0.4, 0.4)])
    >>> round(s["citation.f1_micro"].mean, 4), round(s["citation.precision_micro"].std, 4)  # F1 of (0.3, 0.5), not the mean F1 0.35
    (0.375, 0.1414)
    """
    out: dict[str, Stat | None] = {}
    for m in HEADLINE:
        metric, _, key = m.partition(".")
        vals = [v for r in runs if (v := metric_value(r.metrics, m)) is not None]
        support = sum(r.support.get(metric, {}).get(key, 0) for r in runs)
        if not any(metric in r.metrics for r in runs):
            out[m] = None  # the metric was not run
            continue
        out[m] = Stat(mean=statistics.fmean(vals) if vals else None, std=statistics.stdev(vals) if len(vals) > 1 else None, seeds=len(vals), support=support)
    for m, (p, r) in F1_OF.items():
        stat, sp, sr = out.get(m), out.get(p), out.get(r)
        if stat and sp and sr and sp.mean is not None and sr.mean is not None:
            stat.mean = f1(sp.mean, sr.mean)
    return out


def tables(rows: list[BenchRow], pooled: Callable[[list[BenchRow]], dict[str, Interval]] | None = None) -> dict[str, list[TableRow]]:
    """Per experiment and condition (and model): the headline metrics over seeds (`seed_stats`),
    each with the interval over entries that `pooled` gives the condition's seeds together."""
    check_outputs(HEADLINE, "bench HEADLINE")
    groups: dict[tuple[str, str, str], list[BenchRow]] = {}
    for r in rows:
        groups.setdefault((r.experiment, r.condition, r.llm), []).append(r)
    out: dict[str, list[TableRow]] = {}
    for (exp, cond, llm), rs in groups.items():
        values = seed_stats(rs)
        for k, i in (pooled(rs) if pooled else {}).items():
            if (stat := values.get(k)) is not None and stat.mean is not None:
                stat.low, stat.high = i.low, i.high
        out.setdefault(exp, []).append(
            TableRow(
                condition=cond,
                llm=llm,
                setting=rs[0].setting,
                retrieval=rs[0].retrieval,
                seeds=[r.seed for r in rs],
                answers=rs[0].answers,
                models=rs[0].models,
                values=values,
                scales={m: rs[0].scales.get(m.partition(".")[0], {}).get(m.partition(".")[2], "rate") for m in HEADLINE},
            )
        )
    return out


def cell(key: str, stat: Stat | None, scale: str = "rate") -> str:
    """One table cell: `62.9±2.1`, `n/a`, and for [NA] figures their denominator beside them."""
    if stat is None:
        return "–"
    text = show(stat.mean, scale)
    if stat.mean is not None and stat.std is not None:
        text += f"±{show(stat.std, scale)}"
    if stat.low is not None and stat.high is not None:
        text += f" [{show(stat.low, scale)}, {show(stat.high, scale)}]"
    return f"{text} ({stat.support})" if key in WITH_SUPPORT else text


def format_table(experiment: str, rows: list[TableRow], dataset: DatasetId) -> str:
    """An experiment's table as aligned text, headed by the dataset and what the figures are."""
    keys = [k for k in HEADLINE if any(r.values.get(k) is not None for r in rows)]
    head = ["condition", "llm", "n", "seeds"] + [SHORT[k] for k in keys]
    body = [[r.condition, r.llm, str(r.answers), ",".join(map(str, r.seeds))] + [cell(k, r.values.get(k), r.scales.get(k, "rate")) for k in keys] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = [f"{experiment} on {dataset.label()}"]
    lines += ["  " + "  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    return "\n".join(lines)


__all__ = ["Bench", "BenchConfig", "format_table", "tables", "TABLE_NOTE"]
