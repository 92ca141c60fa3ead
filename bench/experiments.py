"""`kalma bench run CONFIG -o RUNDIR`: the paper's experiments from one TOML file.

    name = "demo"
    dataset = "demo"            # a dataset.jsonl, or "demo" for the bundled questions
    kg = "demo"
    llms = ["template", "smollm2"]
    seeds = [0]
    temperature = 0.0
    setting = "specific"
    nli = "lexical"
    judge = ""                  # G-Eval judge, "" to skip
    metrics = ["citation", "alignment", "na"]

    [experiments.main]                       # models × seeds, mean ± std (Table 3)
    [experiments.knowledge_removal]          # k = 0..3 (Table 5, Figure 4)
    llm = "template"
    k = [0, 1, 2, 3]
    [experiments.retrieval]                  # 100/80/60/40/20 (Figure 5)
    llm = "template"
    accuracies = [1.0, 0.8, 0.6, 0.4, 0.2]
    [experiments.settings]                   # general vs specific (Table 7)
    llm = "template"

Every condition writes its answers file and evaluation folder under RUNDIR; `results.json`
lists each number with the files and configuration that produced it. Reruns resume.
"""

from __future__ import annotations

import json
import statistics
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from baselines.pipeline import BaselineConfig, answer_dataset
from evaluation.base import DEFAULT_METRICS, EvalOptions, check_outputs, f1
from evaluation.runner import evaluate
from kalma.errors import ConfigError
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.kg import open_source
from kalma.provenance import provenance
from kalma.registry import spec_of
from kalma.schema import DatasetEntry, Setting, metric_value

from .ablations import Condition, remove_knowledge, retrieval_accuracy

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


Finite = Annotated[float, Field(allow_inf_nan=False)]
# A component as a spec string or as a TOML table, `{name = "conner", agg = "mean"}`: kept as the spec.
Spec = Annotated[str, BeforeValidator(lambda v: spec_of(v) if isinstance(v, dict) else v)]


class ExperimentConfig(BaseModel):
    """One `[experiments.<name>]` table; every key is optional."""

    model_config = ConfigDict(extra="forbid", strict=True)

    llm: Spec | None = None
    llms: list[Spec] | None = Field(default=None, min_length=1)
    metrics: list[Spec] | None = Field(default=None, min_length=1)
    k: list[Annotated[int, Field(ge=0)]] = Field(default=[0, 1, 2, 3], min_length=1)
    accuracies: list[Annotated[float, Field(gt=0.0, le=1.0)]] = Field(default=[1.0, 0.8, 0.6, 0.4, 0.2], min_length=1)


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
    nli: Spec = "lexical"
    judge: Spec = ""
    lm: Spec = ""
    metrics: list[Spec] = Field(default=list(DEFAULT_METRICS), min_length=1)
    max_tokens: Annotated[int, Field(gt=0)] = 160
    experiments: dict[Literal["main", "knowledge_removal", "retrieval", "settings"], ExperimentConfig] = Field(min_length=1)

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
            if first["loc"] == ("experiments",):
                raise ConfigError(f"{path}: no [experiments.*] table: nothing to run (main, knowledge_removal, retrieval, settings){more}") from None
            if first["type"] == "extra_forbidden":
                raise ConfigError(f"{path}: unknown key '{key}'{more}") from None
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
        for name, ex in self.experiments.items():
            out += [(f"experiments.{name}.llm", LLMS.check, ex.llm)] if ex.llm else []
            out += [(f"experiments.{name}.llms.{i}", LLMS.check, s) for i, s in enumerate(ex.llms or [])]
            out += [(f"experiments.{name}.metrics.{i}", METRICS.check, s) for i, s in enumerate(ex.metrics or [])]
        return out

    def experiment(self, name: str) -> ExperimentConfig:
        return self.experiments.get(name) or ExperimentConfig()  # type: ignore[call-overload]


def load_dataset(cfg: BenchConfig, rundir: Path) -> tuple[list[DatasetEntry], Path]:
    if cfg.dataset == "demo":
        from dataset_builder.demo import demo_entries

        path = rundir / "dataset.jsonl"
        if not path.exists():
            write_jsonl(path, demo_entries(open_source(cfg.kg)), "dataset", provenance(source="kalma demo questions"))
        return list(read_jsonl(path, DatasetEntry)), path
    return list(read_jsonl(cfg.dataset, DatasetEntry, kind="dataset")), Path(cfg.dataset)


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text)


class Bench:
    def __init__(self, cfg: BenchConfig, rundir: str | Path, progress: bool = True, overwrite: bool = False):
        self.cfg, self.rundir, self.progress, self.overwrite = cfg, Path(rundir), progress, overwrite
        self.rundir.mkdir(parents=True, exist_ok=True)
        self.entries, self.dataset_path = load_dataset(cfg, self.rundir)
        self.results: list[dict[str, Any]] = []

    def condition(self, experiment: str, label: str, llm: str, seed: int, setting: Setting, given: dict[str, Condition] | None = None) -> dict[str, Any]:
        """Answer and evaluate one condition; returns its row with provenance."""
        tag = _slug(f"{experiment}-{label}-{llm}-s{seed}-{setting}")
        answers = self.rundir / "answers" / f"{tag}.jsonl"
        answers.parent.mkdir(exist_ok=True)
        bcfg = BaselineConfig(
            llm=llm,
            kg=self.cfg.kg,
            retrieval="gold",
            setting=setting,
            seeds=[seed],
            temperatures=[self.cfg.temperature],
            max_tokens=self.cfg.max_tokens,
        )
        report = answer_dataset(
            self.entries,
            answers,
            bcfg,
            progress=self.progress,
            overwrite=self.overwrite,
            given={k: (c.kg, c.absent) for k, c in given.items()} if given is not None else None,
        )
        opts = EvalOptions(nli=self.cfg.nli, judge=self.cfg.judge or None, lm=self.cfg.lm or None, seed=seed)
        metrics = self.cfg.experiment(experiment).metrics or self.cfg.metrics
        # Scores are derived from the answers: when new answers were written, score them afresh.
        summary = evaluate(
            self.dataset_path,
            answers,
            self.rundir / "eval" / tag,
            metrics=metrics,
            options=opts,
            progress=self.progress,
            overwrite=self.overwrite or bool(report["written"]),
        )
        row = {
            "experiment": experiment,
            "condition": label,
            "llm": llm,
            "seed": seed,
            "setting": setting,
            "metrics": summary.metrics,
            "models": summary.models,
            "answers_file": str(answers.relative_to(self.rundir)),
            "eval_dir": str((self.rundir / "eval" / tag).relative_to(self.rundir)),
            "notes": [c.note for c in (given or {}).values() if c.note],
        }
        self.results.append(row)
        return row

    def run(self) -> dict[str, Any]:
        ex = self.cfg.experiments
        if "main" in ex:
            for llm in ex["main"].llms or self.cfg.llms:
                for seed in self.cfg.seeds:
                    self.condition("main", "gold", llm, seed, self.cfg.setting)
        if "knowledge_removal" in ex:
            llm = ex["knowledge_removal"].llm or self.cfg.llms[0]
            for k in ex["knowledge_removal"].k:
                for seed in self.cfg.seeds:
                    self.condition("knowledge_removal", f"k={k}", llm, seed, self.cfg.setting, remove_knowledge(self.entries, k, seed))
        if "retrieval" in ex:
            llm = ex["retrieval"].llm or self.cfg.llms[0]
            for p in ex["retrieval"].accuracies:
                for seed in self.cfg.seeds:
                    self.condition("retrieval", f"{round(p * 100)}", llm, seed, self.cfg.setting, retrieval_accuracy(self.entries, p, seed))
        if "settings" in ex:
            llm = ex["settings"].llm or self.cfg.llms[0]
            for setting in ("general", "specific"):
                for seed in self.cfg.seeds:
                    self.condition("settings", setting, llm, seed, setting)
        out = {
            "config": self.cfg.model_dump(mode="json"),
            "dataset": str(self.dataset_path),
            "provenance": provenance(),
            "results": self.results,
            "tables": tables(self.results),
            "tables_note": TABLE_NOTE,
        }
        (self.rundir / "results.json").write_text(json.dumps(out, indent=2, default=str))
        return out


# F1 in a table is the paper's: computed from the seed means of precision and recall.
F1_OF = {"citation.f1_micro": ("citation.precision_micro", "citation.recall_micro"), "na.na_f1_micro": ("na.na_precision_micro", "na.na_recall_micro")}
TABLE_NOTE = "mean over seeds ± sample standard deviation (n-1); F1 = 2PR/(P+R) of the mean P and R, its ± the sample standard deviation of the per-seed F1"


def seed_stats(runs: list[dict[str, dict[str, float | None]]]) -> dict[str, dict[str, float | None] | None]:
    """Per headline metric over seeds' summaries: {"mean", "std", "n"} (std None with one seed).

    >>> runs = [{"citation": {"precision_micro": 0.2, "recall_micro": 0.6, "f1_micro": 0.3}},
    ...         {"citation": {"precision_micro": 0.4, "recall_micro": 0.4, "f1_micro": 0.4}}]
    >>> s = seed_stats(runs)
    >>> round(s["citation.f1_micro"]["mean"], 4), round(s["citation.precision_micro"]["std"], 4)  # F1 of (0.3, 0.5), not the mean F1 0.35
    (0.375, 0.1414)
    """
    out: dict[str, dict[str, float | None] | None] = {}
    for m in HEADLINE:
        vals = [v for r in runs if (v := metric_value(r, m)) is not None]
        if not vals:
            out[m] = None
            continue
        std = statistics.stdev(vals) if len(vals) > 1 else None
        out[m] = {"mean": statistics.fmean(vals), "std": std, "n": len(vals)}
    for m, (p, r) in F1_OF.items():
        if out.get(m) and out.get(p) and out.get(r):
            out[m]["mean"] = f1(out[p]["mean"], out[r]["mean"])  # type: ignore[index]
    return out


def tables(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per experiment and condition (and model): the headline metrics over seeds (`seed_stats`)."""
    check_outputs(HEADLINE, "bench HEADLINE")
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["experiment"], r["condition"], r["llm"]), []).append(r)
    out: dict[str, list[dict[str, Any]]] = {}
    for (exp, cond, llm), rs in groups.items():
        row: dict[str, Any] = {"condition": cond, "llm": llm, "seeds": [r["seed"] for r in rs], "models": rs[0]["models"]}
        row.update(seed_stats([r["metrics"] for r in rs]))
        out.setdefault(exp, []).append(row)
    return out


def table_line(row: dict[str, Any], std: bool = False) -> str:
    """The micro figures of one table row, ×100: `precision=62.9 recall=78.6 …` (± std with `std`)."""

    def cell(v: dict[str, Any]) -> str:
        return f"{100 * v['mean']:.1f}" + (f"±{100 * v['std']:.1f}" if std and v["std"] is not None else "")

    return " ".join(f"{k.split('.')[-1].replace('_micro', '')}={cell(v)}" for k, v in row.items() if k.endswith("_micro") and v)
