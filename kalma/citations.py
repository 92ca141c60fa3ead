"""Citation markup: parse, format and sentence-split attributed answers.

Grammar (kalma-spec, "Citation markup"; docs/citation-markup.md)::

    bracket  := "[" ( NA | block ( "," block )* | line ( ";" line )* ) "]"
    NA       := "NA" | "N/A" | "na" | "n / a"              (any case, inner spaces)
    block    := QID [ "," name ] ( "," pair )*
    QID      := "Q" digits | "qid:" "Q" digits               (any case; then "," or ":")
    name     := text without a pair's "label:"               the entity named, not a citation
    pair     := label ":" value                              one citation (QID, label, value)
    line     := QID "|" [ name "|" ] label "|" value         a knowledge line as the prompt lists it

Each pair is one citation, `name: X` included: the entity's name is a fact of the KG. A pair
starts after a comma at a label the vocabulary knows (which may itself hold a comma, as in
"languages spoken, written or signed"), or at any comma-free label followed by ": ". Whatever
follows a pair up to the next pair belongs to its value (`Washington, D.C.`). A pair that
follows a complete pair is its own citation, unless gluing it back gives a value the entry's
knowledge holds for that relation (`Love, Death: Robots`). Quotes around a label, or around a
value the entry does not hold with its quotes, are not part of it (`"place of birth": "Rome"`).
`[`, `]` and `\\` in a value are written with a backslash.

Sentences end at a full stop (not an abbreviation of the answer's language, initial, decimal or,
in German, ordinal: `kalma.languages.text`), a blank line, a list
item (`- `, `• `, `1. `, `2) `: models write lists without full stops), and a line whose last
token is a citation when the next line does not go on in lower case. An item's marker is not
part of its sentence.

Nothing is dropped silently: every problem comes back as a `MarkupError` on its sentence;
`KINDS` lists them. Parsing is linear in the length of the text and reserves no character:
any input, private-use characters included, parses.

>>> a = parse_answer("Orazio was a painter [Q367360, occupation: painter]. He died in 1639 [NA].")
>>> [(s.clean, len(s.citations), s.na) for s in a.sentences]
[('Orazio was a painter.', 1, False), ('He died in 1639.', 0, True)]
>>> a.sentences[0].citations[0].key()
('Q367360', 'occupation', 'painter')
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .languages import DEFAULT_LANGUAGE
from .languages.text import ENGLISH, TextRules, rules
from .properties import NAME_RELATION, Vocabulary, relation_norm
from .schema import normalize_text

KINDS = {
    "no_qid": "the bracket does not start with a QID",
    "no_pair": "a QID with no `relation: value` pair",
    "empty_value": "a pair with nothing after its colon",
    "empty_relation": "a pair with nothing before its colon",
    "empty_piece": "two commas with nothing between them",
    "trailing_separator": "a comma at the end of the bracket",
    "pipe_fields": "a `QID | entity | relation | value` citation without three or four fields",
    "empty_bracket": "`[]`",
    "unclosed": "`[` never closed",
    "unopened": "`]` never opened",
    "nested": "a bracket inside a bracket (a value writes `[` and `]` as `\\[` and `\\]`)",
    "too_much_markup": "more citation markup than any answer holds (`MARKUP_BUDGET`): the rest of the text is one span",
}
# Characters of bracket content one answer may hold, each bracket counted at least
# `_BRACKET_COST`: 40 times the markup of a long real answer, and what bounds a hostile one
# (a million pairs, or brackets) to a fraction of a second. Beyond it, the rest is one span
# with one `too_much_markup` error counting its brackets: nothing is dropped silently.
MARKUP_BUDGET = 100_000
_BRACKET_COST = 32

_NA_RE = re.compile(r"^\s*N\s*/?\s*A\s*$", re.IGNORECASE)
_QID_TOKEN_RE = re.compile(r"(?:^|,\s*)(?:qid\s*:\s*)?(Q\d+)\s*(?=[,:]|$)", re.IGNORECASE)
# The prompt's own knowledge line copied into a bracket: `[Q1 | Artemisia | place of birth | Rome]`.
_PIPE_TOKEN_RE = re.compile(r"(?:^|[;,]\s*|\s+)(?:qid\s*:\s*)?(Q\d+)\s*\|", re.IGNORECASE)
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»"}
# An escape, a whole bracket with no bracket or backslash inside (most are: one match, not two),
# or a run of opening or closing brackets.
_BRACKET_RUN_RE = re.compile(r"\\[\\\[\]]|\[([^\[\]\\]*)\]|\[+|\]+")
# A bracket with no bracket inside wrapped in as many more (`[[Q1, occupation: writer]]`, any depth).
_WRAPPED_RE = re.compile(r"(\[{2,})([^\[\]\\]*)(\]+)")
_UNESCAPE_RE = re.compile(r"\\([\\\[\]])")
_EMPTY_RUN_RE = re.compile(r",(?:[ \t\n]*,)+")

ABBREVIATIONS = ENGLISH.abbreviations  # each language's are `kalma.languages.text`'s
_ABBREVIATION_SPAN = 12  # looking further back than any abbreviation keeps splitting linear


@dataclass(frozen=True)
class Citation:
    """One cited triple as written. Equality ignores the optional entity name; judging it
    against a KG goes through a `Vocabulary` (property identity)."""

    qid: str
    relation: str
    value: str
    entity_name: str = field(default="", compare=False)

    def key(self) -> tuple[str, str, str]:
        """The citation as written, normalised: (QID, relation label, value)."""
        return (self.qid, normalize_text(self.relation), normalize_text(self.value))


@dataclass(slots=True)  # not frozen: hostile text makes hundreds of thousands, and a frozen init costs 5x
class MarkupError:
    """One problem, or `count` of the same kind in a row (`[[[[`, `]]]]`): hostile text may
    hold a million, and each is counted without costing an object of its own."""

    kind: str  # one of KINDS
    snippet: str
    offset: int
    count: int = 1

    def __str__(self) -> str:
        times = f" ({self.count} in a row)" if self.count > 1 else ""
        return f"{self.kind} at offset {self.offset}{times}: {self.snippet!r}"


@dataclass(slots=True)
class Bracket:
    start: int
    end: int
    raw: str
    citations: list[Citation]
    na: bool
    errors: list[MarkupError]
    # one bracket repeated with only spaces between is one Bracket: `own` is each repeat as written
    times: int = 1
    own: str = ""

    @property
    def written(self) -> str:
        """The bracket each of its citations (and [NA] marks) was written in."""
        return self.own or self.raw


@dataclass
class Sentence:
    text: str  # as written, citations included
    clean: str  # citations removed, whitespace normalised: the entailment premise
    citations: list[Citation]
    na_marks: list[str]  # each [NA] mark as written (`[NA]`, `[N/A]`, `[na]`), in order
    errors: list[MarkupError]
    start: int = 0  # where `text` lies in the answer: answer[start:end] == text
    end: int = 0
    written: list[str] = field(default_factory=list)  # per citation, the bracket it was written in

    @property
    def na(self) -> bool:
        """Whether the sentence is marked [NA] (once or more: §4.3 counts sentences)."""
        return bool(self.na_marks)


@dataclass
class ParsedAnswer:
    sentences: list[Sentence]
    errors: list[MarkupError]

    @property
    def citations(self) -> list[Citation]:
        return [c for s in self.sentences for c in s.citations]

    @property
    def na_count(self) -> int:
        """How many [NA] marks the answer holds (a sentence may hold more than one)."""
        return sum(len(s.na_marks) for s in self.sentences)

    @property
    def malformed(self) -> int:
        """How many problems the markup has (runs counted in full)."""
        return sum(e.count for e in self.errors)


VocabularyLike = Vocabulary | Iterable[str] | None


def as_vocabulary(vocabulary: VocabularyLike) -> Vocabulary:
    """None: the built-in table; a list of labels: the built-in table plus those labels."""
    if vocabulary is None:
        return Vocabulary.default()
    if isinstance(vocabulary, Vocabulary):
        return vocabulary
    return Vocabulary.from_labels(vocabulary)


def _unescape(text: str) -> str:
    return _UNESCAPE_RE.sub(r"\1", text) if "\\" in text else text


def escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


# ---------------------------------------------------------------- inside one bracket


@dataclass
class _Pair:
    label: str
    parts: list[str]  # the value's comma-separated pieces, joined once at the end
    start: int  # where the value begins in the block's text
    end: int  # where its last piece ends

    @property
    def value(self) -> str:
        return ",".join(self.parts)

    def raw(self) -> str:
        return f"{self.label}:{self.value}"


def _pair_starts(pieces: list[str], offset: list[int], vocab: Vocabulary) -> dict[int, tuple[int, str, str, int]]:
    """{first piece: (last piece, label, value text, value offset)} for every comma-separated
    piece that starts a pair (`offset[k]`: where piece k starts in the block's text). A known
    label may span pieces (it holds commas); the look-ahead is bounded by the longest known
    label, so this stays linear."""
    n = len(pieces)
    next_colon = [n] * (n + 1)
    for k in range(n - 1, -1, -1):
        next_colon[k] = k if ":" in pieces[k] else next_colon[k + 1]
    starts: dict[int, tuple[int, str, str, int]] = {}
    k = 0
    while k < n:
        j = next_colon[k]
        if j == n:
            break
        if j == k:
            label, _, value = pieces[k].partition(":")
            generic = "," not in label and (not value or value[0].isspace())
            if vocab.knows_label(_unquote(label)) or generic:
                starts[k] = (k, label, value, offset[k] + len(label) + 1)
            k += 1
            continue
        # a label with commas, e.g. "languages spoken, written or signed"
        head, _, value = pieces[j].partition(":")
        span = offset[j] - offset[k] + len(head)
        if span <= vocab.max_label_len + 8 and vocab.knows_label(_unquote(",".join(pieces[k:j] + [head]))):
            starts[k] = (j, ",".join(pieces[k:j] + [head]), value, offset[j] + len(head) + 1)
            k = j + 1
        else:
            k += 1
    return starts


def _parse_block(qid: str, body: str, vocab: Vocabulary, offset: int) -> tuple[list[Citation], list[MarkupError]]:
    """`body` is what follows the QID's comma: `[name,] rel: value, rel: value...`."""
    errors: list[MarkupError] = []
    dropped = 0

    def drop(run: re.Match[str]) -> str:
        nonlocal dropped
        dropped += run.group(0).count(",") - 1
        return ","

    # a run of empty pieces (`,,,`) adds nothing to a value: one comma stands for it, the rest are counted
    body = _EMPTY_RUN_RE.sub(drop, body)
    if dropped:
        _count(errors, "empty_piece", f"{qid}, {body[:80]}", offset, dropped)
    pieces = body.split(",") if body else []
    at = [0] * (len(pieces) + 1)  # at[k]: where piece k starts in `body`
    for k, piece in enumerate(pieces):
        at[k + 1] = at[k] + len(piece) + 1
    starts = _pair_starts(pieces, at, vocab)
    name_parts: list[str] = []
    pairs: list[_Pair] = []
    k = 0
    while k < len(pieces):
        if k in starts:
            last, label, value, begin = starts[k]
            pairs.append(_Pair(label, [value], begin, at[last + 1] - 1))
            k = last + 1
            continue
        piece = pieces[k]
        if not piece.strip():
            kind = "trailing_separator" if k == len(pieces) - 1 else "empty_piece"
            _count(errors, kind, f"{qid}, {body[max(0, at[k] - 40) : at[k] + 40]}", offset)
        elif pairs:
            pairs[-1].parts.append(piece)
            pairs[-1].end = at[k + 1] - 1
        else:
            name_parts.append(piece)
        k += 1
    pairs = _glue_known_values(pairs, body, vocab)
    if not pairs:
        errors.append(MarkupError("no_pair", f"{qid}, {body.strip()[:80]}" if body.strip() else qid, offset))
    name = ",".join(name_parts).strip()
    citations: list[Citation] = []
    for p in pairs:
        _add_citation(citations, errors, qid, p.label, p.value, name, vocab, offset)
    if not name:  # `name: X` names the entity for the other citations too
        named = next((c.value for c in citations if relation_norm(c.relation) == NAME_RELATION), "")
        citations = [Citation(c.qid, c.relation, c.value, named) for c in citations]
    return citations, errors


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1]:
        return text[1:-1].strip()
    return text


def _add_citation(citations: list[Citation], errors: list[MarkupError], qid: str, label: str, value: str, name: str, vocab: Vocabulary, offset: int) -> None:
    """One (QID, label, value) as written, checked: an empty side is an error, not a citation."""
    relation, value = _unquote(label), value.strip()
    if not vocab.is_value(qid, relation, value):  # `"Rome"` cites Rome, unless the KG's value has the quotes
        value = _unquote(value)
    if not relation:
        errors.append(MarkupError("empty_relation", f"{label.strip()}:{value}".strip(), offset))
    elif not value:
        errors.append(MarkupError("empty_value", f"{label.strip()}:{value}".strip(), offset))
    else:
        citations.append(Citation(qid, relation, value, name))


def _parse_lines(text: str, vocab: Vocabulary, offset: int) -> tuple[list[Citation], list[MarkupError]]:
    """Knowledge lines copied as the prompt lists them: `Q1 | name | relation | value`, or
    without the name; several in one bracket are separated by `;`, `,` or a line break."""
    starts = list(_PIPE_TOKEN_RE.finditer(text))
    citations: list[Citation] = []
    errors: list[MarkupError] = []
    for tok, nxt in zip(starts, starts[1:] + [None]):
        qid = tok.group(1).upper()
        fields = text[tok.end() : nxt.start() if nxt else len(text)].rstrip(" \t\n;,").split("|")
        if len(fields) not in (2, 3):  # a run of them is one counted error: `Q3 | Q3 | …` stays bounded
            _count(errors, "pipe_fields", f"{qid} |{'|'.join(fields)}", offset)
            continue
        name = fields[0].strip() if len(fields) == 3 else ""
        _add_citation(citations, errors, qid, fields[-2], fields[-1], name, vocab, offset)
    return citations, errors


def _count(errors: list[MarkupError], kind: str, snippet: str, offset: int, n: int = 1) -> None:
    """Add `n` errors, or count them into the last one when that is of the same kind: a run of
    a million empty pieces is one error with its count, not a million objects."""
    if errors and errors[-1].kind == kind and errors[-1].offset == offset:
        last = errors[-1]
        errors[-1] = MarkupError(kind, last.snippet, offset, last.count + n)
    else:
        errors.append(MarkupError(kind, snippet, offset, n))


def _glue_known_values(pairs: list[_Pair], body: str, vocab: Vocabulary) -> list[_Pair]:
    """Merge a pair into the one before it when the glued value is one the entry knows for
    that relation (`notable work: Love, Death: Robots`); the longest such run wins.

    Only a known value with a comma, whose text before its first comma is this pair's first
    piece, can be glued to; each is matched against the text in place, where it must end
    where a later pair ends. The work is one comparison per such candidate, never a growing
    concatenation: linear in the text, whatever values the vocabulary holds."""
    ends = {}
    for j, p in enumerate(pairs):
        e = p.end
        while e > p.start and body[e - 1].isspace():
            e -= 1
        ends[e] = j
    out: list[_Pair] = []
    i = 0
    while i < len(pairs):
        cur, best = pairs[i], i
        candidates = vocab.comma_values(_unquote(cur.label), cur.parts[0]) if len(pairs) > i + 1 else []  # `"a": 0,:` glues as `a: 0,:`
        if candidates:
            begin = cur.start
            while begin < cur.end and body[begin].isspace():
                begin += 1
            for value in candidates:
                j = ends.get(begin + len(value), -1)
                if j > best and body.startswith(value, begin):
                    best = j
        if best > i:
            cur = _Pair(cur.label, [cur.value] + [p.raw() for p in pairs[i + 1 : best + 1]], cur.start, pairs[best].end)
        out.append(cur)
        i = best + 1
    return out


def parse_bracket(content: str, vocabulary: VocabularyLike = None, *, offset: int = 0) -> tuple[list[Citation], bool, list[MarkupError]]:
    """Parse the inside of one bracket (escapes still written) into (citations, is_na, errors)."""
    vocab = as_vocabulary(vocabulary)
    text = normalize_text(_unescape(content))
    if _NA_RE.match(text):
        return [], True, []
    if not text:
        return [], False, [MarkupError("empty_bracket", "[]", offset)]
    if _PIPE_TOKEN_RE.match(text):
        lines, line_errors = _parse_lines(text, vocab, offset)
        return lines, False, line_errors
    tokens = list(_QID_TOKEN_RE.finditer(text))
    if not tokens or tokens[0].start() != 0:
        return [], False, [MarkupError("no_qid", text[: tokens[0].start()] if tokens else text, offset)]
    citations: list[Citation] = []
    errors: list[MarkupError] = []
    for tok, nxt in zip(tokens, tokens[1:] + [None]):
        rest = text[tok.end() : nxt.start() if nxt else len(text)]
        body = rest[1:] if rest[:1] in (",", ":") else rest  # the token's look-ahead guarantees the separator
        cits, errs = _parse_block(tok.group(1).upper(), body, vocab, offset)
        citations += cits
        errors += errs
    return citations, False, errors


def find_brackets(text: str, vocabulary: VocabularyLike = None) -> tuple[list[Bracket], list[MarkupError]]:
    """Every `[...]` in `text` (backslash escapes honoured), parsed, plus stray-bracket errors.

    One left-to-right pass over runs of brackets. A `[` opened before the previous one closed
    leaves that one unclosed, unless whole brackets inside it are followed by the `]` that closes
    it (`[Q1, father: [Name]]`): that is one `nested` bracket. A bracket wrapped in as many more
    brackets (`[[Q1, occupation: writer]]`, any depth) is closed: its citations are read and the
    wrapping is one `nested` error however deep. Unclosed brackets that touch (`[[[`, `[a[a`) become one masked
    span holding one `unclosed` error each, and a run of one bracket repeated with only spaces
    between (`[NA] [NA] [NA]`) becomes one span holding its citations that many times and its
    errors counted that many times, so hostile text costs no more than ordinary text."""
    vocab = as_vocabulary(vocabulary)
    brackets: list[Bracket] = []
    stray: list[MarkupError] = []
    # A bracket's parse depends on its content only (errors carry its offset, set on the way
    # out): a text repeating one bracket many times parses it once.
    seen: dict[str, tuple[list[Citation], bool, list[MarkupError]]] = {}
    open_at: int | None = None
    run_start, run_end, run_count = -1, -1, 0  # adjacent unclosed brackets not yet emitted

    def flush() -> None:
        nonlocal run_count
        if run_count:
            err = MarkupError("unclosed", _unescape(text[run_start : min(run_start + 160, run_end)])[:80], run_start, run_count)
            brackets.append(Bracket(run_start, run_end, text[run_start:run_end], [], False, [err]))
            run_count = 0

    same: list[Any] = []  # [start, end, content, count] of a run of one bracket repeated, not yet emitted
    budget = MARKUP_BUDGET

    def emit() -> None:
        if same:
            start, end, content, n = same
            cits, na, errs = seen[content]
            own = text[start : start + len(content) + 2] if n > 1 else ""
            errors = [MarkupError(e.kind, e.snippet, start, e.count * n) for e in errs]
            brackets.append(Bracket(start, end, text[start:end], cits * n, na, errors, n, own))
            same.clear()

    def unclosed(start: int, stop: int, count: int = 1) -> None:
        nonlocal run_start, run_end, run_count
        emit()
        if run_count and start != run_end:
            flush()
        if not run_count:
            run_start = start
        run_end, run_count = stop, run_count + count

    def close(start: int, end: int, content: str, nested: bool = False, wrapped: bool = False) -> bool:
        """Take the bracket text[start:end] (holding whole brackets when `nested`, `content` in
        extra brackets when `wrapped`); False once the markup budget is spent."""
        nonlocal budget
        budget -= max(len(content), _BRACKET_COST)
        if budget < 0:
            emit()
            flush()
            rest = text.count("[", start)
            err = MarkupError("too_much_markup", _unescape(text[start : start + 80]), start, rest)
            brackets.append(Bracket(start, len(text), text[start:], [], False, [err]))
            return False
        if nested:  # one malformed bracket, not an unclosed one, an inner one and a stray `]`
            emit()
            flush()
            brackets.append(Bracket(start, end, text[start:end], [], False, [MarkupError("nested", _unescape(text[start : min(start + 80, end)]), start)]))
            return True
        if content not in seen:
            seen[content] = parse_bracket(content, vocab)
        if wrapped:  # read as the bracket it wraps, plus one `nested` error
            emit()
            flush()
            cits, na, errs = seen[content]
            brackets.append(
                Bracket(start, end, text[start:end], cits, na, [*errs, MarkupError("nested", _unescape(text[start : min(start + 80, end)]), start)])
            )
            return True
        if same and same[2] == content and not text[same[1] : start].strip(" \t"):
            same[1], same[3] = end, same[3] + 1
            return True
        emit()
        flush()
        same[:] = [start, end, content, 1]
        return True

    inner: list[tuple[int, int, str]] = []  # whole brackets inside the open one: nested, if a `]` closes it
    skip_to = 0  # the end of a wrapped bracket already taken

    def never_closed(start: int, stop: int) -> bool:
        """The bracket opened at `start` reaches up to `stop`, or its first inner bracket, which
        then count as brackets of their own; False once the markup budget is spent."""
        nonlocal open_at
        unclosed(start, inner[0][0] if inner else stop)
        open_at = None
        taken = all(close(*b) for b in inner)
        inner.clear()
        return taken

    for m in _BRACKET_RUN_RE.finditer(text):
        token, i = m.group(0), m.start()
        if i < skip_to or token[0] == "\\":  # inside a wrapped bracket taken whole, or an escape
            continue
        if m.group(1) is not None:  # a whole simple bracket
            if open_at is not None:
                inner.append((i, m.end(), m.group(1)))
            elif not close(i, m.end(), m.group(1)):
                return brackets, stray
            continue
        if token[0] == "[":
            if open_at is not None and not never_closed(open_at, i):
                return brackets, stray
            if len(token) > 1 and (w := _WRAPPED_RE.match(text, i)) and len(w.group(3)) >= len(w.group(1)):
                end = w.start(3) + len(w.group(1))  # a longer run of `]` leaves its extra ones unopened
                if not close(i, end, w.group(2), wrapped=True):
                    return brackets, stray
                skip_to = end
                if w.end() > end:
                    stray.append(MarkupError("unopened", "]", end, w.end() - end))
                continue
            if len(token) > 1:  # all but the last of "[[[" are unclosed at once
                unclosed(i, i + len(token) - 1, len(token) - 1)
            open_at = i + len(token) - 1
            continue
        first = i
        if open_at is not None:
            if not close(open_at, i + 1, text[open_at + 1 : i], nested=bool(inner)):
                return brackets, stray
            open_at, first = None, i + 1
            inner.clear()
        if i + len(token) > first:
            stray.append(MarkupError("unopened", "]", first, i + len(token) - first))
    if open_at is not None and not never_closed(open_at, len(text)):
        return brackets, stray
    emit()
    flush()
    return brackets, stray


def parse_citations(text: str, vocabulary: VocabularyLike = None) -> tuple[list[Citation], list[MarkupError]]:
    """All citations in `text`, in order, ignoring sentence structure."""
    brackets, stray = find_brackets(text, vocabulary)
    return [c for b in brackets for c in b.citations], [e for b in brackets for e in b.errors] + stray


# ---------------------------------------------------------------- sentences

_STOP_RE = re.compile(r"[.!?…]+[\"'”’)]*")
_BLANK_LINE_RE = re.compile(r"\n[ \t\r\f\v]*\n")
# A list item's marker: "- ", "* ", "• ", "+ ", "1. ", "2) ", "(3) ", "a) " at the start of a line.
_LIST_MARKER = r"(?:[-*•+]|\(?\d{1,3}[.)]|\(?[a-z][)])[ \t]+"
_LIST_ITEM_RE = re.compile(r"\n[ \t]*(?=" + _LIST_MARKER + ")")
_MARKER_RE = re.compile(r"[ \t]*" + _LIST_MARKER)
_EMPTY_PARENS_RE = re.compile(r"\(\s*\)")
_MASK = " "  # what a citation reads as in the masked text; brackets are tracked by position


def _is_abbreviation(masked: str, stop: int, lang: TextRules = ENGLISH) -> bool:
    if masked[stop] != ".":
        return False
    if lang.abbreviation_at(masked, stop) or lang.ordinal_at(masked, stop):  # "p. ex.", "z. B.", "am 1. Mai"
        return True
    floor = max(0, stop - _ABBREVIATION_SPAN - 1)
    j = stop
    while j > floor and (masked[j - 1].isalpha() or masked[j - 1] == "."):
        j -= 1
    word = masked[j:stop]
    if not word or (j == floor and floor > 0):
        return False  # nothing before the stop, or a longer run than any abbreviation
    if len(word) == 1 and word.isupper():  # an initial: "J. R. R. Tolkien"
        return True
    if "." in word and all(len(p) == 1 for p in word.split(".")):  # a dotted acronym: "S.S. Lazio", "D.C."
        return True
    return word.lower().rstrip(".") in lang.abbreviations


def _in_list_marker(masked: str, stop: int) -> bool:
    """Whether the stop at `stop` closes a list item's marker ("2. Born in Rome"), not a sentence."""
    lo = max(0, stop - 8)  # a marker is short: looking no further back keeps splitting linear
    newline = masked.rfind("\n", lo, stop)
    if newline < 0 and lo > 0:
        return False
    return _MARKER_RE.match(masked, newline + 1, stop + 2) is not None


def _line_ends(masked: str, masks: set[int]) -> list[int]:
    """Newlines that end a sentence without a full stop, as models write lists: before a list item,
    and after a line whose last token is a citation (unless the next line goes on in lower case)."""
    ends = [m.start() for m in _LIST_ITEM_RE.finditer(masked)]
    for m in re.finditer(r"\n[ \t]*", masked):
        last = m.start() - 1
        while last >= 0 and masked[last] in " \t\r" and last not in masks:
            last -= 1
        if last in masks and m.end() < len(masked) and not masked[m.end()].islower():
            ends.append(m.start())
    return ends


def _sentence_ends(masked: str, masks: set[int], lang: TextRules = ENGLISH) -> list[int]:
    """Offsets just past each sentence (its trailing citations included)."""
    ends: list[int] = []
    n = len(masked)
    for m in _STOP_RE.finditer(masked):
        j = m.end()
        if j < n and j not in masks and not masked[j].isspace():
            continue  # "3.5", "a.b": a stop that text follows directly ends nothing
        if _is_abbreviation(masked, m.start(), lang) or _in_list_marker(masked, m.start()):
            continue
        last = ends[-1] if ends else 0
        if m.start() - last <= 8 and masked[last : m.start()].strip().isdigit():  # "… Rome. 2. Died …": an item number
            continue
        while True:  # citations after the full stop belong to this sentence
            k = j
            while k < n and masked[k] in " \t\r\n" and k not in masks:
                k += 1
            if k in masks:
                j = k + 1
                continue
            break
        k = j
        while k < n and masked[k].isspace() and k not in masks:
            k += 1
        if k >= n or (k > j and not masked[k].islower()):
            ends.append(j)
    ends += [m.start() for m in _BLANK_LINE_RE.finditer(masked)]  # a blank line ends a sentence too
    ends += _line_ends(masked, masks)
    return sorted(set(ends))


def _clean(text: str) -> str:
    """The sentence as prose: list marker, emptied parentheses and space before punctuation removed."""
    text = text.lstrip("\n")
    marker = _MARKER_RE.match(text)
    text = _EMPTY_PARENS_RE.sub(" ", text[marker.end() :] if marker else text)
    return re.sub(r"\s+([.,;:!?…])", r"\1", normalize_text(text))


def parse_answer(text: str, vocabulary: VocabularyLike = None, language: str = DEFAULT_LANGUAGE) -> ParsedAnswer:
    """Split `text` into sentences (citations masked first) and parse each one's citations.

    `vocabulary`: what the entry knows (see `kalma.properties`); a list of relation labels
    also works; None uses the built-in property table. `language`: whose abbreviations and
    ordinals end no sentence (`kalma.languages.text`); the markup is the same in every language.
    """
    brackets, stray = find_brackets(text, vocabulary)
    # The masked text: each bracket becomes one character; `where` maps it back.
    parts: list[str] = []
    where: dict[int, int] = {}
    pos = length = 0
    for idx, b in enumerate(brackets):
        parts.append(text[pos : b.start])
        length += b.start - pos
        where[length] = idx
        parts.append(_MASK)
        length += 1
        pos = b.end
    parts.append(text[pos:])
    masked = "".join(parts)
    mask_positions = sorted(where)
    # grown[k]: how much longer the answer is than the masked text before its k-th bracket
    grown = [0]
    for b in brackets:
        grown.append(grown[-1] + b.end - b.start - 1)

    def original(x: int) -> int:
        return x + grown[bisect.bisect_left(mask_positions, x)]

    sentences: list[Sentence] = []
    start = 0
    for end in _sentence_ends(masked, set(where), rules(language)) + [len(masked)]:
        if end <= start:
            continue
        lo, hi = bisect.bisect_left(mask_positions, start), bisect.bisect_left(mask_positions, end)
        mine = [where[p] for p in mask_positions[lo:hi]]
        raw_parts, clean_parts, prev = [], [], start
        for p in mask_positions[lo:hi]:
            raw_parts += [masked[prev:p], brackets[where[p]].raw]
            clean_parts += [masked[prev:p], " "]
            prev = p + 1
        raw_parts.append(masked[prev:end])
        clean_parts.append(masked[prev:end])
        begin, start = start, end
        whole = "".join(raw_parts)
        raw = whole.strip()
        if not raw:
            continue
        lo_at = original(begin) + len(whole) - len(whole.lstrip())
        span = (lo_at, lo_at + len(raw))
        clean = _clean(_unescape("".join(clean_parts)))
        cits = [c for i in mine for c in brackets[i].citations]
        written = [brackets[i].written for i in mine for _ in brackets[i].citations]
        na_marks = [brackets[i].written for i in mine if brackets[i].na for _ in range(brackets[i].times)]
        errs = [e for i in mine for e in brackets[i].errors]
        if not clean and sentences:  # citations alone on a line: attach to the previous sentence
            prev_s = sentences[-1]
            prev_s.citations += cits
            prev_s.written += written
            prev_s.na_marks += na_marks
            prev_s.errors += errs
            prev_s.end = span[1]
            prev_s.text = text[prev_s.start : prev_s.end]
            continue
        sentences.append(Sentence(text=raw, clean=clean, citations=cits, na_marks=na_marks, errors=errs, start=span[0], end=span[1], written=written))
    errors = [e for b in brackets for e in b.errors] + stray
    return ParsedAnswer(sentences=sentences, errors=errors)


def strip_citations(text: str, language: str = DEFAULT_LANGUAGE) -> str:
    """The answer's prose with all citation markup removed."""
    return " ".join(s.clean for s in parse_answer(text, language=language).sentences)


# ---------------------------------------------------------------- formatting


def format_citations(citations: Sequence[Citation], *, with_names: bool = False) -> str:
    """One bracket per run of citations sharing a QID: `[Q1, rel: value, rel2: value2]`."""
    runs: list[tuple[str, list[str]]] = []
    for c in citations:
        pair = f"{escape_value(c.relation)}: {escape_value(c.value)}"
        if runs and runs[-1][0] == c.qid:
            runs[-1][1].append(pair)
        else:
            head = [c.qid] + ([escape_value(c.entity_name)] if with_names and c.entity_name else [])
            runs.append((c.qid, [*head, pair]))
    return "".join(f"[{', '.join(parts)}]" for _, parts in runs)


def format_sentence(text: str, citations: Sequence[Citation] = (), na: bool = False) -> str:
    """`text` with its citations (and [NA]) placed before its final punctuation."""
    body = text.rstrip()
    cut = len(body.rstrip(".!?"))
    body, stop = body[:cut], body[cut:]
    marks = format_citations(citations) + ("[NA]" if na else "")
    return f"{body} {marks}{stop}" if marks else f"{body}{stop}"
