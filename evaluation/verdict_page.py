"""One HTML page per evaluation run: every answer, each sentence with its citations marked
correct, wrong, unaligned or malformed and its [NA] mark judged, filterable by verdict.

`kalma evaluate` writes it beside its summary (`answers.html`); the leaderboard links one per
submission. Answer text is whatever a model wrote: every string is escaped, no answer text
reaches an attribute other than `title`, and a Content-Security-Policy lets only the page's own
script run (by its hash) and load nothing, so hostile text stays text.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from kalma.languages import get_language
from kalma.schema import AnswerScores, CitationVerdict, NAVerdict, SentenceVerdict, Summary

from .base import show

# (filter key, label): what a reader can ask to see; a citation or mark carries the keys it has.
FILTERS = (
    ("all", "every answer"),
    ("wrong", "wrong citations (not in the KG given)"),
    ("unaligned", "unaligned citations (the sentence does not entail them)"),
    ("malformed", "malformed citations"),
    ("unjudged", "citations with no entailment judgement"),
    ("extra", "citations outside the minimum set"),
    ("correct", "correct citations"),
    ("na-wrong", "[NA] marks judged wrong"),
    ("na-irrelevant", "[NA] marks off the question (§4.5: counted correct)"),
    ("na-entails", "[NA] marks that entail absent knowledge"),
    ("uncited", "sentences with neither citation nor [NA]"),
)
OUTDATED_FILTER = ("outdated", "sentences stating an outdated value (what the previous KG held)")
NA_KEYS = {"entails absent knowledge": "na-entails", "irrelevant: counts correct": "na-irrelevant", "wrong": "na-wrong", "unscored": "na-unscored"}
SHOWN_VALUES = (
    ("citation", "correctness", "corr."),
    ("citation", "precision", "prec."),
    ("citation", "recall", "rec."),
    ("alignment", "alignment", "align."),
    ("na", "na_precision", "[NA] P"),
    ("na", "na_recall", "[NA] R"),
)

_SCRIPT = """
const pick = document.getElementById("filter");
function apply() {
  const key = pick.value;
  document.body.dataset.filter = key;
  const all = [...document.querySelectorAll("article.answer")];
  const shown = key === "all" ? all.length : all.filter(a => a.dataset.has.split(" ").includes(key)).length;
  document.body.dataset.shown = String(shown);
  document.getElementById("shown").textContent = shown + " of " + all.length + " answers";
  history.replaceState(null, "", key === "all" ? location.pathname : "#" + key);
}
pick.addEventListener("change", apply);
const asked = location.hash.slice(1);
if ([...pick.options].some(o => o.value === asked)) pick.value = asked;
apply();
"""


_CODE_RE = re.compile(r"`([^`\n]+)`")


def prose(text: str) -> str:
    """A report's sentence as HTML: escaped, its `code` spans (commands, markup) set as code,
    never shown with their backticks.

    >>> prose("run `kalma check <file>` again")
    'run <code>kalma check &lt;file&gt;</code> again'
    """
    return _CODE_RE.sub(r"<code>\1</code>", html.escape(text))


def _keys(c: CitationVerdict) -> list[str]:
    return [c.verdict] + (["extra"] if c.in_minimum is False else [])


def _sentence_keys(s: SentenceVerdict) -> list[str]:
    keys = [k for c in s.citations for k in _keys(c)]
    if s.na is not None:
        keys += [NA_KEYS[s.na.outcome]] * max(1, len(s.na_marks))
    return (keys or ["uncited"]) + (["outdated"] if s.outdated else [])


def _citation(c: CitationVerdict) -> str:
    what = f"{c.qid}, {c.relation}: {c.value}" if not c.malformed else c.bracket
    facts = []
    if c.in_kg is not None:
        facts.append("in the KG given" if c.in_kg else "not in the KG given")
    if c.in_minimum is not None:
        facts.append("in the minimum set" if c.in_minimum else "outside the minimum set")
    if c.entailment is not None:
        facts.append(f"P(entailed) {c.entailment:.3f}")
    why = f' <span class="why">{prose(c.why)}</span>' if c.why else ""
    extra = ' <span class="badge v-extra">outside the minimum set</span>' if c.in_minimum is False else ""
    return (
        f'<li class="{" ".join("k-" + k for k in _keys(c))}"><span class="badge v-{c.verdict}">{c.verdict}</span>{extra} '
        f'<code>{html.escape(what)}</code> <span class="facts">{html.escape("; ".join(facts))}</span>{why}</li>'
    )


def _na(na: NAVerdict, marks: int) -> str:
    key = NA_KEYS[na.outcome]
    said = f"entails {'; '.join(na.entailed)}" if na.entailed else na.why
    times = f" ({marks} marks, one sentence: counted once)" if marks > 1 else ""
    return f'<li class="k-{key}"><span class="badge {key}">[NA] {html.escape(na.outcome)}</span> <span class="why">{prose(said + times)}</span></li>'


# The order in which a bracket's pairs sum up to one colour: the worst of them.
_WORST = ("malformed", "wrong", "unaligned", "unjudged", "correct")


def _bracket(bracket: str, cits: Sequence[CitationVerdict]) -> str:
    """One bracket as written: each pair marked with its own verdict where it can be found in the
    text (relation, then value, in order); else the whole bracket in its worst pair's colour."""
    out, at = [], 0
    for c in cits:
        rel = bracket.find(c.relation, at) if c.relation else -1
        val = bracket.find(c.value, rel + len(c.relation or "")) if rel >= 0 and c.value else -1
        if val < 0:
            worst = min((c.verdict for c in cits), key=_WORST.index)
            return f'<mark class="v-{worst}">{html.escape(bracket)}</mark>'
        end = val + len(c.value or "")
        out += [html.escape(bracket[at:rel]), f'<mark class="v-{c.verdict}">{html.escape(bracket[rel:end])}</mark>']
        at = end
    return f'<span class="bracket">{"".join(out)}{html.escape(bracket[at:])}</span>'


def _marked_text(s: SentenceVerdict) -> str:
    """The sentence as written, each bracket marked with the verdicts of what it cites."""
    out, at, i = [], 0, 0
    while i < len(s.citations):
        bracket = s.citations[i].bracket
        j = i + 1  # the citations written in this one bracket: consecutive, the same bracket text
        while j < len(s.citations) and s.citations[j].bracket == bracket and len(s.citations[i:j]) < _pairs(bracket):
            j += 1
        found = s.text.find(bracket, at)
        if found >= 0:
            cits = s.citations[i:j]
            single = len(cits) == 1 and not cits[0].malformed
            mark = f'<mark class="v-{cits[0].verdict}">{html.escape(bracket)}</mark>' if single or cits[0].malformed else _bracket(bracket, cits)
            out += [html.escape(s.text[at:found]), mark]
            at = found + len(bracket)
        i = j
    out.append(html.escape(s.text[at:]))
    return "".join(out)


def _pairs(bracket: str) -> int:
    """An upper bound on the pairs one bracket holds (one per `:`), so that a bracket written twice
    is two brackets on the page."""
    return max(1, bracket.count(":"))


def _answer(row: AnswerScores, question: str) -> str:
    keys = sorted({k for s in row.verdicts for k in _sentence_keys(s)}) or ["uncited"]
    values = " · ".join(f"{label} {show(v)}" for metric, key, label in SHOWN_VALUES if (v := row.values.get(metric, {}).get(key, None)) is not None)
    notes = "".join(f'<p class="note">{prose(n)}</p>' for n in row.notes.values())
    sentences = "".join(
        f'<div class="sentence" data-has="{" ".join(_sentence_keys(s))}"><p>{_marked_text(s)}</p>'
        f"<ul>{''.join(_citation(c) for c in s.citations)}{_na(s.na, len(s.na_marks)) if s.na is not None else ''}{_outdated(s)}</ul></div>"
        for s in row.verdicts
    )
    asked = f'<p class="question">Q: {html.escape(question)}</p>' if question else ""
    return (
        f'<article class="answer" data-has="{" ".join(keys)}"><h3>{html.escape(row.answer_id)}</h3>{asked}'
        f'<p class="values">{html.escape(values)}</p>{notes}{sentences or "<p class=note>(no sentence)</p>"}</article>'
    )


def _outdated(s: SentenceVerdict) -> str:
    """What an outdated claim states (`--previous-kg`): the values the previous KG held."""
    if not s.outdated:
        return ""
    said = html.escape("; ".join(s.outdated))
    badge = '<span class="badge" style="background:#6a1b9a">outdated</span>'
    return f'<li class="k-outdated">{badge} <span class="why">states what the previous KG held and the knowledge given no longer does: {said}</span></li>'


def tally(rows: Sequence[AnswerScores]) -> Counter[str]:
    """How many citations and [NA] marks got each verdict, over every answer; `uncited`: how many
    sentences had neither."""
    return Counter(k for r in rows for s in r.verdicts for k in _sentence_keys(s))


def language_line(code: str) -> str:
    """How every report names a language: `French (fr)`."""
    lang = get_language(code)
    return f"{lang.name} ({lang.code})" if lang.name != lang.code else lang.code


def render_page(summary: Summary, rows: Sequence[AnswerScores], questions: Mapping[str, str] | None = None, title: str = "") -> str:
    """The page of one run (see the module docstring); `questions` by answer id, when known."""
    counts = tally(rows)
    # an outdated-claims run (`--previous-kg`) adds its filter and its line; any other page is as before
    filters = FILTERS + ((OUTDATED_FILTER,) if counts["outdated"] else ())
    extra_correct = sum(c.verdict == "correct" and c.in_minimum is False for r in rows for s in r.verdicts for c in s.citations)
    na_sentences = sum(s.na is not None for r in rows for s in r.verdicts)
    options = "".join(f'<option value="{key}">{html.escape(label)} ({counts[key] if key != "all" else len(rows)})</option>' for key, label in filters)
    css_filters = "\n".join(
        f'body[data-filter="{k}"] article.answer:not([data-has~="{k}"]){{display:none}} '
        f'body[data-filter="{k}"] .sentence:not([data-has~="{k}"]){{opacity:.35}} '
        f'body[data-filter="{k}"] li:not(.k-{k}){{display:none}}'
        for k, _ in filters
        if k != "all"
    )
    digest = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
    name = title or summary.models.get("answers", "answers")
    read_first = "".join(f"<li>{prose(c)}</li>" for c in summary.caveats)
    models = "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>" for k, v in summary.models.items())
    articles = "\n".join(_answer(r, (questions or {}).get(r.answer_id, "")) for r in rows)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'">
<title>Verdicts: {html.escape(name)}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:1.5rem 2rem;color:#222;max-width:1100px}} h3{{margin:.2rem 0;font-size:.95rem}}
article.answer{{border:1px solid #ddd;border-radius:6px;padding:.5rem .8rem;margin:.7rem 0}} .sentence p{{margin:.35rem 0 .1rem}}
ul{{margin:0 0 .3rem 1rem;padding:0;list-style:none;font-size:.82rem}} code{{background:#f4f4f4;padding:0 .2rem}}
mark{{border-radius:3px;padding:0 .1rem}} mark.v-correct{{background:#d8f0d8}} mark.v-wrong{{background:#f7c6c6}}
mark.v-unaligned{{background:#fde3b0}} mark.v-malformed{{background:#ddd;text-decoration:line-through}}
.badge{{display:inline-block;min-width:5.5rem;font-size:.72rem;border-radius:3px;padding:0 .3rem;color:#fff;text-align:center}}
.v-correct.badge{{background:#2e7d32}} .v-wrong.badge{{background:#c62828}} .v-unaligned.badge{{background:#ef6c00}} .v-malformed.badge{{background:#616161}}
.na-entails{{background:#2e7d32}} .na-irrelevant{{background:#5e7d99}} .na-wrong{{background:#c62828}} .na-unscored{{background:#9e9e9e}}
.v-extra.badge{{background:#8d6e63;min-width:0}} .v-unjudged.badge{{background:#9e9e9e}} mark.v-unjudged{{background:#eee}}
.why{{color:#555}} .facts{{color:#777}} .values{{font-size:.8rem;color:#444;margin:.1rem 0}} .question{{font-style:italic;margin:.1rem 0}}
.note{{font-size:.8rem;color:#8a5a00}} .readfirst li{{color:#8a1c1c}} #bar{{position:sticky;top:0;background:#fff;padding:.4rem 0;border-bottom:1px solid #eee}}
{css_filters}
</style></head>
<body data-filter="all" data-answers="{len(rows)}">
<h1>Verdicts: {html.escape(name)}</h1>
<p>Language: {html.escape(language_line(summary.language))}</p>
<ul class="readfirst">{read_first}</ul>
<p>Citations: {counts["correct"]} correct (in the KG given and entailed by their sentence), {counts["wrong"]} wrong (not in the KG given),
{counts["unaligned"]} unaligned, {counts["unjudged"]} unjudged, {counts["malformed"]} malformed.
{counts["extra"]} of them outside the minimum set, {extra_correct} of those correct:
precision counts only citations that are correct and in the minimum set. [NA] marks: {counts["na-entails"]} entail absent knowledge,
{counts["na-irrelevant"]} off the question, {counts["na-wrong"]} wrong, {counts["na-unscored"]} unscored; [NA] precision counts each
marked sentence once ({na_sentences} sentences). Sentences with neither a citation nor [NA]: {counts["uncited"]}.{_outdated_line(counts)}</p>
<details><summary>Models behind these verdicts</summary><ul>{models}</ul></details>
<div id="bar"><label>Show <select id="filter">{options}</select></label> <span id="shown"></span></div>
<main lang="{html.escape(summary.language)}">
{articles}
</main>
<script>{_SCRIPT}</script>
</body></html>
"""


def _outdated_line(counts: Counter[str]) -> str:
    n = counts["outdated"]
    return f" Outdated claims: {n} sentences state a value the previous KG held that the knowledge given no longer holds." if n else ""
