"""Step 1, NER: spaCy on the question, backed by a gazetteer of KG labels.

The small English model mislabels names (it tags "Artemisia Gentileschi" as FAC), so spans of
the question that are KG labels of entities of a known class become patterns of an EntityRuler
placed before the statistical NER, under their class's NER type (`kalma.classes`: PERSON for
people, ORG for organizations, GPE for cities...; a span of several types takes the first, people
first). The gazetteer is built from one batched KG look-up per NER type of the question's
capitalised spans, so it works the same against a local snapshot and against Wikidata.
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
from kalma.nlp import DEFAULT_SPACY, load_spacy

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


def candidate_spans(question: str, max_len: int = 5, connectors: frozenset[str] = CONNECTORS) -> dict[str, int]:
    """{span: character offset} for capitalised word sequences (name connectors allowed
    inside), possessives stripped; coordinated names are anchored on their first word.

    >>> sorted(candidate_spans("Was Louis the Stammerer the son of Charles the Bald?"))
    ['Bald', 'Charles', 'Charles the Bald', 'Louis', 'Louis the Stammerer', 'Stammerer', 'Was', 'Was Louis', 'Was Louis the Stammerer']
    """
    words = [(m.group(0), m.start()) for m in re.finditer(r"[\w’'-]+", question)]
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


class NER:
    def __init__(self, source: KnowledgeSource, spacy_model: str = DEFAULT_SPACY, connectors: frozenset[str] = CONNECTORS):
        self.source = source
        self.spacy_model = spacy_model
        self.connectors = connectors

    def __call__(self, questions: Sequence[str]) -> list[list[Mention]]:
        spans = [candidate_spans(q, connectors=self.connectors) for q in questions]
        # The gazetteer: every question's spans that label an entity of a known class, one batched look-up per NER type.
        names = sorted({s for sp in spans for s in sp})
        typed: dict[str, str] = {}  # span -> NER type
        for kind, classes in ner_classes().items() if names else ():
            typed.update({s: kind for s, hits in self.source.lookup(names, classes).items() if hits and s not in typed})
        people = {s for s, kind in typed.items() if kind == "PERSON"}
        nlp = load_spacy(self.spacy_model)
        ruler = _ruler(nlp)
        ruler.clear()
        ruler.add_patterns([{"label": kind, "pattern": p} for p, kind in sorted(typed.items())])
        out = []
        docs = nlp.pipe(questions, disable=[] if typed else [RULER])
        # the release's 1,085 questions take tens of seconds on a CPU: a bar, for runs that long
        bar = tqdm(docs, total=len(questions), desc=f"ner: {self.spacy_model}", unit="question", disable=len(questions) < 200, file=sys.stderr)
        for doc, q in zip(bar, questions):  # the bar first: its end closes it at 100 %
            mentions: dict[str, Mention] = {}
            for ent in doc.ents:
                text = clean_mention(ent.text)
                if text:
                    mentions.setdefault(text, Mention(text, ent.label_, ent.start_char))
            # "Oscar and Richard Hertwig": "Oscar" alone is no label; the shared family name makes one.
            for m in _COORDINATED.finditer(q):
                full = f"{m.group(1)} {m.group(3)}"
                if full in people:
                    mentions.pop(m.group(1), None)
                    mentions.setdefault(full, Mention(full, "PERSON", m.start(1)))
            out.append(sorted(mentions.values(), key=lambda x: x.start))
        return out
