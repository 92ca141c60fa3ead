"""The one reader of answers files, shared by `evaluate`, `bench submit` and every resume.

An answer is identified by `Answer.answer_id()` (entry id, plus the run label when one file
holds several runs: seeds, temperatures, ablations). Every problem is reported with its file
and line, by kind, and every valid answer is kept.
"""

from __future__ import annotations

import codecs
import difflib
import json
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from .jsonl import ReadResult, RecordError, read_jsonl
from .models.base import leading_reasoning
from .schema import Answer, DatasetEntry, Setting

PROBLEM_KINDS = ("corrupt_line", "corrupt_item", "unknown_id", "unmatched_question", "duplicate", "missing", "reasoning_in_text")
# each kind as a count reads it: (one, several)
PROBLEM_NAMES = {
    "corrupt_line": ("corrupt line", "corrupt lines"),
    "corrupt_item": ("unreadable item", "unreadable items"),
    "unmatched_question": ("question matching no entry", "questions matching no entry"),
    "unknown_id": ("unknown entry id", "unknown entry ids"),
    "duplicate": ("duplicate answer", "duplicate answers"),
    "missing": ("missing answer", "missing answers"),
    "reasoning_in_text": ("answer opening with a model's reasoning", "answers opening with a model's reasoning"),
}


def said(counts: dict[str, int]) -> str:
    """Problem counts in words: `4 corrupt lines, 1 unknown entry id`.

    >>> said({"corrupt_line": 4, "unknown_id": 1})
    '4 corrupt lines, 1 unknown entry id'
    """
    return ", ".join(f"{n} {PROBLEM_NAMES.get(k, (k.replace('_', ' '),) * 2)[n != 1]}" for k, n in counts.items())


UNKNOWN_MODEL = "unknown"


@dataclass(frozen=True)
class Problem:
    kind: str  # one of PROBLEM_KINDS
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class AnswersFile:
    answers: list[Answer]
    header: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # answer id -> line
    unnamed: int = 0  # answers whose model neither the line, the header nor the caller named
    matched: str | None = None  # how items without an entry id were matched to entries (ALCE's files), said first

    def model_caveat(self) -> str | None:
        """What every report says when some answers name no model."""
        if not self.unnamed:
            return None
        return (
            f"{self.unnamed} of {len(self.answers)} answers name no model (not in their lines, the file's header or --model): "
            f"recorded as {UNKNOWN_MODEL!r}; pass --model to say which model wrote them"
        )

    def counts(self) -> dict[str, int]:
        c = Counter(p.kind for p in self.problems)
        return {k: c[k] for k in PROBLEM_KINDS if c[k]}

    def missing(self, entry_ids: Collection[str]) -> dict[str, list[str]]:
        """{run label: entry ids without an answer in that run}; a file with no answers at all
        misses everything in the unnamed run."""
        runs = sorted({a.run for a in self.answers}) or [""]
        have = {(a.run, a.entry_id) for a in self.answers}
        return {run: miss for run in runs if (miss := [e for e in entry_ids if (run, e) not in have])}


def header_model(header: dict[str, Any]) -> str | None:
    """The model a file's header names: its submission's, else the LLM `kalma answer` ran."""
    sub, config = header.get("submission"), header.get("provenance", {}).get("config")
    for found in ((sub or {}).get("model") if isinstance(sub, dict) else None, (config or {}).get("llm") if isinstance(config, dict) else None):
        if isinstance(found, str) and found.strip():
            return found.strip()
    return None


def load_answers(path: str | Path, entries: Mapping[str, DatasetEntry] | Collection[str], model: str | None = None) -> AnswersFile:
    """Valid answers of `path` plus one `Problem` per corrupt line, unknown entry id, duplicate,
    and answer whose text opens with a reasoning model's thoughts (kept, and flagged).

    Only `entry_id` and `text` are needed: what describes a run is metadata. An answer's model
    is its line's, else the one the header names, else `model` (the caller's `--model`), else
    `unknown`, counted in `unnamed` so that reports say so. ALCE's result files (`{"args": …,
    "data": [{"question", "output", …}]}`, or a bare array of such items) are read too: each item
    is matched to its entry by its id, else by its question (general or specific, when `entries`
    are given with their questions); and lm-evaluation-harness's samples files of the KaLMA tasks
    (`--log_samples`), each generation by its document's entry id (`read_harness`)."""
    alce = read_alce(path, entries) or read_harness(path)
    res = alce.result if alce else read_jsonl(path, Answer, kind="answers", strict=False)
    out = AnswersFile(answers=[], header=res.header, problems=[Problem("corrupt_item" if e.item else "corrupt_line", str(e)) for e in res.errors])
    if alce:
        out.problems += alce.unmatched
        out.matched = alce.said()
    ids = set(entries)
    fallback = header_model(res.header) or (model.strip() if model and model.strip() else None)
    for a, line in zip(res.records, res.lines):
        if not a.model.strip():
            a.model = fallback or UNKNOWN_MODEL
            out.unnamed += fallback is None
        if a.entry_id not in ids:
            near = difflib.get_close_matches(a.entry_id, list(ids), n=1, cutoff=0.8)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            out.problems.append(
                Problem("unknown_id", f"{path}:{line}: field 'entry_id': unknown entry id {a.entry_id!r} (not in the dataset){hint}; answer skipped")
            )
            continue
        aid = a.answer_id()
        if aid in out.lines:
            where = f"{path}: item {line}" if alce else f"{path}:{line}"
            out.problems.append(
                Problem("duplicate", f"{where}: duplicate answer {aid!r} (first on {'item' if alce else 'line'} {out.lines[aid]}); this copy skipped")
            )
            continue
        out.lines[aid] = line
        out.answers.append(a)
        if leading_reasoning(a.text) is not None:  # its citations would be scored with the answer's
            out.problems.append(
                Problem(
                    "reasoning_in_text",
                    f"{path}:{line}: field 'text': opens with a model's reasoning (<think>…); it is scored as written: move it to meta.reasoning",
                )
            )
    return out


@dataclass
class Alce:
    """Another system's output file read as answers (ALCE's result file, the harness's samples):
    the records, and what could not be matched."""

    result: ReadResult[Answer]
    unmatched: list[Problem]
    by: Counter[str]  # how each item found its entry: "id", "specific question", "general question"
    items: int
    kind: str = "ALCE result file"

    def said(self) -> str:
        how = ", ".join(f"{n} by {k}" for k, n in self.by.items())
        n = len(self.unmatched)
        missed = f"; {n} matched no entry and {'was' if n == 1 else 'were'} skipped" if n else ""
        return f"{self.kind}: {sum(self.by.values())} of {self.items} items matched to entries ({how}){missed}"


def read_harness(path: str | Path) -> Alce | None:
    """lm-evaluation-harness's samples file of a KaLMA task (`samples_kalma_…_DATE.jsonl`, written
    with `--log_samples`), or None when `path` is not one: each line a document (its entry id
    and setting) with the model's generation. The model and the generation settings come from the
    run's results file beside it (`results_DATE.json`), and every answer records them."""
    path = Path(path)
    with path.open("rb") as fh:
        first = fh.readline(1 << 24).removeprefix(codecs.BOM_UTF8).strip()
    try:
        one = json.loads(first)
    except ValueError:
        return None
    if not (isinstance(one, dict) and "doc_id" in one and isinstance(one.get("doc"), dict) and ("filtered_resps" in one or "resps" in one)):
        return None
    task, run = _harness_run(path)
    res: ReadResult[Answer] = ReadResult(records=[], header={"provenance": {"config": {"llm": run["model"], "lm_eval": run}}} if run else {})
    unmatched, by, items = [], Counter[str](), 0
    for n, raw in enumerate(path.read_bytes().removeprefix(codecs.BOM_UTF8).splitlines(), start=1):
        if not raw.strip():
            continue
        items += 1
        try:
            item = json.loads(raw)
            doc, said = item["doc"], item.get("filtered_resps", item.get("resps"))
            text = said[0] if isinstance(said[0], str) else said[0][0]
        except (ValueError, KeyError, IndexError, TypeError):
            res.errors.append(RecordError(path, n, "filtered_resps", "expected a harness sample: its document and the model's generation"))
            continue
        if not isinstance(doc.get("id"), str):
            unmatched.append(Problem("unmatched_question", f"{path}:{n}: field 'doc': no KaLMA entry id (is this a KaLMA task's samples file?); skipped"))
            continue
        setting: Setting = "general" if doc.get("setting") == "general" else "specific"
        meta = {"lm_eval": {"task": task, "doc_id": item.get("doc_id"), "doc_hash": item.get("doc_hash"), "prompt_hash": item.get("prompt_hash")}}
        settings = run.get("generation", {}) if run else {}
        res.records.append(Answer(entry_id=doc["id"], text=text, setting=setting, model=run.get("model", "") if run else "", settings=settings, meta=meta))
        res.lines.append(n)
        by["id"] += 1
    return Alce(res, unmatched, by, items, kind=f"lm-evaluation-harness samples file ({task})")


def _harness_run(samples: Path) -> tuple[str, dict[str, Any]]:
    """The task a samples file belongs to, and what its results file says of the run: the model
    (`lm-eval:hf:PRETRAINED`, as the harness names it), its arguments, dtype and device, the
    generation settings and the harness's version; {} without a results file beside it."""
    stem = samples.stem.removeprefix("samples_")
    task, _, stamp = stem.rpartition("_")
    results = samples.with_name(f"results_{stamp}.json")
    try:
        found = json.loads(results.read_text())
    except (OSError, ValueError):
        return task or stem, {}
    config = found.get("config", {})
    args = config.get("model_args") or {}
    if isinstance(args, str):  # older versions: "pretrained=…,dtype=…"
        args = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    name = args.get("pretrained") or args.get("model") or found.get("model_name") or "?"
    generation = {**found.get("configs", {}).get(task, {}).get("generation_kwargs", {}), **(config.get("gen_kwargs") or {})}
    return task, {
        "model": f"lm-eval:{config.get('model', '?')}:{name}",
        "model_args": args,
        "dtype": config.get("model_dtype"),
        "device": config.get("device"),
        "generation": generation,
        "chat_template": bool(found.get("chat_template")),
        "lm_eval_version": found.get("lm_eval_version"),
        "results_file": str(results),
    }


def _question_key(text: str) -> str:
    """A question as matched: case, spacing and a leading `question:` (the release's habit) ignored."""
    text = " ".join(text.split()).casefold()
    return text.removeprefix("question:").strip()


def read_alce(path: str | Path, entries: Mapping[str, DatasetEntry] | Collection[str]) -> Alce | None:
    """ALCE's own output (`run.py` writes `{"args", "data"}`; some tools keep the bare `data`
    array), or None when `path` is not one. Items carry `question` and `output`; `output` is the
    answer text, and an item without an entry id is matched by its question."""
    path = Path(path)
    with path.open("rb") as fh:
        first = fh.readline(1 << 20).removeprefix(codecs.BOM_UTF8).strip()
    if first[:1] not in (b"{", b"["):
        return None
    if first[:1] == b"{":
        try:
            one = json.loads(first)
        except ValueError:
            one = None
        if one is not None and not (isinstance(one, dict) and isinstance(one.get("data"), list)):
            return None  # a whole object on the first line, and not ALCE's {args, data} saved on one line: JSON Lines
    try:
        doc = json.loads(path.read_bytes().removeprefix(codecs.BOM_UTF8))
    except (ValueError, RecursionError):
        return None  # the JSON Lines reader says what is wrong with it
    items = doc.get("data") if isinstance(doc, dict) and isinstance(doc.get("args", {}), dict) else doc
    if not isinstance(items, list) or not any(isinstance(i, dict) and "output" in i and "text" not in i for i in items):
        return None
    args = doc.get("args", {}) if isinstance(doc, dict) else {}
    questions: dict[str, tuple[str, Setting]] = {}
    for e in entries.values() if isinstance(entries, Mapping) else ():
        for each in get_args(Setting):  # "general" first: a question both settings share goes to the specific one
            questions[_question_key(e.question(each))] = (e.id, each)
    res: ReadResult[Answer] = ReadResult(records=[], header={"provenance": {"config": {"llm": args["model"]}}} if isinstance(args.get("model"), str) else {})
    unmatched, by = [], Counter[str]()
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("output"), str):
            res.errors.append(RecordError(path, n, "output", "expected an item with its answer text in `output`", item=True))
            continue
        given = next((str(item[k]) for k in ("entry_id", "id") if k in item and str(item[k]) in entries), None)
        setting: Setting = "general" if item.get("setting") == "general" else "specific"
        found = (given, setting) if given else questions.get(_question_key(str(item.get("question", ""))))
        if found is None:
            q = str(item.get("question", ""))[:80]
            unmatched.append(
                Problem("unmatched_question", f"{path}: item {n}: field 'question': {q!r} is no entry's general or specific question; item skipped")
            )
            continue
        by["id" if given else f"{found[1]} question"] += 1
        meta = {k: item[k] for k in ("question", "answer") if k in item}  # `docs` (retrieved passages) stay in the file
        try:
            res.records.append(Answer(entry_id=found[0], text=item["output"], setting=found[1], model=str(item.get("model", "")), meta={"alce": meta}))
            res.lines.append(n)
        except ValidationError as exc:
            res.errors.append(RecordError(path, n, "", str(exc.errors()[0]["msg"]), item=True))
    return Alce(res, unmatched, by, len(items))
