"""Inspect's logs of a KaLMA task read as answers files (`kalma evaluate --answers LOG.eval`).

Read through Inspect's own reader (`inspect_ai.log.read_eval_log`): each sample of each epoch is
an answer (its output's text), to the entry its metadata names, with the KG it was given and what
that KG lacks of the minimum set; the model and the generation settings come from the log's
header. A log that cannot be scored whole is refused in one line: a log of another task, an
unfinished one (still running, cancelled, failed), one with samples that ended in an error.
"""

from __future__ import annotations

import zipfile
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import KalmaError
from .foreign import ForeignFile
from .jsonl import ReadResult
from .schema import Answer, DatasetEntry, KnowledgeGraph, Setting, Triple

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog

TASKS = ("kalma/kalma_specific", "kalma/kalma_general", "kalma/kalma")
FINISHED = "success"
RETRY = "inspect eval-retry"


def is_log(path: str | Path) -> bool:
    """Whether `path` is an Inspect log: a `.eval` archive, or a log written as JSON (`--log-format json`)."""
    path = Path(path)
    with path.open("rb") as fh:
        head = fh.read(4096)
    if path.suffix == ".eval":
        return zipfile.is_zipfile(path)
    return path.suffix == ".json" and head.lstrip().startswith(b"{") and b'"eval"' in head and b'"status"' in head and b'"version"' in head


def _read(path: Path, header_only: bool = False) -> EvalLog:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise KalmaError(f"{path} is an Inspect log: reading it needs inspect-ai (pip install 'kalma-bench[inspect]')") from None
    try:
        return read_eval_log(str(path), header_only=header_only)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise KalmaError(f"{path}: not a readable Inspect log ({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})") from None


def task_of(log: EvalLog) -> str:
    return log.eval.task_registry_name or log.eval.task


def check(path: Path, log: EvalLog) -> None:
    """Refuse, in one line, a log whose answers cannot all be scored as a KaLMA run."""
    task = task_of(log)
    if task not in TASKS:
        raise KalmaError(f"{path}: an Inspect log of the task {task!r}, not of a KaLMA task ({', '.join(TASKS)}): it holds no KaLMA answers")
    if log.status != FINISHED:
        why = f": {log.error.message.splitlines()[0][:200]}" if log.error is not None and log.error.message else ""
        raise KalmaError(f"{path}: an unfinished Inspect log (status {log.status!r}{why}); finish it with `{RETRY} {path}`, then score it")
    failed = [s for s in log.samples or [] if s.error is not None]
    if failed:
        first = failed[0]
        said = first.error.message.splitlines()[0][:160] if first.error is not None and first.error.message else "?"
        raise KalmaError(
            f"{path}: {len(failed)} of {len(log.samples or [])} samples ended in an error (first: {first.id}, epoch {first.epoch}: {said}); "
            f"scoring the others would be a partial score: rerun them with `{RETRY} {path}`"
        )


def run_of(path: Path, log: EvalLog) -> dict[str, Any]:
    """What the log says of the run: the model, its generation settings (the task's, under the
    command line's), the task and its parameters, epochs, `--limit`, the versions."""
    spec = log.eval
    generation = {**log.plan.config.model_dump(exclude_none=True), **spec.model_generate_config.model_dump(exclude_none=True)}
    return {
        "model": f"inspect:{spec.model}",
        "model_base_url": spec.model_base_url,
        "model_args": spec.model_args,
        "generation": generation,
        "task": task_of(log),
        "task_args": spec.task_args,
        "dataset": spec.dataset.location,  # the task's dataset, resolved where Inspect ran (`-T dataset=`)
        "epochs": spec.config.epochs or 1,
        "limit": spec.config.limit,
        "eval_id": spec.eval_id,
        "created": spec.created,
        "packages": spec.packages,
        "log_file": str(path),
    }


def read_log(path: str | Path, entries: Mapping[str, DatasetEntry] | Collection[str]) -> ForeignFile | None:
    """The answers of an Inspect log of a KaLMA task, or None when `path` is no Inspect log."""
    path = Path(path)
    if not is_log(path):
        return None
    log = _read(path)
    check(path, log)
    run = run_of(path, log)
    several = run["epochs"] > 1
    res: ReadResult[Answer] = ReadResult(records=[], header={"provenance": {"config": {"llm": run["model"], "inspect": run}}})
    for n, s in enumerate(log.samples or [], start=1):
        meta = s.metadata or {}
        entry_id = str(meta.get("entry_id", s.id))
        setting: Setting = "general" if meta.get("setting") == "general" else "specific"
        absent = meta.get("absent")
        stop = s.output.stop_reason if s.output else None
        res.records.append(
            Answer(
                entry_id=entry_id,
                text=s.output.completion if s.output else "",
                model=run["model"],
                setting=setting,
                settings=run["generation"],
                kg=KnowledgeGraph.model_validate(meta["kg"]) if "kg" in meta else None,
                absent=None if absent is None else [Triple.model_validate(t) for t in absent],
                run=f"epoch{s.epoch}" if several else "",
                meta={
                    "inspect": {"sample_id": s.id, "epoch": s.epoch, "uuid": s.uuid},
                    **({"finish_reason": "length" if stop in ("max_tokens", "model_length") else stop} if stop else {}),
                },
            )
        )
        res.lines.append(n)
    asked = _asked(run, res.records, entries)
    about = f"an Inspect log of {run['task']}: each sample's output is an answer, matched to its entry by its metadata"
    kind = f"Inspect log {path.name} ({run['task']})"
    return ForeignFile(res, [], Counter(id=len(res.records)), len(res.records), kind=kind, asked=asked, about=about)


def _asked(run: dict[str, Any], answers: list[Answer], entries: Mapping[str, DatasetEntry] | Collection[str]) -> str | None:
    """Which entries the run asked, when not all of the dataset's: `--limit`, or a setting some
    entries have no question in (the task asks only those that have one). None: all of them."""
    if not answers:
        return None
    setting = answers[0].setting
    with_question = [e for e in entries.values() if e.question(setting)] if isinstance(entries, Mapping) else list(entries)
    asked = len({a.entry_id for a in answers})
    if asked >= len(entries):
        return None
    if run.get("limit") is not None:
        return f"inspect eval --limit {run['limit']} asked {asked} of the {len(with_question)} entries with a {setting} question: scored on those only"
    return f"the task asked the {asked} entries with a {setting} question, of {len(entries)}: scored on those only"


def newest_log(folder: str | Path) -> tuple[Path, str] | None:
    """The newest KaLMA log in a log folder (`inspect eval --log-dir`, searched below it too), and
    a sentence saying which, among how many; None when the folder holds no Inspect log. A folder
    of logs of other tasks only is refused in one line."""
    root = Path(folder)
    found = [p for p in [*root.rglob("*.eval"), *root.rglob("*.json")] if p.is_file() and is_log(p)]
    if not found:
        return None
    headers = [(p, _read(p, header_only=True)) for p in found]
    kalma = sorted(((p, h) for p, h in headers if task_of(h) in TASKS), key=lambda ph: (ph[1].eval.created, ph[0].name))
    if not kalma:
        tasks = Counter(task_of(h) for _, h in headers)
        shown = ", ".join(f"{t} ({n})" for t, n in tasks.most_common(4))
        raise KalmaError(f"{root} holds {len(found)} Inspect logs, none of a KaLMA task ({shown}); run inspect eval kalma/kalma_specific … --log-dir {root}")
    path, header = kalma[-1]
    which = f"the newest of {len(kalma)} KaLMA logs" if len(kalma) > 1 else "the only KaLMA log"
    others = len(found) - len(kalma)
    also = f"; {others} log{'s' if others != 1 else ''} of other tasks left aside" if others else ""
    return path, f"reading {path} ({which} in {root}: {task_of(header)}, {header.eval.model}, {header.eval.created}, status {header.status}){also}"
