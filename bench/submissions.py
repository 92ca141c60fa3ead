"""Leaderboard submissions: a documented answers file, validated, scored and filed.

Format: an answers JSONL file (see README) whose header carries the submission metadata:

    {"kalma": {"kind": "answers", "format_version": 1,
               "submission": {"name": "my-model-v1", "model": "org/model-7b", "seed": 0,
                              "settings": {"temperature": 0.5, "setting": "specific"}}}}

then one `Answer` per dataset entry and run (its `kg` is optional; without it the entry's pool
is the KG given; `run` tells several seeds apart). Validation reports every problem at once with its line: corrupt lines, unknown
entry ids, duplicates, missing entries, missing metadata. Malformed citations are counted, not
rejected: they are part of what the benchmark scores.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaluation.base import EvalOptions
from evaluation.runner import evaluate
from kalma.answers_file import load_answers
from kalma.errors import KalmaError
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.locks import OutputLock
from kalma.resume import file_digest
from kalma.schema import Answer, DatasetEntry

REQUIRED = ("name", "model", "seed", "settings")


class SubmissionError(KalmaError, ValueError):
    def __init__(self, path: str | Path, problems: list[str]):
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass
class Checked:
    answers: list[Answer]
    meta: dict[str, Any]
    problems: list[str] = field(default_factory=list)


def validate(path: str | Path, entries: list[DatasetEntry]) -> Checked:
    """Every problem of a submission at once: bad lines, unknown ids, duplicate answers, entries
    missing from a run, and missing metadata. Answers are keyed like everywhere else: by entry
    id and run label, so one file may hold several seeds."""
    loaded = load_answers(path, [e.id for e in entries])
    problems = [p.message for p in loaded.problems]
    meta = loaded.header.get("submission") if isinstance(loaded.header.get("submission"), dict) else None
    if meta is None:
        problems.append(f"{path}:1: field 'submission': the header names no submission metadata ({', '.join(REQUIRED)})")
        meta = {}
    else:
        problems += [f"{path}:1: field 'submission.{k}': missing" for k in REQUIRED if k not in meta]
        if "name" in meta and not re.fullmatch(r"[A-Za-z0-9][\w.-]{0,63}", str(meta["name"])):
            problems.append(f"{path}:1: field 'submission.name': use letters, digits, '.', '_' or '-' (got {meta['name']!r})")
    for run, missing in loaded.missing([e.id for e in entries]).items():
        where = f" in run {run!r}" if run else ""
        problems.append(f"{path}: missing answers{where} for {len(missing)} entries: {', '.join(missing[:10])}" + (" …" if len(missing) > 10 else ""))
    return Checked(loaded.answers, meta, problems)


def as_submission(answers: str | Path, out: str | Path, meta: dict[str, Any]) -> Path:
    """An answers file (e.g. from `kalma answer`) written again with submission metadata in its header."""
    res = read_jsonl(answers, Answer, kind="answers")
    write_jsonl(out, res.records, "answers", res.header.get("provenance"), header={"submission": meta})
    return Path(out)


def submit(path: str | Path, dataset: str | Path, board: str | Path, options: EvalOptions, metrics: list[str]) -> dict[str, Any]:
    """Validate, score and file a submission under `board/submissions/<name>/`.

    A submission under a name already on the board replaces that entry entirely (answers,
    scores, record); the new record says when the entry it replaced was filed. It is scored in a
    hidden staging folder and swapped in only once complete, so a submission that fails to score
    (a bad metric option, a model that will not load, a kill) leaves the filed entry as it was."""
    entries = list(read_jsonl(dataset, DatasetEntry, kind="dataset"))
    checked = validate(path, entries)
    if checked.problems:
        raise SubmissionError(path, checked.problems)
    target = Path(board) / "submissions" / str(checked.meta["name"])
    staging, replaced = (target.with_name(f".{target.name}.{suffix}") for suffix in ("staging", "replaced"))
    target.parent.mkdir(parents=True, exist_ok=True)
    with OutputLock(target):
        if replaced.exists() and not target.exists():  # killed mid-swap last time: the old entry is still whole
            replaced.rename(target)
        previous = json.loads((target / "submission.json").read_text()) if (target / "submission.json").exists() else None
        for stale in (staging, replaced):
            if stale.exists():
                shutil.rmtree(stale)
        staging.mkdir()
        shutil.copyfile(path, staging / "answers.jsonl")
        # scored from the file as submitted, so the provenance names it rather than the staging copy
        summary = evaluate(dataset, path, staging / "eval", metrics=metrics, options=options, progress=False)
        record = {
            "submission": checked.meta,
            "filed": datetime.now(UTC).isoformat(timespec="seconds"),
            "answers_sha256": file_digest(staging / "answers.jsonl"),
            "replaces": {"filed": previous.get("filed"), "answers_sha256": previous.get("answers_sha256")} if previous else None,
            "malformed_citations": summary.counts.get("malformed", 0),
            "dataset": str(dataset),
            "summary": summary.model_dump(),
        }
        (staging / "submission.json").write_text(json.dumps(record, indent=2, default=str))
        if target.exists():
            target.rename(replaced)
        staging.rename(target)
        if replaced.exists():
            shutil.rmtree(replaced)
    return record
