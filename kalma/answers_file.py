"""The one reader of answers files, shared by `evaluate`, `bench submit` and every resume.

An answer is identified by `Answer.answer_id()` (entry id, plus the run label when one file
holds several runs: seeds, temperatures, ablations). Every problem is reported with its file
and line, by kind, and every valid answer is kept.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .jsonl import read_jsonl
from .models.base import leading_reasoning
from .schema import Answer

PROBLEM_KINDS = ("corrupt_line", "unknown_id", "duplicate", "missing", "reasoning_in_text")
# each kind as a count reads it: (one, several)
PROBLEM_NAMES = {
    "corrupt_line": ("corrupt line", "corrupt lines"),
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


def load_answers(path: str | Path, entry_ids: Collection[str], model: str | None = None) -> AnswersFile:
    """Valid answers of `path` plus one `Problem` per corrupt line, unknown entry id, duplicate,
    and answer whose text opens with a reasoning model's thoughts (kept, and flagged).

    Only `entry_id` and `text` are needed: what describes a run is metadata. An answer's model
    is its line's, else the one the header names, else `model` (the caller's `--model`), else
    `unknown`, counted in `unnamed` so that reports say so."""
    res = read_jsonl(path, Answer, kind="answers", strict=False)
    out = AnswersFile(answers=[], header=res.header, problems=[Problem("corrupt_line", str(e)) for e in res.errors])
    ids = set(entry_ids)
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
            out.problems.append(Problem("duplicate", f"{path}:{line}: duplicate answer {aid!r} (first on line {out.lines[aid]}); this copy skipped"))
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
