"""Citation parsing time against input size: linear growth, for ordinary and hostile text.

For each pattern, the text is repeated to 2k, 8k, 32k and 1M characters and parsed once;
the table gives the seconds and the microseconds per character. Linear code keeps the last
column flat (each step is x4 in size and about x4 in time); the quadratic splitter it replaced
took 6.5 s for 8k characters of "a." and grew x16 per step.

A second table parses 1 MB of each hostile pattern a submitter can send (issue 25) under three
vocabularies: the built-in one; a synthetic entry whose value is as long as the authors'
release's longest (148 characters) but holds 49 commas, each a place to glue pairs back (the
release's has one); and an answer's own KG holding a 1,000-character value that the pairs of the
text keep almost matching.
Before the value-gluing step matched candidates in place, the last took about 1,100 s per MB.
At 1 MB the patterns with brackets pass the markup budget (`kalma.citations.MARKUP_BUDGET`):
what follows it is one span, so their last column drops rather than staying flat.

    python -m perf.parse_bench
"""

from __future__ import annotations

from kalma.citations import parse_answer
from kalma.properties import Vocabulary
from kalma.schema import Triple

from .common import report, timed

SIZES = (2_000, 8_000, 32_000, 1_000_000)
PATTERNS = {
    "answer": "Artemisia Gentileschi [qid: Q212657, name: Artemisia Gentileschi] was born in Rome "
    "[Q212657, place of birth: Rome, occupation: painter]. She died in 1654 [NA]. ",
    "a.": "a.",
    "unclosed [": "[",
    "stray ]": "]",
    "[Q1, a": "[Q1, a",
    "commas in a bracket": "a, ",
    "Dr. Dr.": "Dr. ",
    "blank lines": "\n \n",
    "escapes": "\\[x\\] ",
    "a. a.": "a. ",
    "list items": "- a [NA]\n",
    "1. 2.": "1. ",
    "knowledge lines": "[Q1 | a | b | c] ",
    "quoted pairs": '[Q1, "a": "b"] ',
}


HOSTILE = {
    "[Q1, a: b, a: b, …]": ("[Q1, ", "a: b, ", "]"),
    "[Q1,,,,…]": ("[Q1", ",", "]"),
    "[Q1] [Q1] …": ("", "[Q1] ", ""),
    "[NA] [NA] …": ("", "[NA] ", ""),
    "[Q1, [Q1, …": ("", "[Q1, ", ""),
    "[Q1, a:::…]": ("[Q1, a", ":", "]"),
    "[Q1 | Q1 | …": ("", "[Q1 | ", ""),
    "A. A. …": ("", "A. ", ""),
    "[Q1] [NA] [Q2, a: b] …": ("", "[Q1] [NA] [Q2, a: b] ", ""),
    "an answer, repeated": ("", "Born in Rome [Q1, place of birth: Rome]. Died [NA]. ", ""),
}


def vocabularies() -> dict[str, Vocabulary]:
    long_value = "b, " + "a: b, " * 166 + "z"  # 1,000 characters that the text's pairs match up to the end
    own = Vocabulary.default().copy()
    own.add_triples([Triple(subject="Q1", relation="", relation_label="a", value="x", value_label=long_value, value_type="literal")])
    entry = Vocabulary.default().copy()
    entry.add_triples([Triple(subject="Q1", relation="P800", relation_label="notable work", value="x", value_label="w, " * 49 + "x", value_type="literal")])
    return {"built-in": Vocabulary.default(), "synthetic entry (148-char value, 49 commas)": entry, "own KG (1,000-char value)": own}


def hostile() -> dict[str, object]:
    rows: dict[str, object] = {}
    for vname, vocab in vocabularies().items():
        for name, (head, unit, tail) in HOSTILE.items():
            text = head + unit * ((1_000_000 - len(head) - len(tail)) // len(unit)) + tail
            seconds, _ = timed(lambda: parse_answer(text, vocab))
            rows[f"1 MB of {name}, {vname} vocabulary (s)"] = seconds
    return rows


def main() -> None:
    rows: dict[str, object] = {}
    for name, unit in PATTERNS.items():
        per_char = []
        for size in SIZES:
            text = (unit * (size // len(unit) + 1))[:size]
            if name == "commas in a bracket":
                text = "[Q1, " + text + "x: y]"
            seconds, _ = timed(lambda: parse_answer(text))
            rows[f"{name} @ {size:,} chars (s)"] = seconds
            per_char.append(1e6 * seconds / size)
        rows[f"{name}: µs/char at 2k, 8k, 32k, 1M"] = ", ".join(f"{x:.2f}" for x in per_char)
        rows[f"{name}: growth 1M vs 2k (x{SIZES[-1] // SIZES[0]} size)"] = f"x{per_char[-1] / per_char[0] * SIZES[-1] / SIZES[0]:.0f} time"
    report("parse_bench", {**rows, **hostile()})


if __name__ == "__main__":
    main()
