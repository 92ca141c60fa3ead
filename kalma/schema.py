"""Typed records shared by every stage, one JSON object per line on disk.

Every record file starts with a header line naming its kind and format version, so a reader
can refuse a file it does not understand instead of misreading it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationInfo, field_validator, model_serializer, model_validator

# 2: EntityGraph.property_aliases; 3: scores and summaries per metric; 4: per-sentence verdicts in scores;
# 5: every [NA] mark of a sentence, and `precise` flags that add up to the precision reported
FORMAT_VERSION = 5
# (version 1 and 2 datasets, answers and KGs still read; no output of another version is resumed)

Setting = Literal["general", "specific"]  # which of an entry's two questions is asked

QID_RE = re.compile(r"^Q[0-9]+\Z")  # \Z, not $: "Q1\n" is no QID; [0-9], not \d: nor is "Q١"
PID_RE = re.compile(r"^P[0-9]+\Z")
# A date value as triples hold it: ISO `YYYY-MM-DD`, `-` before a BCE year. The release writes
# dates so; KG sources render Wikidata's `+1596-07-08T00:00:00Z` to it (`kalma.kg.base.render_date`).
ISO_DATE_RE = re.compile(r"^(-?)([0-9]{1,4})-([0-9]{2})-([0-9]{2})\Z")
_WS_RE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """NFC and collapsed whitespace: the equality the citation metrics use."""
    return _WS_RE.sub(" ", unicodedata.normalize("NFC", text)).strip()


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Triple(Record):
    """One statement: subject --relation--> value.

    `value` is a QID when `value_type == "item"`, else the literal's lexical form
    (ISO date for times). `value_label` is what a reader (and a citation) sees.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str
    subject_label: str = ""
    relation: str = Field(description="Wikidata property id, e.g. P19; may be '' for imported data")
    relation_label: str
    value: str
    value_label: str
    value_type: Literal["item", "literal"] = "item"

    @field_validator("subject")
    @classmethod
    def _qid(cls, v: str) -> str:
        if not QID_RE.match(v):
            raise ValueError(f"subject must be a QID like Q42, got {v!r}")
        return v

    @field_validator("relation")
    @classmethod
    def _pid(cls, v: str) -> str:
        if v and not PID_RE.match(v):
            raise ValueError(f"relation must be a PID like P19, got {v!r}")
        return v

    @field_validator("relation_label", "value_label")
    @classmethod
    def _nonempty(cls, v: str) -> str:
        if not normalize_text(v):
            raise ValueError("must not be empty")
        return v

    def key(self) -> tuple[str, str, str]:
        """The identity a citation is compared with: (QID, relation label, value label)."""
        return (self.subject, normalize_text(self.relation_label), normalize_text(self.value_label))


class EntityGraph(Record):
    """The one-hop subgraph of one entity; a multi-valued property gives several triples."""

    qid: str
    label: str
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    triples: list[Triple] = Field(default_factory=list)
    property_aliases: dict[str, list[str]] = Field(default_factory=dict, description="PID -> other names of the properties used (Wikidata skos:altLabel)")

    @field_validator("qid")
    @classmethod
    def _qid(cls, v: str) -> str:
        if not QID_RE.match(v):
            raise ValueError(f"qid must look like Q42, got {v!r}")
        return v

    def values(self) -> list[str]:
        return [t.value_label for t in self.triples]


class KnowledgeGraph(Record):
    """The knowledge given for one question: one graph per entity, in a stable order."""

    entities: list[EntityGraph] = Field(default_factory=list)

    def triples(self) -> list[Triple]:
        return [t for e in self.entities for t in e.triples]

    def keys(self) -> set[tuple[str, str, str]]:
        return {t.key() for t in self.triples()}

    def qids(self) -> list[str]:
        return [e.qid for e in self.entities]

    def without(self, removed: set[tuple[str, str, str]]) -> KnowledgeGraph:
        """A copy lacking the triples whose keys are in `removed` (knowledge removal)."""
        return KnowledgeGraph(entities=[e.model_copy(update={"triples": [t for t in e.triples if t.key() not in removed]}) for e in self.entities])


class SeedRecord(Record):
    """A relation record the dataset builder starts from."""

    paragraph: str
    person_a: str
    relation: str
    person_b: str
    source: str = ""
    source_line: int | None = None


class RecordsLine(SeedRecord):
    """A line of a records file (`kalma check --kind records`): a seed record and the optional
    `class_a`/`class_b` columns, the classes each end is looked up in (`Q515|Q1549591`)."""

    class_a: str = ""
    class_b: str = ""

    @field_validator("class_a", "class_b")
    @classmethod
    def _classes(cls, v: str) -> str:
        for c in v.replace(",", "|").split("|"):
            if c.strip() and not QID_RE.match(c.strip().upper()):
                raise ValueError(f"{c.strip()!r} is not a Wikidata class id (Q and digits)")
        return v


class Candidate(Record):
    triple: Triple
    specificity: float
    coherence: float
    perplexity: float | None
    score: float


class RoundTrace(Record):
    """What one evolution round saw, chose and wrote."""

    round: int
    kind: Literal["annotate", "extend", "questions"]
    candidates: list[Candidate] = Field(default_factory=list)
    chosen: Triple | None = None
    kept: list[Triple] = Field(default_factory=list)
    attempts: int = 1
    status: Literal["ok", "skipped", "failed"] = "ok"
    note: str = ""
    paragraph: str = ""


def same_question(a: str, b: str) -> bool:
    """Whether two questions are the same text, case and spacing aside."""
    return normalize_text(a).casefold() == normalize_text(b).casefold()


class DatasetEntry(Record):
    """One question pair with its knowledge. An entry that needs no knowledge (an empty minimum
    set: `null` means unknown, as in the authors' release) or whose two questions are the same
    text is not a dataset entry: it is refused here, so `kalma check` and every reader refuse it."""

    id: str
    general_question: str
    specific_question: str
    seed: SeedRecord | None = None
    people: list[str] = Field(default_factory=list)
    knowledge_pool: KnowledgeGraph = Field(default_factory=KnowledgeGraph)
    minimum_set: list[Triple] | None = Field(default=None, description="None when unknown (e.g. imported from the authors' release)")
    reference: str = Field(default="", description="the builder's final paragraph, citations stripped")
    trace: list[RoundTrace] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("specific_question")
    @classmethod
    def _asked(cls, v: str, info: ValidationInfo) -> str:
        if not normalize_text(v):
            raise ValueError("empty")
        general = info.data.get("general_question") or ""
        if normalize_text(general) and same_question(general, v):
            raise ValueError("the same text as general_question")
        return v

    @field_validator("minimum_set")
    @classmethod
    def _needs_knowledge(cls, v: list[Triple] | None) -> list[Triple] | None:
        if v is not None and not v:
            raise ValueError("empty: an entry needs at least one piece of knowledge (null when unknown)")
        return v

    def question(self, setting: Setting) -> str:
        return self.general_question if setting == "general" else self.specific_question

    def absent_from(self, kg: KnowledgeGraph) -> list[Triple] | None:
        """The minimum-set knowledge `kg` lacks: what a claim needing it should mark [NA] (None
        when the minimum set is unknown). Nothing under gold retrieval; the removed triples under
        knowledge removal; what retrieval missed otherwise."""
        if self.minimum_set is None:
            return None
        given = kg.keys()
        return [t for t in self.minimum_set if t.key() not in given]


class LLMCall(Record):
    """One LLM call of a build, as sent and as answered: what a published dataset is audited by."""

    step: str  # annotate | extend | general-question | specific-question
    round: int
    attempt: int = 0
    backend: str
    seed: int | None
    temperature: float
    max_tokens: int
    messages: list[dict[str, str]]
    reply: str
    reasoning: str | None = None
    finish_reason: str | None = None


class BuildTrace(Record):
    """What building one entry did: every LLM call, and whether the entry was written or why not."""

    entry_id: str
    status: Literal["written", "failed"]
    failures: list[str] = Field(default_factory=list, description="why the entry was not written (BUILD_FAILURES)")
    source: str = ""
    source_line: int | None = None
    seed: int
    calls: list[LLMCall] = Field(default_factory=list)


class RemovedRecord(Record):
    """A relation record the builder did not build from, with its line and the reason."""

    source: str
    line: int
    stage: Literal["selection", "disambiguation"]
    reason: str
    detail: str = ""
    person_a: str = ""
    relation: str = ""
    person_b: str = ""


class Answer(Record):
    entry_id: str
    text: str
    model: str = Field(default="", description="who wrote it; metadata only: a file of just entry_id and text is read (kalma.answers_file)")
    setting: Setting = "specific"
    settings: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    kg: KnowledgeGraph | None = Field(default=None, description="the KG given to the model; None means the dataset entry's pool")
    absent: list[Triple] | None = Field(default=None, description="knowledge removed from the KG for the [NA] metrics")
    run: str = Field(default="", description="distinguishes several answers to one entry (seed, ablation)")
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _foreign_fields(cls, data: Any) -> Any:
        """Fields other systems add (`question`, `docs`, `id`…) describe their run: kept under
        `meta`, never a reason to refuse the answer."""
        if not isinstance(data, dict):
            return data
        extra = {k: v for k, v in data.items() if k not in cls.model_fields}
        if not extra:
            return data
        meta = data.get("meta", {})
        own = {k: v for k, v in data.items() if k in cls.model_fields}
        return {**own, "meta": {**extra, **meta}} if isinstance(meta, dict) else own  # a meta that is no object fails as itself

    def answer_id(self) -> str:
        return f"{self.entry_id}#{self.run}" if self.run else self.entry_id


class Compact(Record):
    """Written without its empty fields (None, "", []): a scores file holds thousands of verdicts,
    and reading one back gives the defaults again."""

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None and v != "" and v != []}


CitationOutcome = Literal["correct", "wrong", "unaligned", "unjudged", "malformed"]
NAOutcome = Literal["entails absent knowledge", "irrelevant: counts correct", "wrong", "unscored"]


class CitationVerdict(Compact):
    """One citation of a sentence, as written and as every metric judged it; a field no metric of
    the run judged is None. `verdict` sums it up, the first that applies: `malformed` (markup that
    cites nothing), `wrong` (not in the KG given), `unaligned` (the sentence does not entail it),
    `unjudged` (no entailment judgement for it), else `correct`. Whether it was needed is `in_minimum`, apart."""

    bracket: str = Field(description="the bracket it was written in, as written")
    qid: str | None = None
    relation: str | None = None
    value: str | None = None
    malformed: str | None = Field(default=None, description="the markup problem (kalma.citations.KINDS) when this bracket cites nothing")
    in_kg: bool | None = Field(default=None, description="the cited triple is in the KG given to the model (correctness)")
    in_minimum: bool | None = Field(default=None, description="it is in the entry's minimum knowledge set (None: no minimum set)")
    precise: bool | None = Field(default=None, description="it counts for precision under the run's formula (--compat)")
    entailment: float | None = Field(default=None, description="P(the sentence entails the triple), by the run's entailment backend")
    aligned: bool | None = None
    unjudged: bool | None = Field(default=None, description="the entailment backend gave no judgement (`table:…,unjudged=skip`): left out of alignment")
    verdict: CitationOutcome
    why: str = Field(default="", description="what made it wrong, unaligned or unneeded, in words")


class NAVerdict(Compact):
    """An [NA]-marked sentence as the [NA] metric judged it (KaLMA §4.3, with §4.5's rule)."""

    entailed: list[str] = Field(default_factory=list, description="the absent triples it entails, as `QID, relation: value`")
    relevance: float | None = Field(default=None, description="P(it addresses the question): asked only when it entails no absent triple")
    outcome: NAOutcome
    why: str = ""


class SentenceVerdict(Compact):
    """One sentence of an answer: where it is, what it cites, and every judgement of it."""

    index: int
    start: int = Field(description="answer.text[start:end] is the sentence as written")
    end: int
    text: str
    citations: list[CitationVerdict] = Field(default_factory=list)
    na: NAVerdict | None = Field(default=None, description="present when the sentence is marked [NA]: §4.3 judges the sentence, once")
    na_marks: list[str] = Field(default_factory=list, description="each [NA] mark of the sentence as written; all share `na`")
    outdated: list[str] = Field(default_factory=list, description="the outdated values it states (`--previous-kg`), as `QID, relation: value`")


class AnswerScores(Record):
    """One answer's scores, per metric: `values["citation"]["precision"]`. A None value means
    the metric could not apply. `markup` is what the parser read, whatever the metrics."""

    answer_id: str
    entry_id: str
    markup: dict[str, int] = Field(default_factory=dict, description="sentences, citations, [NA] marks, malformed by reason")
    values: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    notes: dict[str, str] = Field(default_factory=dict, description="per metric name, and 'missing'")
    details: dict[str, dict[str, Any]] = Field(default_factory=dict, description="per-answer findings, e.g. the graph an answer leaned on")
    verdicts: list[SentenceVerdict] = Field(
        default_factory=list, description="per sentence: its citations and [NA] mark, each judged (docs/formats.md: Verdicts)"
    )

    @field_validator("values")
    @classmethod
    def _finite(cls, v: dict[str, dict[str, float | None]]) -> dict[str, dict[str, float | None]]:
        """NaN or infinity is no score: stored as None ("could not apply"), never as invalid JSON."""
        return {m: {k: (None if x is not None and not math.isfinite(x) else x) for k, x in vals.items()} for m, vals in v.items()}


def first_entries(entries: Iterable[DatasetEntry], limit: int | None) -> tuple[list[DatasetEntry], str | None]:
    """The first `limit` entries, for a quick run (lm-evaluation-harness's --limit), and the
    caveat that every report of such a run carries; (all entries, None) when nothing is cut."""
    entries = list(entries)
    if limit is None or limit >= len(entries):
        return entries, None
    return entries[:limit], f"LIMITED: only the first {limit} of {len(entries)} dataset entries (--limit {limit}); not comparable with a full run"


def metric_value(metrics: dict[str, dict[str, float | None]], key: str) -> float | None:
    """`metrics["citation"]["f1_micro"]` from the qualified key "citation.f1_micro"; None when absent.

    >>> metric_value({"citation": {"f1_micro": 0.5}}, "citation.f1_micro"), metric_value({}, "na.na_recall_micro")
    (0.5, None)
    """
    metric, _, name = key.partition(".")
    return metrics.get(metric, {}).get(name)


class Coverage(Record):
    """A run that scored part of its dataset: the first entries (`--limit`), or only the entries
    a partial submission answers (`--partial`). Never ranked with a run of the whole dataset."""

    scored: int
    entries: int
    how: Literal["limit", "partial"]

    def label(self) -> str:
        return f"{self.scored} of {self.entries} entries" + (" (--limit)" if self.how == "limit" else "")


class Bounds(Record):
    """A figure's interval: `low` and `high` (None when no resample had a value), and how many
    resamples had no value (no denominator), which are never dropped in silence."""

    low: float | None
    high: float | None
    undefined: int = 0


class Spread(Record):
    """A figure over the runs of each entry (seeds, temperatures): its mean and sample standard
    deviation over runs. The model's sampling noise, apart from the interval over entries."""

    mean: float | None
    std: float | None
    runs: int


class Resampling(Record):
    """How the intervals were drawn: what a unit is and how many, the resamples, the seed and the level."""

    method: str
    unit: str
    units: int
    resamples: int
    seed: int
    level: float
    covers: str
    runs: list[str] = Field(default_factory=list, description="the runs whose spread `run_spread` gives, by condition")


class Summary(Record):
    """Aggregated scores per metric (`metrics["citation"]["f1_micro"]`) plus everything needed
    to say what produced them."""

    metrics: dict[str, dict[str, float | None]]
    finished: bool = Field(
        default=True, description="false while the evaluation runs and after it is stopped: the figures describe no complete run (rerun to resume)"
    )
    to_score: int | None = Field(default=None, description="the answers the evaluation is to score (counts.answers, once finished)")
    coverage: Coverage | None = Field(default=None, description="set when only part of the dataset was scored (--limit, --partial)")
    counts: dict[str, int] = Field(default_factory=dict, description="answers, sentences, citations, correct citations, [NA] marks, malformed")
    malformed: dict[str, int] = Field(default_factory=dict, description="malformed markup by reason (kalma.citations.KINDS)")
    dropped: dict[str, dict[str, int]] = Field(default_factory=dict, description="per metric and value: answers that dropped out of it")
    unavailable: dict[str, dict[str, str]] = Field(default_factory=dict, description="per metric and value that is n/a: why")
    support: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="per metric and value: what it is computed over (citations, sentences, triples, answers)"
    )
    scales: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="per metric and value: its scale (evaluation.base.SCALES); only rates are shown x100"
    )
    models: dict[str, str] = Field(default_factory=dict)
    caveats: list[str] = Field(
        default_factory=list, description="what a reader must know before any number: approximations, template answers, what the dataset cannot support"
    )
    failures: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per metric: unreadable replies of the model behind it (model, replies, unusable, examples, over_limit)"
    )
    problems: dict[str, int] = Field(default_factory=dict, description="problems of the answers file, by kind (kalma.answers_file.PROBLEM_KINDS)")
    notes: list[str] = Field(default_factory=list)
    provenance: dict[str, Any] = Field(default_factory=dict)
    intervals: dict[str, dict[str, Bounds]] = Field(
        default_factory=dict, description="per metric and value: its bootstrap interval over dataset entries (how: `resampling`)"
    )
    resampling: Resampling | None = None
    judges: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per role (nli, judge): the judge's spec, weights, threshold, direction, dtype and device (evaluation.identity)"
    )
    run_spread: dict[str, dict[str, dict[str, Spread]]] = Field(
        default_factory=dict,
        description="per condition (setting, temperature: what runs differ in but the seed; 'all runs' when one), metric and value, "
        "where entries have several runs: the spread over the runs (seeds)",
    )
    language: str = Field(default="en", description="the dataset's language (BCP-47, its header's): its sentences are split and its tokens read by its rules")

    splits: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per split of a dataset with splits (`records from-kg --changed-since`: changed, unchanged): its entries, answers, "
        "every figure and its interval over that split's entries; absent for a dataset without splits",
    )

    def value(self, key: str) -> float | None:
        return metric_value(self.metrics, key)

    @model_serializer(mode="wrap")
    def _no_splits(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A summary of a dataset without splits is written as before them."""
        out: dict[str, Any] = handler(self)
        if not out.get("splits"):
            out.pop("splits", None)
        return out


RECORD_KINDS: dict[str, type[Record]] = {
    "triples": Triple,
    "entity_graphs": EntityGraph,
    "dataset": DatasetEntry,
    "answers": Answer,
    "scores": AnswerScores,
    "records": RecordsLine,
    "build_trace": BuildTrace,
    "removed_records": RemovedRecord,
}
