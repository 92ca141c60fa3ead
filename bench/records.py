"""What the bench writes, as typed records that its writers and readers share: a bench run's
results (`results.json`) and a filed leaderboard submission (`submission.json`).

Every number a reader may copy comes with what produced it: the dataset (its name, a digest
of its entries, and their number), the answers it was computed over, the seeds, and the models.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

from evaluation.runner import dataset_digest
from kalma.schema import DatasetEntry, Summary

BIOKALMA_RELEASE_SIZE = 1085  # the paper's BioKaLMA: the dataset its reference rows were measured on


class BenchRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")


GENERIC_STEMS = {"dataset", "data", "ds", "test", "dev", "train", "questions", "entries", "kalma"}  # file names that name no dataset


class DatasetId(BenchRecord):
    """Which questions a number was measured on. The digest covers the entries themselves, not
    the file's header, so the same questions written twice have one identity."""

    name: str
    digest: str
    entries: int
    with_minimum_set: int
    source: str = ""
    language: str = "en"  # its questions' and labels' (a localization's entries say theirs in `meta`)
    classes: list[str] = Field(default_factory=list)  # the classes its entries are about, other than people (entries of people name none)

    @classmethod
    def of(cls, entries: Sequence[DatasetEntry], name: str) -> DatasetId:
        sources = {str(e.meta.get("source", "")) for e in entries}
        languages = {str(e.meta.get("language", "en")) for e in entries}
        return cls(
            name=name,
            digest=dataset_digest(entries),
            entries=len(entries),
            with_minimum_set=sum(e.minimum_set is not None for e in entries),
            source=sources.pop() if len(sources) == 1 else "",
            language=languages.pop() if len(languages) == 1 else "mixed",
            classes=sorted({str(c) for e in entries for c in e.meta.get("classes") or () if c != "Q5"}),
        )

    def of_people(self) -> bool:
        """Whether its entries are all about people, as BioKaLMA's are (the paper's figures' kind)."""
        return not self.classes

    @staticmethod
    def title(path: str | Path, entries: Sequence[DatasetEntry]) -> str:
        """What a board calls a dataset given no name: its file's stem, unless that says nothing
        (`dataset.jsonl`); then the source its entries share, else its folder's name."""
        stem = Path(path).stem
        if stem.lower() not in GENERIC_STEMS:
            return stem
        sources = {str(e.meta.get("source", "")) for e in entries}
        return sources.pop() if len(sources) == 1 and "" not in sources else f"{Path(path).resolve().parent.name}/{stem}"

    def is_biokalma_release(self) -> bool:
        """The authors' release, imported whole: the dataset the paper's own rows belong beside."""
        return self.source == "biokalma-release" and self.entries == BIOKALMA_RELEASE_SIZE

    def label(self) -> str:
        """The board's title of its table: the language said where it is not English."""
        said = "" if self.language == "en" else f"in {self.language}, "
        return f"{self.name} ({said}{self.entries:,} questions, {self.digest[7:19]})"


class Stat(BenchRecord):
    """One metric over seeds: the mean, the sample standard deviation (None with one seed), how
    many seeds had a value, and what the value was computed over, summed over seeds (citations,
    sentences, triples or answers); `low` and `high`, the 95% interval over the dataset's
    entries of the figure over every seed's answers pooled (the sampling of the questions, apart
    from the seeds' spread)."""

    mean: float | None
    std: float | None = None
    seeds: int = 0
    support: int = 0
    low: float | None = None
    high: float | None = None


class BenchRow(BenchRecord):
    """One condition of a bench run: one LLM, one seed, one setting, one retrieval."""

    experiment: str
    condition: str
    llm: str
    seed: int
    setting: str
    retrieval: str
    answers: int
    metrics: dict[str, dict[str, float | None]]
    support: dict[str, dict[str, int]] = Field(default_factory=dict)
    scales: dict[str, dict[str, str]] = Field(default_factory=dict)
    models: dict[str, str]
    caveats: list[str] = Field(default_factory=list)
    answers_file: str
    eval_dir: str
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0  # wall time of answering and scoring this condition (0 when both were resumed)
    from_cache: int = 0  # answers the call cache served rather than the model in this run


class TableRow(BenchRecord):
    """A table line: one condition and LLM over the run's seeds."""

    condition: str
    llm: str
    setting: str
    retrieval: str
    seeds: list[int]
    answers: int  # per seed
    models: dict[str, str]
    values: dict[str, Stat | None]
    scales: dict[str, str] = Field(default_factory=dict)


class BenchResults(BenchRecord):
    """`results.json` of `kalma bench run`."""

    config: dict[str, Any]
    dataset: DatasetId
    provenance: dict[str, Any]
    caveats: list[str] = Field(default_factory=list)
    results: list[BenchRow]
    tables: dict[str, list[TableRow]]
    tables_note: str


# A name on the board: ASCII letters and digits, '.', '_', '-': no look-alike letters from
# other scripts ("gpt-4о" with a Cyrillic о), and unique on the board whatever the case.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)


def _safe_name(v: str) -> str:
    if not NAME_RE.fullmatch(v):
        raise ValueError(f"use 1 to 64 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit (got {v!r})")
    return v


def _finite(v: Any) -> Any:
    """Settings recorded on the board are JSON values a reader can trust: no NaN or infinity."""
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("must be a finite number")
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


class SubmissionMeta(BenchRecord):
    """Who and what a submission is. From the answers file's header (`submission`), from
    `kalma bench submit` options, or both (options win); seeds default to the answers' own."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[StrictStr, AfterValidator(_safe_name)]
    model: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    url: Annotated[StrictStr, Field(max_length=500)] = ""
    description: Annotated[StrictStr, Field(max_length=2000)] = ""
    seeds: list[StrictInt] = Field(default_factory=list)
    settings: Annotated[dict[str, Any], AfterValidator(_finite)] = Field(default_factory=dict)


class Replaced(BenchRecord):
    filed: str
    answers_sha256: str


class FiledSubmission(BenchRecord):
    """`submissions/<name>/submission.json`: a scored submission as the board shows it."""

    submission: SubmissionMeta
    filed: str
    answers_sha256: str
    replaces: Replaced | None = None
    dataset: DatasetId
    answers_scored: int
    malformed_citations: int
    summary: Summary
