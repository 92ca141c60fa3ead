"""The citation parser under hostile input (issue 14, items 3 and 9): linear time whatever the
text, no reserved characters, and no bracket that yields neither a citation nor an error."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kalma.citations import find_brackets, parse_answer

# Pieces that stress each part of the parser: stops, abbreviations, brackets, escapes, QIDs,
# labels, commas, blank lines, and the private-use characters an older version reserved.
PIECES = [
    "a.",
    "Dr. ",
    "S.S. ",
    "[",
    "]",
    "\\",
    "\\[",
    "Q1, ",
    "qid: Q2",
    "x: ",
    ", ",
    "\n",
    "\n\n",
    "[NA]",
    ". [Q1, r: v]",
    "…",
    "!",
    "\ue000",
    "\ue001",
    "\ue010",
    "\ue011",
    "\ue012",
    "5",
    " ",
    "name: A",
    "languages spoken, written or signed: ",
    "- ",
    "1. ",
    "2) ",
    "Q3 | ",
    '"',
    "a. ",
]
# Parsing time is measured in perf/parse_bench.py (1 MB of each hostile pattern, three
# vocabularies), never in a unit test; these tests pin what keeps it linear.


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=12))
@example(["Q3 | ", "Q3 | ", "Q3 | ", "]", "a.", "["])  # found by hypothesis: a run of bad knowledge lines is one counted error
def test_any_mix_of_pieces_parses_and_its_errors_are_bounded(pattern):
    unit = "".join(pattern)
    text = (unit * (8_000 // len(unit) + 1))[:8_000]
    a = parse_answer(text)
    assert len(a.errors) <= text.count("[") + text.count("]") + text.count(",") + 1
    assert all(len(e.snippet) <= 200 for e in a.errors)  # never the whole text per error


def test_a_run_of_empty_pieces_is_one_counted_error():
    """90,000 commas in a bracket: one error object with its count, and a short snippet."""
    a = parse_answer("[Q1" + "," * 90_000 + "x: y]")
    assert [(e.kind, e.count) for e in a.errors] == [("empty_piece", 90_000 - 1)] and len(a.errors[0].snippet) < 100
    assert [c.key() for c in a.citations] == [("Q1", "x", "y")]
    b = parse_answer("[Q1, a: b,,c, d: e,,,]")
    assert [c.value for c in b.citations] == ["b,c", "e"] and sorted((e.kind, e.count) for e in b.errors) == [("empty_piece", 3), ("trailing_separator", 1)]


def test_markup_beyond_the_budget_is_one_counted_span():
    """Alternating brackets defeat any cache of repeats; the budget still bounds the work:
    what fits is parsed as usual, the rest is one span whose error counts its brackets."""
    from kalma.citations import MARKUP_BUDGET

    unit = "Born in Rome [Q1, place of birth: Rome]. Died [NA]. "
    n = 2 * MARKUP_BUDGET // len(unit)
    a = parse_answer(unit * n)
    (last,) = [e for e in a.errors if e.kind == "too_much_markup"]
    parsed = len(a.citations) + a.na_count
    assert 0 < parsed and parsed + last.count == 2 * n and a.malformed == last.count
    assert a.sentences[0].clean == "Born in Rome." and a.sentences[0].citations[0].key() == ("Q1", "place of birth", "Rome")
    (one,) = [e.kind for e in parse_answer("[Q1, " + "a: b, " * 50_000 + "]").errors]  # one bracket over the budget
    assert one == "too_much_markup"


def test_gluing_a_known_value_matches_it_in_place_whatever_its_length():
    """A 1,000-character value with commas and colons: glued where the text holds it whole,
    left as separate pairs where the text stops short of it (the case that once cost 1,100 s/MB)."""
    from kalma.properties import Vocabulary
    from kalma.schema import Triple

    value = "b, " + "a: b, " * 166 + "z"
    vocab = Vocabulary.default().copy()
    vocab.add_triples([Triple(subject="Q1", relation="", relation_label="a", value="x", value_label=value, value_type="literal")])
    whole = parse_answer(f"[Q1, a: {value}, a: w]", vocab)
    assert [c.value for c in whole.citations] == [value, "w"]
    short = parse_answer("[Q1, " + "a: b, " * 2000 + "]", vocab)
    assert len(short.citations) == 2000 and {c.value for c in short.citations} == {"b"}


def test_runs_of_stray_brackets_are_counted_in_full():
    # "[[[[ text ]": three unclosed, then "[ text ]" has no QID; "]]" two stray; "[a[b[c here " three unclosed
    a = parse_answer("Odd [[[[ text ]]] and [a[b[c here [Q1, r: v].")
    assert [(e.kind, e.count, e.offset) for e in a.errors] == [("unclosed", 3, 4), ("no_qid", 1, 7), ("unclosed", 3, 22), ("unopened", 2, 15)]
    assert a.malformed == 9 and a.citations[0].value == "v" and a.sentences[0].clean == "Odd ]] and."
    a = parse_answer("[" * 10**6 + " and " + "]" * (10**6 - 1))  # one `]` short: the wrapping rule does not apply
    assert a.malformed == 2 * 10**6 - 2 and len(a.errors) == 3  # the last "[" opens "[ and ]": no QID; then 10**6 - 2 stray
    a = parse_answer("[" * 10**6 + " and " + "]" * 10**6)  # one bracket wrapped 10**6 - 1 times: one `nested`, however deep
    assert [(e.kind, e.count) for e in a.errors] == [("no_qid", 1), ("nested", 1)]


def test_private_use_characters_are_text_like_any_other():
    a = parse_answer("x \ue0005\ue001.")  # raised IndexError when these marked citations
    assert [s.clean for s in a.sentences] == ["x \ue0005\ue001."] and a.errors == []
    a = parse_answer("Odd \ue010\ue011\ue012 text [Q1, r: v\ue011].")  # were rewritten to `\ [ ]`
    assert a.sentences[0].clean == "Odd \ue010\ue011\ue012 text."
    assert a.citations[0].value == "v\ue011"


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("Q1 2,:nameqid[]xyNA/\\.")), max_size=60))
def test_every_bracket_gives_citations_or_errors(text):
    """1,765 of 30,000 such brackets used to give neither: each now gives one or the other."""
    brackets, _ = find_brackets(text)
    for b in brackets:
        assert b.na or b.citations or b.errors, b.raw


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(["Q1", "Q2", "qid: Q3", "Name", "r: v", "s: w", "", " "]), min_size=1, max_size=6))
def test_every_qid_gives_citations_or_a_no_pair_error(parts):
    """Each QID in a bracket is accounted for: its pairs, or `no_pair`."""
    text = "[" + ", ".join(parts) + "]"
    (b,), _ = find_brackets(text)
    if b.na or not parts[0].strip().lower().startswith(("q", "qid")):
        return
    qids = [p.split(":")[-1].strip() for p in parts if p.strip().startswith(("Q", "qid"))]
    cited = {c.qid for c in b.citations}
    unpaired = sum(e.kind == "no_pair" for e in b.errors)
    assert len(qids) <= len(cited) + unpaired + sum(qids.count(q) - 1 for q in set(qids)), (text, b)
