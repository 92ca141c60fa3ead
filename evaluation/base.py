"""What a metric sees and how it reports, plus the registry of metrics.

A metric is a small class that declares what it needs (`needs`) and what it reports
(`outputs`), scores a batch of answers into per-answer values and raw counts, and aggregates
its own rows (from a fresh run or a resumed per-answer file) into summary numbers. The runner
keeps every metric's values under the metric's name, so two metrics never share a key; tables
refer to a number by its qualified name, `citation.f1_micro`. Aggregation uses only the
stored rows, so a resumed run and an uninterrupted one give the same summary.
"""

from __future__ import annotations

import math
import statistics
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from kalma.citations import KINDS, ParsedAnswer, parse_answer
from kalma.errors import ConfigError
from kalma.languages import DEFAULT_LANGUAGE
from kalma.properties import Vocabulary
from kalma.registry import Registry
from kalma.schema import Answer, DatasetEntry, KnowledgeGraph, Triple

from .figures import Figure, Mean, columns, totals


@dataclass
class EvalItem:
    """One answer with everything needed to score it."""

    answer: Answer
    entry: DatasetEntry | None
    kg: KnowledgeGraph  # the KG GIVEN to the model: the answer's own, else the entry's pool
    parsed: ParsedAnswer
    minimum_set: list[Triple] | None
    absent: list[Triple] | None
    question: str
    vocabulary: Vocabulary  # what the entry knows: citations are read and judged against it
    reference: str = ""
    language: str = DEFAULT_LANGUAGE  # the dataset's: its sentences are split by that language's rules

    @classmethod
    def build(cls, answer: Answer, entry: DatasetEntry | None, absent: list[Triple] | None = None, language: str = DEFAULT_LANGUAGE) -> EvalItem:
        kg = answer.kg if answer.kg is not None else (entry.knowledge_pool if entry else KnowledgeGraph())
        absent = answer.absent if answer.absent is not None else absent
        minimum = entry.minimum_set if entry else None
        # Every relation and value the entry knows, not only the KG given: removing knowledge
        # must change judgements, never how an answer is read.
        vocab = Vocabulary.of(entry.knowledge_pool if entry else None, minimum, kg, absent)
        return cls(
            answer=answer,
            entry=entry,
            kg=kg,
            parsed=parse_answer(answer.text, vocab, language),
            minimum_set=minimum,
            absent=absent,
            question=entry.question(answer.setting) if entry else "",
            vocabulary=vocab,
            reference=entry.reference if entry else "",
            language=language,
        )

    def markup_counts(self) -> dict[str, int]:
        """What the parser read, whatever the metrics: sentences, citations, [NA] marks and
        malformed markup by reason."""
        counts = {
            "sentences": len(self.parsed.sentences),
            "citations": len(self.parsed.citations),
            "na_marks": self.parsed.na_count,
            "malformed": self.parsed.malformed,
        }
        for e in self.parsed.errors:
            counts[f"malformed_{e.kind}"] = counts.get(f"malformed_{e.kind}", 0) + e.count
        return counts


@dataclass
class EvalOptions:
    """Run configuration shared by all metrics (recorded verbatim in the summary). What only one
    metric uses is that metric's own typed option, set by its spec: `conner:agg=mean,l=3`."""

    compat: str = "default"  # "default" | "original" (the authors' code formulas)
    nli: str = "lexical"
    judge: str | None = None
    lm: str | None = None
    threshold: float = 0.5
    seed: int = 0
    language: str = DEFAULT_LANGUAGE  # the dataset's (its header's `language`): how its text is split and tokenised


@dataclass
class Scored:
    """One metric's findings on one answer; `notes` are keyed by the metric's name.

    `per_citation` (one dict per citation, in the parser's order) and `per_sentence` (by sentence
    index) are the metric's verdicts, in fields of `kalma.schema.CitationVerdict` and
    `SentenceVerdict`; `evaluation.verdicts` joins every metric's into the answer's verdicts."""

    values: dict[str, float | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    per_citation: list[dict[str, Any]] = field(default_factory=list)
    per_sentence: dict[int, dict[str, Any]] = field(default_factory=dict)


UNUSABLE_LIMIT = 0.5  # above this share of unreadable model replies, a model-judged value is n/a, never a number from the few left


@dataclass
class Failures:
    """How often the model behind a metric gave a reply that could not be read (a G-Eval rating
    that is no digit 1-5, a yes/no judge that said neither), with the first few replies."""

    model: str
    replies: int
    unusable: int
    examples: list[str] = field(default_factory=list)
    what: str = "replies"

    @property
    def over_limit(self) -> bool:
        return self.replies > 0 and self.unusable / self.replies > UNUSABLE_LIMIT

    def caveat(self, label: str) -> str:
        shown = ", ".join(repr(e) for e in self.examples[:3]) + (", …" if self.unusable > len(self.examples[:3]) else "")
        begin = f" (replies begin {shown})" if shown else ""
        then = (
            "values it decides are n/a: more than half could not be read"
            if self.over_limit
            else "values are computed from the readable ones" + (" (an unreadable judgement counts as no)" if self.what.startswith("yes/no") else "")
        )
        return f"{label}: {self.unusable} of {self.replies} {self.what} unreadable from {self.model}{begin}; {then}."


# What a number is, so that every table shows it the same way: a rate 0-1 is shown x100,
# everything else as it is, with its scale named.
SCALES = {
    "rate": "0-1, shown x100",
    "1-5": "a 1-5 rating",
    "-1..1": "-1 to 1",
    "count": "a count",
    "per answer": "a mean count per answer",
}


def show(value: float | None, scale: str = "rate") -> str:
    """A value as every table prints it: n/a when it could not be computed, rates x100.

    >>> show(0.698), show(1.0, "1-5"), show(None), show(3.0, "count")
    ('69.8', '1.00', 'n/a', '3')
    """
    if value is None:
        return "n/a"
    if scale == "rate":
        return f"{100 * value:.1f}"
    if scale == "count":
        return f"{value:g}"
    return f"{value:.2f}"


def show_signed(value: float | None, scale: str = "rate") -> str:
    """A difference as every table prints it, its sign read from the rounded figure: nothing that
    rounds to zero prints as -0.0 or +0.00.

    >>> show_signed(0.0123), show_signed(-0.0004), show_signed(-0.25, "1-5"), show_signed(None)
    ('+1.2', '0.0', '-0.25', 'n/a')
    """
    if value is None:
        return "n/a"
    text = show(abs(value), scale)
    if float(text) == 0:
        return show(0.0, scale)
    return ("+" if value > 0 else "-") + text


@dataclass(frozen=True)
class Card:
    measures: str
    range: str
    reference: str
    adaptation: str = ""


class Metric(ABC):
    """A metric declares its card, the models it `needs` (the runner marks it unavailable,
    with a note, when the run lacks one) and the summary keys it `outputs`, which the runner
    files under the metric's name (it fails loudly when `aggregate` returns other keys)."""

    name: str
    card: Card
    needs: tuple[str, ...] = ()  # run models: "nli", "judge", "lm"; per-item data is in the card
    outputs: tuple[str, ...] = ()
    scales: ClassVar[dict[str, str]] = {}  # output -> a key of SCALES; unlisted outputs are rates

    def __init__(self, options: EvalOptions):
        self.options = options

    def scale(self, output: str) -> str:
        return self.scales.get(output, "rate")

    def models(self) -> dict[str, str]:
        """Which model produced this metric's numbers (spec and any caveat)."""
        return {}

    def caveats(self) -> list[str]:
        """What a reader must know about these numbers (e.g. an approximate entailment backend)."""
        return []

    def failures(self, rows: Sequence[Scored]) -> Failures | None:
        """Unreadable replies of the model behind this metric, over these rows; None when it asks
        no model whose replies can fail to parse."""
        return None

    def support(self, rows: Sequence[Scored], dropped: dict[str, int]) -> dict[str, int]:
        """How many things each output is computed over: by default the answers that have it;
        micro figures override this with their denominators (citations, sentences, triples)."""
        return {k: len(rows) - dropped.get(k, 0) for k in self.outputs}

    def unavailable(self, output: str, rows: Sequence[Scored]) -> str:
        """Why `output` is n/a over `rows`, when this metric knows better than the rows' notes (a
        backend that cannot give it, an empty denominator); "" leaves it to the notes."""
        return ""

    def model_spec(self, need: Literal["judge", "lm"]) -> str:
        """The run's `--judge` or `--lm` spec, for a metric that declares the need; the runner
        never scores a metric without it, so this fails only a direct caller."""
        spec = getattr(self.options, need)
        if not spec:
            raise ConfigError(f"metric {self.name!r} needs --{need}")
        return str(spec)

    def prepare(self, entries: Sequence[DatasetEntry]) -> None:
        """Called once with the whole dataset before scoring (for metrics that sample other entries)."""

    @abstractmethod
    def score(self, items: Sequence[EvalItem]) -> list[Scored]: ...

    def figures(self) -> dict[str, Figure]:
        """Each output as a formula over per-answer columns summed (`evaluation.figures`): the one
        declaration its summary value and its bootstrap interval are both computed from. An output
        left out (a spread, a count of failures) is reported without an interval."""
        return {}

    def aggregate(self, rows: Sequence[Scored]) -> tuple[dict[str, float | None], dict[str, int]]:
        """Summary values from this metric's own rows and, per value, how many answers dropped out
        of it: by default every output from its figure, a mean's answers without the value dropped."""
        figures = self.figures()
        sums = totals(rows, columns(figures))
        values = {k: (None if math.isnan(v := float(f(sums))) else v) for k, f in figures.items()}
        return values, {k: f.dropped(rows) for k, f in figures.items() if isinstance(f, Mean)}


# ---------------------------------------------------------------- shared arithmetic


def ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


MARKUP_TOTALS = ("sentences", "citations", "na_marks", "malformed")
MALFORMED_REASONS = tuple(KINDS)


def total(rows: Sequence[Scored], key: str) -> int:
    """The sum of one per-answer count: the denominator of a micro figure."""
    return sum(r.counts.get(key, 0) for r in rows)


def approximate_entailment(spec: str) -> list[str]:
    """The caveat every report carries when entailment comes from a rule-based stand-in."""
    from kalma.models import get_entailment

    if get_entailment(spec).approximate:
        return [f"Entailment by `{spec}`: a rule-based APPROXIMATION of an NLI model, not a model's judgement."]
    return []


def decisive(spec: str, metric: str) -> None:
    """Refuse an entailment backend that may leave a pair unjudged (`table:…,unjudged=skip`) for a
    metric that counts every pair: a missing judgement must never read as "not entailed"."""
    from kalma.models import get_entailment

    if get_entailment(spec).abstains:
        raise ConfigError(
            f"metric {metric!r}: --nli {spec} leaves pairs without a judgement, which only the alignment metric leaves out; pass --metrics alignment"
        )


def entailment_failures(spec: str) -> Failures | None:
    """Replies an LLM judge (`llm:SPEC`) gave this process that were neither yes nor no."""
    from kalma.models import get_entailment

    ent = get_entailment(spec)
    asked = getattr(ent, "asked", 0)
    return Failures(spec, asked, ent.unreadable, list(ent.examples), "yes/no judgements") if asked else None  # type: ignore[attr-defined]


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.pstdev(values) if len(values) > 1 else 0.0)


# ---------------------------------------------------------------- registry


METRICS: Registry[Metric] = Registry("metric", "kalma.metrics")
METRICS.add("citation", "evaluation.citation_quality:CitationQuality", argument="none")
METRICS.add("alignment", "evaluation.alignment:Alignment", argument="none")
METRICS.add("na", "evaluation.conscious_incompetence:ConsciousIncompetence", argument="none")
METRICS.add("geval", "evaluation.text_quality:TextQuality", argument="none")
METRICS.add("kprec", "evaluation.instruct_qa:InstructQA", argument="none")
METRICS.add("consens", "evaluation.consens:ConSens", argument="none")
METRICS.add("conner", "evaluation.conner:ConnerIntrinsic", argument="none")
METRICS.add("conner-extrinsic", "evaluation.conner:ConnerExtrinsic", argument="none")
METRICS.add("outdated", "evaluation.outdated:OutdatedClaims", argument="optional", raw=True)  # outdated:OLD, a KG spec
DEFAULT_METRICS = ("citation", "alignment", "na")


def get_metric(name: str, options: EvalOptions) -> Metric:
    return METRICS.build(name, options=options)


def declared_outputs() -> set[str]:
    """Every qualified output ("citation.f1_micro") of every registered metric: what tables may name."""
    classes = [METRICS.factory(name) for name in METRICS.names()]
    return {f"{getattr(cls, 'name', '?')}.{key}" for cls in classes for key in getattr(cls, "outputs", ())}


def check_outputs(keys: Sequence[str], where: str) -> None:
    """A table that names a key no metric declares fails here, not with an empty column."""
    known = declared_outputs()
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ValueError(f"{where}: {', '.join(unknown)} is not an output any metric declares (metric.key)")


def knowledge_prose(kg: KnowledgeGraph) -> str:
    """The KG as plain sentences, the form LM-based metrics condition on."""
    from kalma.verbalize import verbalize

    return " ".join(verbalize(t, e.label) for e in kg.entities for t in e.triples)


def lm_context(question: str, knowledge: str) -> str:
    """The one prompt layout under which LM-based metrics score an answer."""
    return f"Knowledge: {knowledge}\n\nQuestion: {question}\n\nAnswer:"
