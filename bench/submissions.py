"""Leaderboard submissions: an answers file, validated, scored and filed.

An answers file as `kalma answer` writes it, or as your own system does (see docs/formats.md), is a
submission once it is named: by `kalma bench submit --name NAME --model MODEL [--url URL]
[--description TEXT]`, or by a `submission` section in its header (the options win):

    {"kalma": {"kind": "answers", "format_version": 3,
               "submission": {"name": "my-model-v1", "model": "org/model-7b", "seeds": [0],
                              "settings": {"temperature": 0.5, "setting": "specific"}}}}

then one `Answer` per dataset entry and run (its `kg` is optional: without it the entry's pool,
or `--kg`'s subgraphs of its people, is the KG given; `run` tells several seeds apart). The
seeds default to the answers' own. Validation reports every problem at once with its line:
corrupt lines, unknown entry ids, duplicates, missing entries, bad metadata. Malformed
citations are counted, not rejected: they are part of what the benchmark scores.
"""

from __future__ import annotations

import shutil
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evaluation.base import EvalOptions
from evaluation.runner import evaluate
from kalma.answers_file import header_model, load_answers
from kalma.errors import KalmaError
from kalma.jsonl import read_jsonl, write_jsonl
from kalma.locks import OutputLock
from kalma.resume import file_digest
from kalma.schema import Answer, DatasetEntry

from .records import DatasetId, FiledSubmission, Replaced, SubmissionMeta


class SubmissionError(KalmaError, ValueError):
    def __init__(self, path: str | Path, problems: list[str]):
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass
class Checked:
    answers: list[Answer]
    meta: SubmissionMeta | None
    problems: list[str] = field(default_factory=list)


def read_meta(path: str | Path, header: dict[str, Any], answers: list[Answer], given: dict[str, Any]) -> tuple[SubmissionMeta | None, list[str]]:
    """The submission's metadata: the header's `submission` section under the options `given`;
    `seed` (one) is read as `seeds`, and the seeds default to those of the answers. The model
    defaults to the one the file names (what `kalma answer` ran, the harness's results file)."""
    raw = header.get("submission", {})
    if not isinstance(raw, dict):
        return None, [f"{path}:1: field 'submission': must be an object, got {type(raw).__name__}"]
    merged = {**raw, **{k: v for k, v in given.items() if v is not None}}
    if "seed" in merged:
        merged.setdefault("seeds", [merged.pop("seed")])
    merged.setdefault("seeds", sorted({a.seed for a in answers if a.seed is not None}))
    if (named := header_model(header)) is not None:
        merged.setdefault("model", named)
    url = merged.get("url")
    if isinstance(url, str) and url and not _web_address(url):  # the board shows it as a link
        where = "--url" if given.get("url") is not None else f"{path}:1: field 'submission.url'"
        return None, [f"{where}: {url[:80]!r} is not an http or https address"]
    try:
        return SubmissionMeta.model_validate(merged), []
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            field = ".".join(map(str, e["loc"]))
            if e["type"] == "missing":
                problems.append(f"no {field}: give --{field} (or `submission.{field}` in the file's header)")
            else:
                top = str(e["loc"][0])
                where = f"--{top}" if given.get(top) is not None else f"{path}:1: field 'submission.{field}'"
                problems.append(f"{where}: {e['msg'].removeprefix('Value error, ')}")
        return None, problems


def _web_address(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme in {"http", "https"} and bool(parts.netloc)


def validate(path: str | Path, entries: list[DatasetEntry], given: dict[str, Any] | None = None, partial: bool = False, limit: int | None = None) -> Checked:
    """Every problem of a submission at once: bad lines, unknown ids, duplicate answers, entries
    missing from a run (of the first `limit`; unless `partial`: then only a run missing what
    another run answers), and bad metadata. Answers are keyed like everywhere else: by entry id and run label, so one file
    may hold several seeds. A harness run limited to some documents is partial."""
    loaded = load_answers(path, {e.id: e for e in entries}, (given or {}).get("model"))
    partial = partial or loaded.asked is not None
    problems = [p.message for p in loaded.problems]
    meta, meta_problems = read_meta(path, loaded.header, loaded.answers, given or {})
    problems += meta_problems
    answered = {a.entry_id for a in loaded.answers}
    expected = [e.id for e in entries[:limit] if not partial or e.id in answered]
    for run, missing in loaded.missing(expected).items():
        where = f" in run {run!r}" if run else ""
        shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
        hint = "" if partial else "; file the answers you have with --partial (shown apart, never ranked with complete submissions)"
        problems.append(f"{path}: missing answers{where} for {len(missing)} of {len(expected)} entries: {shown}{hint}")
    return Checked(loaded.answers, meta, problems)


def as_submission(answers: str | Path, out: str | Path, meta: SubmissionMeta) -> Path:
    """An answers file (e.g. from `kalma answer`) written again with submission metadata in its header."""
    res = read_jsonl(answers, Answer, kind="answers")
    write_jsonl(out, res.records, "answers", res.header.get("provenance"), header={"submission": meta.model_dump(mode="json")})
    return Path(out)


def filed_entries(board: str | Path) -> dict[str, Path]:
    """Each filed name and the folder that holds its entry. A resubmission swaps its new entry in
    by two renames; killed between them, the old entry (kept as `.NAME.replaced`) still counts,
    so the board never shows the name without an entry."""
    root = Path(board) / "submissions"
    if not root.is_dir():
        return {}
    found = {p.name: p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}
    for p in root.glob(".*.replaced"):
        found.setdefault(p.name[1 : -len(".replaced")], p)
    return dict(sorted(found.items()))


def filed_names(board: str | Path) -> list[str]:
    return list(filed_entries(board))


def submit(
    path: str | Path,
    dataset: str | Path,
    board: str | Path,
    options: EvalOptions,
    metrics: list[str],
    *,
    meta: dict[str, Any] | None = None,
    kg: str | None = None,
    dataset_name: str | None = None,
    partial: bool = False,
    limit: int | None = None,
) -> FiledSubmission:
    """Validate, score and file a submission under `board/submissions/<name>/`.

    A submission under a name already on the board replaces that entry entirely (answers,
    scores, record); the new record says when the entry it replaced was filed. It is scored in a
    hidden staging folder and swapped in only once complete, so a submission that fails to score
    (a bad metric option, a model that will not load, a kill) leaves the filed entry as it was.

    `partial` files answers to part of the dataset, scored on those entries only; `limit` scores
    the first `limit` entries. Either is recorded (`summary.coverage`) and shown apart on the board."""
    entries = list(read_jsonl(dataset, DatasetEntry, kind="dataset"))
    checked = validate(path, entries, meta, partial, limit)
    if checked.meta is not None:
        twin = next((n for n in filed_names(board) if n.lower() == checked.meta.name.lower() and n != checked.meta.name), None)
        if twin:
            checked.problems.append(f"the name {checked.meta.name!r} differs from the filed {twin!r} only in case: resubmit as {twin!r} or choose another")
    if checked.problems or checked.meta is None:
        raise SubmissionError(path, checked.problems)
    target = Path(board) / "submissions" / checked.meta.name
    staging, replaced = (target.with_name(f".{target.name}.{suffix}") for suffix in ("staging", "replaced"))
    target.parent.mkdir(parents=True, exist_ok=True)
    with OutputLock(target):
        if replaced.exists() and not target.exists():  # killed mid-swap last time: the old entry is still whole
            replaced.rename(target)
        previous = _previous(target / "submission.json")
        for stale in (staging, replaced):
            if stale.exists():
                shutil.rmtree(stale)
        staging.mkdir()
        kept = staging / ("answers.eval" if Path(path).suffix == ".eval" else "answers.jsonl")  # an Inspect log is kept as it is
        shutil.copyfile(path, kept)
        # scored from the file as submitted, so the provenance names it rather than the staging copy
        summary = evaluate(
            dataset,
            path,
            staging / "eval",
            metrics=metrics,
            options=options,
            kg_source=kg,
            progress=False,
            named=checked.meta.model,
            partial=partial,  # and a limited harness run, which `evaluate` reads as partial too
            limit=limit,
        )
        record = FiledSubmission(
            submission=checked.meta,
            filed=datetime.now(UTC).isoformat(timespec="seconds"),
            answers_sha256=file_digest(kept),
            replaces=previous,
            dataset=DatasetId.of(entries, dataset_name or DatasetId.title(dataset, entries)),
            answers_scored=summary.counts.get("answers", 0),
            malformed_citations=summary.counts.get("malformed", 0),
            summary=summary,
        )
        (staging / "submission.json").write_text(record.model_dump_json(indent=2))
        if target.exists():
            target.rename(replaced)
        staging.rename(target)
        if replaced.exists():
            shutil.rmtree(replaced)
    return record


def _previous(path: Path) -> Replaced | None:
    """What the entry being replaced was (when and which answers), read leniently: a damaged old
    record must not stop its own replacement."""
    import json

    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        return Replaced(filed=str(old["filed"]), answers_sha256=str(old["answers_sha256"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
