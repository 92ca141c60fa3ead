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

from .errors import KalmaError
from .foreign import ForeignFile, Problem
from .inspect_log import newest_log, read_log
from .jsonl import HEADER_PREFIX, ReadResult, RecordError, read_jsonl
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


@dataclass
class AnswersFile:
    answers: list[Answer]
    header: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # answer id -> line
    unnamed: int = 0  # answers whose model neither the line, the header nor the caller named
    matched: str | None = None  # which file of another system was read, and how its items found their entries: said first
    asked: str | None = None  # a harness run limited to some documents (`lm_eval --limit`): scored on those entries only

    def model_caveat(self) -> str | None:
        """What every report says when some answers name no model."""
        if not self.unnamed:
            return None
        return (
            f"{self.unnamed} of {len(self.answers)} answers name no model (not in their lines, the file's header or --model): "
            f"recorded as {UNKNOWN_MODEL!r}; pass --model to say which model wrote them"
        )

    def made_by(self) -> dict[str, Any]:
        """What the file's header says made its answers: `kalma answer`'s configuration, or the
        harness's run (model, arguments, `--gen_kwargs`, `--limit`, lm-eval's version)."""
        made = self.header.get("provenance")
        config = made.get("config") if isinstance(made, dict) else None
        return config if isinstance(config, dict) else {}

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
    (`--log_samples`), each generation by its document's entry id (`read_harness`). A file of
    another kind (lm-eval's results file, another task's samples, records with other fields) is
    refused in one line that says what it is."""
    foreign = read_foreign(path, entries)
    res = foreign.result if foreign else read_jsonl(path, Answer, kind="answers", strict=False)
    if not foreign and not res.records:
        other_fields(path)
    out = AnswersFile(answers=[], header=res.header, problems=[Problem("corrupt_item" if e.item else "corrupt_line", str(e)) for e in res.errors])
    if foreign:
        out.problems += foreign.unmatched
        out.matched, out.asked = foreign.said(), foreign.asked
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
            unit = foreign.unit if foreign else "line"
            where = f"{path}: item {line}" if unit == "item" else f"{path}:{line}"
            out.problems.append(Problem("duplicate", f"{where}: duplicate answer {aid!r} (first on {unit} {out.lines[aid]}); this copy skipped"))
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


def read_foreign(path: str | Path, entries: Mapping[str, DatasetEntry] | Collection[str]) -> ForeignFile | None:
    """`path` read as another system's output (an Inspect log of a KaLMA task, ALCE's result file,
    lm-evaluation-harness's samples of a KaLMA task), or None when it is none of them: each
    format's reader is asked in turn."""
    return read_log(path, entries) or read_alce(path, entries) or read_harness(path)


# What another tool's records call an answer's two fields (RAG evaluation files, QA predictions).
_ENTRY_ID_NAMES, _TEXT_NAMES = ("id", "qid", "question_id", "example_id"), ("answer", "output", "prediction", "response", "generation", "completion")


def other_fields(path: str | Path) -> None:
    """Raise, in one line, when `path`'s first record is a JSON object with neither `entry_id` nor
    `text`: a file of another tool, whose every line would otherwise be one corrupt line. It names
    the fields found and the two expected, and a rename that would do."""
    with Path(path).open("rb") as fh:
        for raw in fh:
            if raw.strip() and not raw.lstrip().startswith(HEADER_PREFIX):
                break
        else:
            return
    try:
        first = json.loads(raw)
    except ValueError:
        return
    if not isinstance(first, dict) or {"entry_id", "text"} & set(first):
        return
    found = list(first)
    pairs = ((_ENTRY_ID_NAMES, "entry_id"), (_TEXT_NAMES, "text"))
    renames = [f"{old} -> {new}" for names, new in pairs if (old := next((n for n in names if n in found), None))]
    hint = f" (rename {', '.join(renames)})" if renames else ""
    shown = ", ".join(found[:8]) + (", …" if len(found) > 8 else "")
    raise KalmaError(
        f"{path}: JSON Lines of another kind: its records have the fields {shown}; an answer needs entry_id (the dataset entry's id) and text{hint}"
    )


def read_harness(path: str | Path) -> ForeignFile | None:
    """lm-evaluation-harness's samples file of a KaLMA task (`samples_kalma_…_DATE.jsonl`, written
    with `--log_samples`), or None when `path` is not one: each line a document (its entry id
    and setting) with the model's generation. The model and the generation settings come from the
    run's results file beside it (`results_DATE.json`), and every answer records them; a run the
    harness limited (`--limit`) says how many documents it asked. The results file itself, and
    another task's samples, are refused in one line."""
    path = Path(path)
    with path.open("rb") as fh:
        first = fh.readline(1 << 24).removeprefix(codecs.BOM_UTF8).strip()
    try:
        one = json.loads(first)
    except ValueError:
        one = None
    if not (isinstance(one, dict) and "doc_id" in one and isinstance(one.get("doc"), dict) and ("filtered_resps" in one or "resps" in one)):
        _not_results_file(path, first)
        return None
    task, run = _harness_run(path)
    if not isinstance(one["doc"].get("id"), str) or "entry" not in one["doc"]:
        fields = ", ".join(list(one["doc"])[:6])
        raise KalmaError(f"{path}: samples of the lm-eval task {task!r}, not of a KaLMA task (kalma_specific, kalma_general): its documents hold {fields}")
    # every KaLMA task document holds the entry's whole knowledge pool: what each answer was given is known
    made = {"provenance": {"config": {"llm": run["model"], "lm_eval": run}}} if run else {}
    res: ReadResult[Answer] = ReadResult(records=[], header={"kg_given": "pool", **made})
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
    counted = run.get("documents", {}) if run else {}
    asked = None
    if counted.get("effective") is not None and counted["effective"] < counted.get("original", 0):
        how = f"lm_eval --limit {run['limit']:g}" if isinstance(run.get("limit"), (int, float)) else "lm_eval"
        asked = f"{how} asked {counted['effective']} of its {counted['original']} documents: scored on their entries only"
    about = f"an lm-evaluation-harness samples file of {task}: each line's generation is an answer, matched to its entry by its document's id"
    return ForeignFile(res, unmatched, by, items, kind=f"lm-evaluation-harness samples file {path.name} ({task})", unit="line", asked=asked, about=about)


HARNESS_TASKS = ("kalma_specific", "kalma_general")  # a folder's samples read first: the paper's main setting


def harness_samples(folder: str | Path) -> tuple[Path, str]:
    """The samples file to read in lm-evaluation-harness's output folder (its `--output_path`,
    which holds a subfolder per model and a `results_STAMP.json` per run): the newest run's
    `kalma_specific` samples, else its `kalma_general` ones; and a sentence saying which file
    that is, among how many runs, and what else the run logged."""
    root = Path(folder)
    runs: dict[Path, list[Path]] = {}
    for results in [*root.glob("results_*.json"), *root.glob("*/results_*.json")]:
        stamp = results.stem.removeprefix("results_")
        found = [f for task in HARNESS_TASKS if (f := results.with_name(f"samples_{task}_{stamp}.jsonl")).is_file()]
        runs[results] = found
    kalma = sorted((r for r, found in runs.items() if found), key=lambda r: r.stem.removeprefix("results_"))
    if not kalma:
        what = (
            f"{len(runs)} lm_eval run{'s' if len(runs) != 1 else ''} but no samples of a KaLMA task (run lm_eval --tasks kalma … --log_samples)"
            if runs
            else "no lm-evaluation-harness run (results_*.json, in it or a folder under it)"
        )
        raise KalmaError(f"{root} is a folder holding {what}; give an answers file, or the folder lm_eval --output_path or inspect eval --log-dir wrote")
    newest = kalma[-1]
    chosen, *others = runs[newest]
    more = f"; give {others[0]} to score its general questions" if others else ""
    which = f"the newest of {len(kalma)} KaLMA runs" if len(kalma) > 1 else "the only KaLMA run"
    return chosen, f"reading {chosen} ({which} in {root}, {newest.stem.removeprefix('results_')}){more}"


def folder_answers(folder: str | Path) -> tuple[Path, str]:
    """The answers to read in a folder another tool wrote, and a sentence saying which: an Inspect
    log folder's newest KaLMA log (`kalma.inspect_log`), else lm-evaluation-harness's newest run."""
    return newest_log(folder) or harness_samples(folder)


def _not_results_file(path: Path, first: bytes) -> None:
    """lm-eval's results file (one indented JSON object of figures) given where its samples are
    read: one line naming the samples files beside it."""
    if first != b"{" and not first.startswith(b'{"results"'):
        return
    try:
        found = json.loads(path.read_bytes().removeprefix(codecs.BOM_UTF8))
    except (ValueError, RecursionError):
        return
    if not (isinstance(found, dict) and "results" in found and ("lm_eval_version" in found or "n-samples" in found)):
        return
    stamp = path.stem.removeprefix("results_")
    beside = sorted(path.parent.glob(f"samples_kalma_*_{stamp}.jsonl"))
    use = f": {', '.join(str(b) for b in beside)}" if beside else " (none here: run lm_eval with --log_samples)"
    raise KalmaError(f"{path}: lm-evaluation-harness's results file holds figures, not answers; use the samples file beside it{use}")


def _harness_run(samples: Path) -> tuple[str, dict[str, Any]]:
    """The task a samples file belongs to, and what its results file says of the run: the model
    (`lm-eval:hf:PRETRAINED`, as the harness names it), its arguments, dtype and device, the
    generation settings (the task's, under `--gen_kwargs`), the harness's version and `--limit`
    with the documents it asked; {} without a results file beside it."""
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
        "gen_kwargs": config.get("gen_kwargs"),
        "limit": config.get("limit"),
        "documents": found.get("n-samples", {}).get(task, {}),
        "chat_template": bool(found.get("chat_template")),
        "lm_eval_version": found.get("lm_eval_version"),
        "results_file": str(results),
    }


def _question_key(text: str) -> str:
    """A question as matched: case, spacing and a leading `question:` (the release's habit) ignored."""
    text = " ".join(text.split()).casefold()
    return text.removeprefix("question:").strip()


def read_alce(path: str | Path, entries: Mapping[str, DatasetEntry] | Collection[str]) -> ForeignFile | None:
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
    return ForeignFile(res, unmatched, by, len(items))
