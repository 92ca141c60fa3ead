"""Every verdict of an answer in one place: per sentence, its span, its citations as written and
as each metric judged them, and its [NA] mark.

The parser gives the skeleton (sentences, their spans, each citation and the bracket it came from,
markup that cites nothing); each metric adds its own fields per citation or per sentence
(`Scored.per_citation`, `Scored.per_sentence`); `assemble` joins them and sums each citation up in
one word. `kalma.frames.verdict_rows` gives them as one row per citation or [NA] mark (`kalma
export --verdicts`), the table pandas reads.

>>> from kalma.schema import Answer
>>> from .base import EvalItem, Scored
>>> item = EvalItem.build(Answer(entry_id="e", text="Born in Rome [Q1, place of birth: Rome]. Died [NA]."), None)
>>> v = assemble(item, [Scored(per_citation=[{"in_kg": False, "why": "Q1 is not an entity of the KG given"}])])
>>> [(s.index, s.text, [c.verdict for c in s.citations]) for s in v]
[(0, 'Born in Rome [Q1, place of birth: Rome].', ['wrong']), (1, 'Died [NA].', [])]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kalma.citations import KINDS, MarkupError
from kalma.schema import CitationOutcome, CitationVerdict, NAVerdict, SentenceVerdict

from .base import EvalItem, Scored


def _join(into: dict[str, Any], found: dict[str, Any], where: str) -> None:
    """One metric's fields into what others found; two metrics never judge one field, except
    `why`, whose reasons add up."""
    for k, v in found.items():
        if k == "why":
            into["why"] = "; ".join(x for x in (into.get("why", ""), v) if x)
        elif k in into and into[k] != v:
            raise RuntimeError(f"{where}: two metrics judged {k!r} differently ({into[k]!r}, {v!r})")
        else:
            into[k] = v


def outcome(c: dict[str, Any]) -> CitationOutcome:
    """The first that applies: malformed, wrong (not in the KG given), unaligned, unjudged, correct."""
    if c.get("malformed"):
        return "malformed"
    if c.get("in_kg") is False:
        return "wrong"
    if c.get("aligned") is False:
        return "unaligned"
    if c.get("unjudged"):
        return "unjudged"
    return "correct"


def assemble(item: EvalItem, scored: Sequence[Scored]) -> list[SentenceVerdict]:
    """The answer's sentences with every metric's verdicts joined (see the module docstring)."""
    flat: list[dict[str, Any]] = []
    for s in item.parsed.sentences:
        flat += [{"bracket": w, "qid": c.qid, "relation": c.relation, "value": c.value} for c, w in zip(s.citations, s.written)]
    sentence_fields: dict[int, dict[str, Any]] = {}
    for sc in scored:
        if sc.per_citation and len(sc.per_citation) != len(flat):
            raise RuntimeError(f"{item.answer.answer_id()}: a metric judged {len(sc.per_citation)} citations of {len(flat)}")
        for into, found in zip(flat, sc.per_citation):
            _join(into, found, item.answer.answer_id())
        for i, found in sc.per_sentence.items():
            _join(sentence_fields.setdefault(i, {}), found, item.answer.answer_id())
    out: list[SentenceVerdict] = []
    at = iter(flat)
    text = item.answer.text
    sentences = item.parsed.sentences
    # A stray `]` belongs to no bracket, so to no sentence of the parse: here, to the one it is in.
    own = {id(e) for s in sentences for e in s.errors}
    stray = [e for e in item.parsed.errors if id(e) not in own]
    for i, s in enumerate(sentences):
        cits = [CitationVerdict(**c, verdict=outcome(c)) for c in (next(at) for _ in s.citations)]
        # markup that cites nothing is shown where it was written, with its reason
        errors = s.errors + [e for e in stray if s.start <= e.offset < s.end or (i == len(sentences) - 1 and e.offset >= s.end)]
        cits += [CitationVerdict(bracket=_written(text, e), malformed=e.kind, verdict="malformed", why=_reason(e)) for e in errors]
        na = sentence_fields.get(i, {}).get("na")
        if s.na and na is None:
            na = NAVerdict(outcome="unscored", why="the [NA] metric did not run")
        outdated = sentence_fields.get(i, {}).get("outdated", [])
        out.append(SentenceVerdict(index=i, start=s.start, end=s.end, text=s.text, citations=cits, na=na, na_marks=s.na_marks, outdated=outdated))
    return out


def _written(text: str, e: MarkupError) -> str:
    """The markup an error is about, as written: its bracket (at most 200 characters), else its snippet."""
    if text[e.offset : e.offset + 1] == "[":
        close = text.find("]", e.offset)
        end = close + 1 if 0 < close < e.offset + 200 else e.offset + 200
        return text[e.offset : end]
    return e.snippet


def _reason(e: MarkupError) -> str:
    times = f", {e.count} in a row" if e.count > 1 else ""
    return f"{e.kind}: {KINDS.get(e.kind, e.kind)}{times}"
