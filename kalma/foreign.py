"""What a reader of another system's answers hands back (`kalma.answers_file`, the one reader of
answers files, asks each format's reader in turn: `kalma.inspect_log` for Inspect's logs, its own
for ALCE's result files and lm-evaluation-harness's samples). The format readers import this
module, never the reader that asks them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .jsonl import ReadResult
from .schema import Answer


@dataclass(frozen=True)
class Problem:
    kind: str  # one of PROBLEM_KINDS
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class ForeignFile:
    """Another system's output file read as answers (ALCE's result file, the harness's samples):
    the records, and what could not be matched."""

    result: ReadResult[Answer]
    unmatched: list[Problem]
    by: Counter[str]  # how each item found its entry: "id", "specific question", "general question"
    items: int
    kind: str = "ALCE result file"
    unit: str = "item"  # what its positions count: ALCE's items, the harness's lines
    about: str = "an ALCE result file: `output` is each answer's text; `kalma evaluate --dataset …` matches each item to its entry by its question"
    asked: str | None = None  # the harness asked only some documents (`lm_eval --limit`), in words

    def said(self) -> str:
        how = ", ".join(f"{n} by {k}" for k, n in self.by.items())
        n = len(self.unmatched)
        missed = f"; {n} matched no entry and {'was' if n == 1 else 'were'} skipped" if n else ""
        asked = f"; {self.asked}" if self.asked else ""
        return f"{self.kind}: {sum(self.by.values())} of {self.items} items matched to entries ({how}){missed}{asked}"
