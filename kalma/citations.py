"""Citation markup: parse, format and sentence-split attributed answers.

Markup (kalma-spec, "Citation markup")::

    Artemisia was born in Rome [Q212657, place of birth: Rome, occupation: painter].
    Her father was a painter [Q367360, Orazio Gentileschi, occupation: painter] [NA].

A bracket holds `[NA]` (also `[N/A]`, `[na]`) or one or more entity blocks. A block is a QID
(`Q123` or `qid: Q123`), an optional bare entity name (or `name: ...`), then `relation: value`
pairs. Each (QID, relation, value) is one citation.

Values may contain `, ` and `: ` (`Washington, D.C.`, `Hitman: My Real Life`). Given the KG's
relation labels, a block is split only before a known label; without them, before any
`label: ` that follows a comma (so `Washington, D.C.` survives, `Love, Death: Robots` needs
the vocabulary).
`[`, `]` and `\\` inside a value are written escaped with a backslash.

Nothing is dropped silently: unparseable brackets, empty values and unbalanced brackets come
back as `MarkupError`s attached to the sentence they occur in.

>>> a = parse_answer("Orazio was a painter [Q367360, occupation: painter]. He died in 1639 [NA].")
>>> [(s.clean, len(s.citations), s.na) for s in a.sentences]
[('Orazio was a painter.', 1, False), ('He died in 1639.', 0, True)]
>>> a.sentences[0].citations[0].key()
('Q367360', 'occupation', 'painter')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .schema import normalize_text

_NA_RE = re.compile(r"^\s*N\s*/?\s*A\s*$", re.IGNORECASE)
_NAME_RE = re.compile(r"^name\s*:\s*(.*)$", re.IGNORECASE | re.DOTALL)
_PAIR_RE = re.compile(r"^([^:]+?)\s*:\s*(.*)$", re.DOTALL)
# Private-use characters stand in for escaped brackets and for masked citations.
_ESC = {"\\\\": "\ue010", "\\[": "\ue011", "\\]": "\ue012"}
_UNESC = {"\ue010": "\\", "\ue011": "[", "\ue012": "]"}
_MASK_OPEN, _MASK_CLOSE = "\ue000", "\ue001"

ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc no mt gen col lt sgt capt rev hon inc ltd co fr sen rep gov pres "
    "e.g i.e ca cf approx dept univ jan feb mar apr jun jul aug sep sept oct nov dec".split()
)


@dataclass(frozen=True)
class Citation:
    """One cited triple. Equality ignores the optional entity name."""

    qid: str
    relation: str
    value: str
    entity_name: str = field(default="", compare=False)

    def key(self) -> tuple[str, str, str]:
        return (self.qid, normalize_text(self.relation), normalize_text(self.value))



@dataclass(frozen=True)
class MarkupError:
    kind: str  # "no_qid" | "empty_value" | "empty_bracket" | "unclosed" | "unopened" | "bare_text"
    snippet: str
    offset: int

    def __str__(self) -> str:
        return f"{self.kind} at offset {self.offset}: {self.snippet!r}"


@dataclass
class Bracket:
    start: int
    end: int
    raw: str
    citations: list[Citation]
    na: bool
    errors: list[MarkupError]


@dataclass
class Sentence:
    text: str  # as written, citations included
    clean: str  # citations removed, whitespace normalised: the entailment premise
    citations: list[Citation]
    na: bool
    errors: list[MarkupError]


@dataclass
class ParsedAnswer:
    sentences: list[Sentence]
    errors: list[MarkupError]

    @property
    def citations(self) -> list[Citation]:
        return [c for s in self.sentences for c in s.citations]

    @property
    def na_count(self) -> int:
        return sum(s.na for s in self.sentences)


# ---------------------------------------------------------------- brackets


def _escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _hide_escapes(text: str) -> str:
    for k, v in _ESC.items():
        text = text.replace(k, v)
    return text


def _to_original(text: str) -> str:
    """Hidden escapes back to their written, backslashed form."""
    return text.replace("\ue010", "\\\\").replace("\ue011", "\\[").replace("\ue012", "\\]")


def _restore_escapes(text: str) -> str:
    for k, v in _UNESC.items():
        text = text.replace(k, v)
    return text


_QID_TOKEN_RE = re.compile(r"(?:^|,\s*)(?:qid\s*:\s*)?(Q\d+)\s*(?=,|$)", re.IGNORECASE)


_COMMA = re.compile(r",\s*")


def _known_labels(relations: Iterable[str] | None) -> frozenset[str] | None:
    return None if relations is None else frozenset(normalize_text(r).lower() for r in relations)


def _split_pieces(text: str, known: frozenset[str] | None) -> list[str]:
    """Split a block's text before each `label:` that follows a comma: a known label when a
    vocabulary is given, else any comma-free label followed by a colon and a space."""
    pieces, start = [], 0
    for m in _COMMA.finditer(text):
        colon = text.find(":", m.end())
        if colon < 0:
            break
        label = text[m.end() : colon]
        if known is None:
            ok = bool(label.strip()) and "," not in label and (colon + 1 == len(text) or text[colon + 1].isspace())
        else:
            ok = normalize_text(label).lower() in known
        if ok:
            pieces.append(text[start : m.start()])
            start = m.end()
    pieces.append(text[start:])
    return pieces


def parse_bracket(
    content: str, relations: Iterable[str] | None = None, *, offset: int = 0, _known: frozenset[str] | None | bool = False
) -> tuple[list[Citation], bool, list[MarkupError]]:
    """Parse the inside of one bracket into (citations, is_na, errors)."""
    hidden = normalize_text(_hide_escapes(content))
    if _NA_RE.match(hidden):
        return [], True, []
    if not hidden:
        return [], False, [MarkupError("empty_bracket", "[]", offset)]
    known = _known_labels(relations) if _known is False else _known
    tokens = list(_QID_TOKEN_RE.finditer(hidden))
    if not tokens or tokens[0].start() != 0:
        head = hidden[: tokens[0].start()] if tokens else hidden
        return [], False, [MarkupError("no_qid", _restore_escapes(head), offset)]
    citations: list[Citation] = []
    errors: list[MarkupError] = []
    for tok, nxt in zip(tokens, tokens[1:] + [None]):
        qid = tok.group(1).upper()
        rest = hidden[tok.end() : nxt.start() if nxt else len(hidden)]
        cits, errs = _parse_block(qid, rest, known, offset)  # type: ignore[arg-type]
        citations += cits
        errors += errs
    return citations, False, errors


def _parse_block(qid: str, rest: str, known: frozenset[str] | None, offset: int) -> tuple[list[Citation], list[MarkupError]]:
    """`rest` is what follows the QID: `, [name,] rel: value, rel: value...`."""
    citations: list[Citation] = []
    errors: list[MarkupError] = []
    name: str | None = None
    rest = re.sub(r"^\s*,\s*", "", rest)
    for seg in (p.strip() for p in _split_pieces(rest, known) if rest):
        nm = _NAME_RE.match(seg)
        pair = _PAIR_RE.match(seg)
        if name is None and not citations and (nm or not pair):
            name = (nm.group(1) if nm else seg).strip()
            continue
        if pair is None:  # a second bare piece: splits only happen before `label:`, so defensive
            errors.append(MarkupError("bare_text", _restore_escapes(seg), offset))
            continue
        relation, value = pair.group(1).strip(), pair.group(2).strip()
        if not value:
            errors.append(MarkupError("empty_value", _restore_escapes(seg), offset))
            continue
        citations.append(Citation(qid, _restore_escapes(relation), _restore_escapes(value), _restore_escapes(name or "")))
    return citations, errors


def find_brackets(text: str, relations: Iterable[str] | None = None) -> tuple[list[Bracket], list[MarkupError]]:
    """Every `[...]` in `text` (escapes honoured), parsed, plus stray-bracket errors."""
    known = _known_labels(relations)
    hidden = _hide_escapes(text)  # offsets below are over this escape-hidden text
    brackets: list[Bracket] = []
    stray: list[MarkupError] = []
    i, n = 0, len(hidden)
    while i < n:
        ch = hidden[i]
        if ch == "]":
            stray.append(MarkupError("unopened", "]", i))
            i += 1
            continue
        if ch != "[":
            i += 1
            continue
        close = hidden.find("]", i + 1)
        reopen = hidden.find("[", i + 1)
        if close == -1 or (reopen != -1 and reopen < close):
            stop = reopen if reopen != -1 else n
            err = MarkupError("unclosed", _restore_escapes(hidden[i:stop])[:80], i)
            brackets.append(Bracket(i, stop, _to_original(hidden[i:stop]), [], False, [err]))
            i = stop
            continue
        inner = hidden[i + 1 : close]
        cits, na, errs = parse_bracket(_to_original(inner), offset=i, _known=known)
        brackets.append(Bracket(i, close + 1, _to_original(hidden[i : close + 1]), cits, na, errs))
        i = close + 1
    return brackets, stray


def parse_citations(text: str, relations: Iterable[str] | None = None) -> tuple[list[Citation], list[MarkupError]]:
    """All citations in `text`, in order, ignoring sentence structure."""
    brackets, stray = find_brackets(text, relations)
    return [c for b in brackets for c in b.citations], [e for b in brackets for e in b.errors] + stray


# ---------------------------------------------------------------- sentences

_STOP_RE = re.compile(r"[.!?…]+[\"'”’)]*")
_MASK_RE = re.compile(f"{_MASK_OPEN}(\\d+){_MASK_CLOSE}")


def _is_abbreviation(masked: str, stop: int) -> bool:
    if masked[stop] != ".":
        return False
    j = stop
    while j > 0 and (masked[j - 1].isalpha() or masked[j - 1] == "."):
        j -= 1
    word = masked[j:stop]
    if not word:
        return False
    if len(word) == 1 and word.isupper():  # an initial: "J. R. R. Tolkien"
        return True
    if "." in word and all(len(p) == 1 for p in word.split(".")):  # a dotted acronym: "S.S. Lazio", "D.C."
        return True
    return word.lower().rstrip(".") in ABBREVIATIONS


def _sentence_ends(masked: str) -> list[int]:
    """Offsets just past each sentence (its trailing citations included)."""
    ends: list[int] = []
    for m in _STOP_RE.finditer(masked):
        if _is_abbreviation(masked, m.start()):
            continue
        j = m.end()
        while True:  # citations after the full stop belong to this sentence
            k = j
            while k < len(masked) and masked[k] in " \t\r\n":
                k += 1
            mm = _MASK_RE.match(masked, k)
            if not mm:
                break
            j = mm.end()
        k = j
        while k < len(masked) and masked[k].isspace():
            k += 1
        if k >= len(masked) or (k > j and not masked[k].islower()):
            ends.append(j)
    for m in re.finditer(r"\n\s*\n", masked):  # a blank line ends a sentence too
        ends.append(m.start())
    return sorted(set(ends))


def _clean(text: str) -> str:
    text = normalize_text(text)
    text = re.sub(r"\s+([.,;:!?…])", r"\1", text)
    return text


def parse_answer(text: str, relations: Iterable[str] | None = None) -> ParsedAnswer:
    """Split `text` into sentences (citations masked first) and parse each one's citations.

    `relations`: the KG's relation labels, used to split values that contain `, ` or `: `.
    """
    brackets, stray = find_brackets(text, relations)
    hidden = _hide_escapes(text)
    # Offsets in find_brackets are over `hidden`; build the mask over the same string.
    parts: list[str] = []
    pos = 0
    for idx, b in enumerate(brackets):
        parts.append(hidden[pos : b.start])
        parts.append(f"{_MASK_OPEN}{idx}{_MASK_CLOSE}")
        pos = b.end
    parts.append(hidden[pos:])
    masked = "".join(parts)

    sentences: list[Sentence] = []
    start = 0
    for end in _sentence_ends(masked) + [len(masked)]:
        chunk = masked[start:end]
        start = end
        if not chunk.strip():
            continue
        ids = [int(i) for i in _MASK_RE.findall(chunk)]
        raw = _to_original(chunk)
        raw = _MASK_RE.sub(lambda m: brackets[int(m.group(1))].raw, raw)
        clean = _clean(_restore_escapes(_MASK_RE.sub(" ", chunk)))
        if not clean and sentences:  # citations alone on a line: attach to the previous sentence
            prev = sentences[-1]
            prev.citations += [c for i in ids for c in brackets[i].citations]
            prev.na = prev.na or any(brackets[i].na for i in ids)
            prev.errors += [e for i in ids for e in brackets[i].errors]
            prev.text = f"{prev.text} {raw.strip()}"
            continue
        sentences.append(
            Sentence(
                text=raw.strip(),
                clean=clean,
                citations=[c for i in ids for c in brackets[i].citations],
                na=any(brackets[i].na for i in ids),
                errors=[e for i in ids for e in brackets[i].errors],
            )
        )
    errors = [e for b in brackets for e in b.errors] + stray
    return ParsedAnswer(sentences=sentences, errors=errors)


def strip_citations(text: str) -> str:
    """The answer's prose with all citation markup removed."""
    return " ".join(s.clean for s in parse_answer(text).sentences)


# ---------------------------------------------------------------- formatting


def format_citations(citations: Sequence[Citation], *, with_names: bool = False) -> str:
    """One bracket per run of citations sharing a QID: `[Q1, rel: value, rel2: value2]`."""
    out: list[str] = []
    for c in citations:
        if out and out[-1][1] == c.qid:
            out[-1][0].append(f"{_escape_value(c.relation)}: {_escape_value(c.value)}")
        else:
            head = [c.qid] + ([_escape_value(c.entity_name)] if with_names and c.entity_name else [])
            out.append(([*head, f"{_escape_value(c.relation)}: {_escape_value(c.value)}"], c.qid))  # type: ignore[arg-type]
    return "".join(f"[{', '.join(parts)}]" for parts, _ in out)


def format_sentence(text: str, citations: Sequence[Citation] = (), na: bool = False) -> str:
    """`text` with its citations (and [NA]) placed before its final punctuation."""
    body = text.rstrip()
    stop = ""
    m = re.search(r"[.!?]+$", body)
    if m:
        body, stop = body[: m.start()], m.group(0)
    marks = format_citations(citations) + ("[NA]" if na else "")
    return f"{body} {marks}{stop}" if marks else f"{body}{stop}"
