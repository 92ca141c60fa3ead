"""What people judge: the units of a human evaluation, their labels, and the sample file.

Two tasks, each the human side of an automatic number:

- `alignment` (KaLMA §5.4, Table 6): one unit is one (sentence, citation) pair exactly as the
  alignment metric scores it: the premise is the sentence with its markup removed, the
  hypothesis what the entailment backend is asked. Annotators see the sentence and the cited
  triple as a sentence; they say whether the knowledge supports it (`supported`: 1 or 0).
- `dataset` (§2.3, Table 2, Appendix C.1): one unit is one question of an entry (general or
  specific) with its minimum knowledge set. Annotators rate `authenticity` (0/1), `naturalness`
  and `significance` (1-5), and mark which knowledge is `necessary` (relevance is the share).

A sample file is a record file (kind `human_sample`) whose header holds its digest: every export
carries the digest, and annotations of another sample are refused on import.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from kalma.errors import KalmaError
from kalma.jsonl import RecordError, read_header, read_jsonl, write_jsonl
from kalma.schema import Record, Setting

Task = Literal["alignment", "dataset"]
SAMPLE_KIND, LABELS_KIND = "human_sample", "human_labels"

# The label fields of each task and the values each takes; what annotators fill in.
LABELS: dict[str, dict[str, tuple[int, ...] | None]] = {
    "alignment": {"supported": (0, 1)},
    "dataset": {"authenticity": (0, 1), "naturalness": (1, 2, 3, 4, 5), "significance": (1, 2, 3, 4, 5), "necessary": None},
}


class HumanError(KalmaError, ValueError):
    """Annotation input that cannot be used: names the file, the line and the field."""


class Unit(Record):
    """One thing annotators judge. `shown` is all they see; the rest (who wrote it, what the
    automatic metric is asked) never leaves the sample file."""

    unit_id: str
    task: Task
    shown: dict[str, Any] = Field(description="what annotators see: sentence and claim, or question and numbered knowledge")
    model: str = Field(default="", description="alignment: the model that wrote the sentence (hidden from annotators)")
    answer_id: str = ""
    entry_id: str = ""
    setting: Setting = "specific"
    premise: str = Field(default="", description="alignment: what the entailment backend reads as the premise")
    hypothesis: str = Field(default="", description="alignment: what it reads as the hypothesis")


class Label(Record):
    """One annotator's labels for one unit, with where they were read from."""

    unit_id: str
    annotator: str
    labels: dict[str, Any]
    source: str = Field(description="file:line (or file: item N) the labels were read from")
    annotation: str = Field(default="", description="Label Studio's annotation id and creation time: the same annotation is read once")
    user: str = Field(default="", description="Label Studio's user id, when the export names the annotator by nothing else")
    file: str = Field(default="", description="the export the labels were read from: one annotator's work comes from one export")


def unit_id(*parts: str | int) -> str:
    """A stable id that says nothing of the model or the answer behind it (blinding)."""
    return "u" + hashlib.sha256(json.dumps([str(p) for p in parts]).encode("utf-8")).hexdigest()[:11]


def sample_digest(units: Sequence[Unit]) -> str:
    """What ties an export and its annotations to this sample: the units' ids and what is shown."""
    h = hashlib.sha256()
    for u in units:
        h.update(json.dumps([u.unit_id, u.shown], sort_keys=True, ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()[:12]


class Sample:
    """A sample file: its units (in a fixed order) and its header section `human`."""

    def __init__(self, units: list[Unit], info: dict[str, Any], path: Path | None = None):
        self.units, self.info, self.path = units, info, path
        self.by_id = {u.unit_id: u for u in units}

    @property
    def task(self) -> Task:
        task: Task = self.info["task"]
        return task

    @property
    def digest(self) -> str:
        return str(self.info["digest"])

    def write(self, path: str | Path, provenance: dict[str, Any]) -> None:
        write_jsonl(path, self.units, SAMPLE_KIND, provenance, header={"human": self.info})

    @classmethod
    def read(cls, path: str | Path) -> Sample:
        res = read_jsonl(path, Unit, kind=SAMPLE_KIND)
        info = res.header.get("human")
        if not isinstance(info, dict) or info.get("task") not in LABELS or not isinstance(info.get("digest"), str):
            raise HumanError(f"{path}:1: field 'human': not a sample written by `kalma human sample`")
        units = list(res.records)
        if sample_digest(units) != info["digest"]:
            raise HumanError(f"{path}: its units do not match the digest in its header ({info['digest']}): the file was edited after sampling")
        return cls(units, info, Path(path))


def read_labels(paths: Sequence[str | Path], sample: str | Path = "SAMPLE") -> list[Label]:
    """The labels files `kalma human import` wrote; an annotators' CSV or a Label Studio export
    given here instead is told to go through import first (which checks every row)."""
    out: list[Label] = []
    for p in paths:
        try:
            kind = read_header(p).get("kind")
        except RecordError:
            kind = None
        if kind != LABELS_KIND:
            what = f"a {kind!r} file" if kind else "an annotators' CSV or a Label Studio export, by the look of it"
            raise HumanError(f"{p}:1: not a labels file of `kalma human import` ({what}): import it first, `kalma human import {sample} {p} -o labels.jsonl`")
        out += list(read_jsonl(p, Label, kind=LABELS_KIND))
    return out
