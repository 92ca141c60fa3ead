"""Grounding checkers as their authors run them: each one's exact input format, read-out, maximum
length and chunking, written from their papers and public inference code (Liyan06/MiniCheck
`minicheck/inference.py`, derenlei/FactCG `factcg/inference.py` and `utils.py`, yuh-zha/AlignScore
`inference.py` and `model.py`, Vectara's `modeling_hhem_v2.py`).

- `minicheck-t5:ID` (MiniCheck-Flan-T5): `predict: ` + document + `</s>` + claim, 2,048 tokens;
  softmax over the logits of ids 3 and 209 at the first decoder step (decoder input id 0), 209's;
  sentences packed into chunks of 500 whitespace words.
- `minicheck:ID` (MiniCheck-RoBERTa, -DeBERTa-v3): ONE string document + eos token + claim (not a
  tokenizer text pair), 512 / 2,048 tokens; softmax, index 1; sentences packed into 400 tokens.
- `factcg:ID` (FactCG-DeBERTa-v3): its question template around (document, claim), 2,048 tokens;
  softmax, index 1; sentences packed into 550 NLTK word tokens, joined by newlines.
- `alignscore:CKPT` (AlignScore-base/large): a tokenizer text pair (chunk, claim sentence), 512
  tokens; its 3-way head, index 0; the document in equal runs of sentences, one per 350 words,
  the claim split into sentences: the mean over them of the max over chunks.
- `hhem:ID` (HHEM-2.1-Open): its prompt `<pad> Determine if the hypothesis is true given the
  premise?…`; its token head at position 0, index 1; no chunks (no limit stated).
- `served-judge:URL:MODEL` (Bespoke-MiniCheck-7B or any chat model): MiniCheck's system prompt,
  `Document: …\nClaim: …`; the probability of "yes" among the first token's top 5; no chunks.

A pair's score is the maximum over its document's chunks: a claim that only the last chunk
supports is found. Nothing is cut in silence: a sentence longer than a chunk is split at words
(where the authors' code would make one over-long chunk that the tokenizer truncates, claim
first), and an input still longer than the maximum loses the end of its document, never the
claim (FactCG's `truncation='only_first'` on one string cuts the claim); every such input is
counted (`inputs`) and said once per backend. Sentences are NLTK's Punkt sentences, as the
authors split them: the language's model where it is installed (`nltk.download('punkt_tab')`),
else Punkt's untrained rules (given the language's abbreviations, in any but English), and which
one ran is part of every report and of the cache key. The language is English unless the spec
says another (`,language=fr`); `kalma evaluate` asks for the dataset's own.

Direction: the paper's, by default: the sentence (premise) is the checker's document and the
cited triple (hypothesis) its claim; `document=hypothesis` swaps them. Every checker's authors
call a pair supported above 0.5 (MiniCheck and FactCG also tune it per dataset on a development
split: `kalma judge evaluate`).

AlignScore's and HHEM's published weights belong to their authors' own modules; both are stock
transformers models in disguise, so each is converted once (`loading.converted`): AlignScore's
Lightning checkpoint (RoBERTa, its pooler, a 3-way linear head on the pooled output) into a
`RobertaForSequenceClassification` (the pooler's dense layer as the classifier's dense layer,
`tri_layer` as its output layer: the same Linear, tanh, Linear on the first token), HHEM's
`HHEMv2ForSequenceClassification` (a `T5ForTokenClassification` under `t5.`) into that stock
class. Tests hold both to the published architecture on tiny random models.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..errors import BackendError
from ..languages import DEFAULT_LANGUAGE, get_language
from ..languages.text import rules as text_rules
from .base import Entailment, Message
from .hf import _Classified, pad_id
from .judge import LLMJudgeEntailment
from .loading import converted, hub_ready, loading, model_ref, model_type, split_dtype
from .runtime import padded

log = logging.getLogger(__name__)

Document = Literal["premise", "hypothesis"]
THRESHOLD = 0.5  # every checker's authors: supported above it

FACTCG_MIDDLE = '\n\nChoose your answer: based on the paragraph above can we conclude that "'
FACTCG_TAIL = '"?\n\nOPTIONS:\n- Yes\n- No\nI think the answer is '
HHEM_HEAD = "<pad> Determine if the hypothesis is true given the premise?\n\nPremise: "
HHEM_MIDDLE = "\n\nHypothesis: "
MINICHECK_SYSTEM = (
    "Determine whether the provided claim is consistent with the corresponding document. Consistency in this context implies that all "
    "information presented in the claim is substantiated by the document. If not, it should be considered inconsistent. Please assess "
    'the claim\'s consistency with the document by responding with either "Yes" or "No".'
)
MINICHECK_USER = "Document: {document}\nClaim: {claim}"
T5_NO, T5_YES = 3, 209  # MiniCheck-Flan-T5's read-out: Flan-T5's ids of its "no support" and "support" answers


# ---------------------------------------------------------------- sentences and chunks


@functools.cache
def _punkt(language: str = DEFAULT_LANGUAGE) -> tuple[Callable[[str], list[str]], str]:
    """NLTK's Punkt sentence splitter and its name: the language's model when installed, else
    Punkt's untrained rules (no learned abbreviations: "Dr." ends a sentence), given the
    language's own abbreviations and ordinals (`kalma.languages.text`) for any but English."""
    import nltk
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    name = get_language(language).name.lower()  # punkt_tab's folders: english, french, german...
    try:
        nltk.data.find(f"tokenizers/punkt_tab/{name}/")
        return functools.partial(nltk.sent_tokenize, language=name), f"NLTK punkt_tab {name}"
    except LookupError:
        if language == DEFAULT_LANGUAGE:
            return PunktSentenceTokenizer().tokenize, "NLTK Punkt untrained (no punkt_tab installed)"
    lang = text_rules(language)
    params = PunktParameters()
    # Punkt's types: a word's lower case without its final stop; a phrase ("z. b.") is a type per word
    params.abbrev_types = set(lang.abbreviations) | {w.rstrip(".") for p in lang.phrases for w in p.split()}
    params.collocations = {("##number##", w) for w in lang.ordinal_words}  # "1. Mai": the stop is the ordinal's
    return PunktSentenceTokenizer(params).tokenize, f"NLTK Punkt untrained with KaLMA's {lang.code} abbreviations (no punkt_tab {name} installed)"


def sentences(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The sentences of `text`, as the checkers' authors split them (`_punkt`), in `language`."""
    return _punkt(language)[0](text)


def splitter(language: str = DEFAULT_LANGUAGE) -> str:
    return _punkt(language)[1]


def nltk_words(text: str, language: str = DEFAULT_LANGUAGE) -> int:
    """How many tokens `nltk.word_tokenize` makes of `text` (FactCG's chunk unit)."""
    return sum(len(_word_tokenizer().tokenize(s)) for s in sentences(text, language))


@functools.cache
def _word_tokenizer() -> Any:
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def _split_long(units: list[str], limit: int, count: Callable[[str], int]) -> tuple[list[str], bool]:
    """`units` with any longer than `limit` (by `count`) cut at words into runs within it; and
    whether any was."""
    out: list[str] = []
    split = False
    for unit in units:
        if count(unit) <= limit:
            out.append(unit)
            continue
        split = True
        run: list[str] = []
        for word in unit.split():
            if run and count(" ".join(run + [word])) > limit:
                out.append(" ".join(run))
                run = []
            run.append(word)
        out.extend([" ".join(run)] if run else [])
    return out, split


def minicheck_chunks(document: str, limit: int, count: Callable[[str], int], language: str = DEFAULT_LANGUAGE) -> tuple[list[str], bool]:
    """MiniCheck's chunks: the document's sentences, newline by newline (each newline an item of
    its own), packed while their count stays within `limit`, joined by spaces (" \\n " back to a
    newline), empty chunks dropped; a document with none is one empty chunk. And whether a sentence
    longer than `limit` was split at words (the authors' code makes it a chunk the tokenizer cuts).

    >>> minicheck_chunks("One two three. Four five.\\nSix seven eight nine.", 5, lambda s: len(s.split()))
    (['One two three. Four five.', 'Six seven eight nine.'], False)
    """
    items: list[str] = []
    for block in document.split("\n"):
        items += sentences(block, language) + ["\n"]
    items, split = _split_long(items[:-1], limit, count)
    chunks: list[str] = []
    cur: list[str] = []
    size = 0
    for item in items:
        n = count(item)
        if size + n > limit:
            chunks.append(" ".join(cur))
            cur, size = [item], n
        else:
            cur.append(item)
            size += n
    if cur:
        chunks.append(" ".join(cur))
    kept = [c.replace(" \n ", "\n").strip() for c in chunks]
    return [c for c in kept if c] or [""], split


def factcg_chunks(document: str, limit: int, language: str = DEFAULT_LANGUAGE) -> tuple[list[str], bool]:
    """FactCG's chunks: sentences packed while their NLTK word tokens stay within `limit`, joined
    by newlines (an empty chunk, which its code makes when the first sentence is over the limit,
    is dropped). And whether a sentence over the limit was split at words.

    >>> factcg_chunks("One two three. Four five. Six.", 7)
    (['One two three.\\nFour five.', 'Six.'], False)
    """
    count = functools.partial(nltk_words, language=language)
    found, split = _split_long(sentences(document, language), limit, count)
    chunks: list[str] = []
    chunk, size = "", 0
    for s in found:
        n = count(s)
        if size + n <= limit:
            chunk = "\n".join([chunk, s]).strip("\n")
            size += n
        else:
            chunks.append(chunk.strip("\n"))
            chunk, size = s, n
    if size > 0:
        chunks.append(chunk.replace(" \n ", "\n").strip("\n").strip())
    return [c for c in chunks if c] or [""], split


def alignscore_chunks(document: str, words: int = 350, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """AlignScore's chunks: as many as the document has `words`-word runs (plus one), each an equal
    run of its sentences joined by spaces.

    >>> alignscore_chunks("Born in Rome. Died in Naples. Buried there.", words=4)
    ['Born in Rome.', 'Died in Naples.', 'Buried there.']
    """
    found = sentences(document, language) or [""]
    n = max(len(found) // (len(document.strip().split()) // words + 1), 1)
    return [" ".join(found[i : i + n]) for i in range(0, len(found), n)]


# ---------------------------------------------------------------- one model input


@dataclass(frozen=True)
class Input:
    """One model input of a pair: a chunk of its document against (a sentence of) its claim."""

    pair: int
    claim: int  # which sentence of the claim (AlignScore splits claims), else 0
    text: str | tuple[str, str]  # the one string the model reads, or a tokenizer text pair
    ids: tuple[int, ...]
    types: tuple[int, ...] | None = None  # token type ids, where the tokenizer gives them
    cut: bool = False  # longer than the maximum: the end of its document was cut
    split: bool = False  # its document had a sentence longer than a chunk, split at words


class Checker(_Classified, Entailment):
    """What every local checker shares: the direction, its chunks, one input per chunk and claim
    sentence, batches planned over the inputs by the runtime planner, and the maximum over chunks."""

    name = ""  # the checker, as reports name it
    max_length: int | None = None  # tokens a model input may have; None: no limit
    chunk_size = 0  # the chunk limit, in the checker's own unit
    head = middle = tail = ""  # one string: head + document + middle + claim + tail

    def __init__(
        self,
        ref: str,
        spec: str | None = None,
        *,
        dtype: str | None = None,
        token_budget: int | None = None,
        batching: Literal["tokens", "items"] = "tokens",
        batch_size: int = 256,
        attention: str | None = None,
        offload: bool = False,
        pass_tokens: int | None = None,
        fixed_rows: int | None = None,
        document: Document = "premise",
        chunk_size: int | None = None,
        max_length: int | None = None,
        language: str | None = None,
    ):
        super().__init__(
            ref,
            spec,
            dtype=dtype,
            token_budget=token_budget,
            batching=batching,
            batch_size=batch_size,
            attention=attention,
            offload=offload,
            pass_tokens=pass_tokens,
            fixed_rows=fixed_rows,
        )
        self.document = document
        self.chunk_size = chunk_size or self.chunk_size
        self.max_length = max_length or self._default_max_length()
        self.language = language or DEFAULT_LANGUAGE  # whose rules split its documents and claims into sentences
        given = {"document": document if document != "premise" else None, "chunk_size": chunk_size, "max_length": max_length, "language": language}
        self.spec += "".join(f",{k}={v}" for k, v in given.items() if v is not None)
        self._cut_said = False

    def _default_max_length(self) -> int | None:
        return type(self).max_length

    # -- the format

    def parts(self, tok: Any) -> tuple[str, str, str]:
        """(head, middle, tail) of the one string, for this tokenizer."""
        return self.head, self.middle, self.tail

    def text(self, document: str, claim: str) -> str | tuple[str, str]:
        """The input the model reads for one chunk and claim, exactly."""
        head, middle, tail = self.parts(self.model()[0])
        return head + document + middle + claim + tail

    @abstractmethod
    def chunks(self, document: str) -> tuple[list[str], bool]:
        """The document's chunks, and whether a sentence was split at words."""

    def claims(self, claim: str) -> list[str]:
        return [claim]

    def shown(self) -> str:
        """The format in words: `'predict: ' + document + '</s>' + claim`."""
        head, middle, tail = self.parts(self.model()[0])
        return " + ".join(p for p in (repr(head) if head else "", "document", repr(middle), "claim", repr(tail) if tail else "") if p)

    def format_note(self) -> str:
        """The checker, its format and threshold, and the direction, as every report names them."""
        shown = self.shown()
        side = "the premise (sentence) is the document, the hypothesis (triple) the claim"
        if self.document == "hypothesis":
            side = "the hypothesis (triple) is the document, the premise (sentence) the claim"
        limit = f"{self.max_length} tokens" if self.max_length else "no length limit"
        return f"{self.name} format: {shown}; {self.readout()}; {limit}; {self.chunking()}; supported above {THRESHOLD:g} by its authors; {side}"

    def readout(self) -> str:
        return "P(supported) = softmax of its 2 classes, index 1"

    def chunking(self) -> str:
        return f"documents in chunks of {self.chunk_size} tokens (max over chunks; {splitter(self.language)})"

    def runs_as(self) -> str:
        return f"{super().runs_as()}; {self.format_note()}"

    def cache_identity(self) -> str | None:
        """The model's, and what decides its inputs beyond the spec: the sentence splitter."""
        found = super().cache_identity()
        return f"{found}|{splitter(self.language)}" if found else None

    # -- inputs

    def _encode(self, tok: Any, texts: Sequence[Any], **kwargs: Any) -> Any:
        return {"input_ids": [x.ids for x in texts]}

    def _plan(self, texts: Sequence[Any]) -> list[list[int]] | None:
        return None  # pairs go whole to `_entail`, which plans their inputs itself

    def _oriented(self, pair: tuple[str, str]) -> tuple[str, str]:
        return pair if self.document == "premise" else (pair[1], pair[0])

    def inputs(self, pairs: Sequence[tuple[str, str]]) -> list[Input]:
        """Every model input of `pairs`: each chunk of the document against each claim sentence."""
        tok, _ = self.model()
        out = []
        for i, pair in enumerate(pairs):
            document, claim = self._oriented(pair)
            chunks, split = self.chunks(document)
            for k, sentence in enumerate(self.claims(claim)):
                out += [replace(self._fit(tok, chunk, sentence), pair=i, claim=k, split=split) for chunk in chunks]
        return out

    def _fit(self, tok: Any, document: str, claim: str) -> Input:
        """One input within the maximum: the end of its document cut, token by token, until it
        fits; the claim is cut (from its end) only when no document is left to cut."""
        cut = False
        for _ in range(8):
            text = self.text(document, claim)
            assert isinstance(text, str)
            enc = tok(text, return_offsets_mapping=self.max_length is not None)
            over = len(enc["input_ids"]) - (self.max_length or len(enc["input_ids"]))
            if over <= 0:
                return Input(0, 0, text, tuple(enc["input_ids"]), _types(enc), cut)
            cut = True
            start = len(self.parts(tok)[0])
            mine = [a for a, b in enc["offset_mapping"] if start <= a < start + len(document) and b > a]
            if not mine:
                break
            document = document[: mine[-min(over, len(mine))] - start].rstrip()
        enc = tok(text, truncation=True, max_length=self.max_length)
        return Input(0, 0, text, tuple(enc["input_ids"]), _types(enc), True)

    # -- scoring

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        inputs = self.inputs(pairs)
        cut = sum(x.cut for x in inputs)
        if cut and not self._cut_said:  # once per backend: a run may cut thousands
            log.warning("%s: %d inputs longer than %s tokens lost the end of their document (the claim kept)", self.spec, cut, self.max_length)
            self._cut_said = True
        scores = self._run_planned(inputs, self._batch)
        best: dict[tuple[int, int], float] = {}
        for x, p in zip(inputs, scores):
            best[(x.pair, x.claim)] = max(best.get((x.pair, x.claim), -math.inf), p)
        per_claim: dict[int, list[float]] = {}
        for (i, _), p in sorted(best.items()):
            per_claim.setdefault(i, []).append(p)
        return [sum(v) / len(v) for _, v in sorted(per_claim.items())]

    def _tensors(self, batch: Sequence[Input]) -> dict[str, Any]:
        """The batch right-padded to a multiple of the padding width."""
        import torch

        tok, model = self.model()
        width = padded(max(len(x.ids) for x in batch))
        fill = [width - len(x.ids) for x in batch]
        out = {
            "input_ids": torch.tensor([list(x.ids) + [pad_id(tok)] * n for x, n in zip(batch, fill)], device=model.device),
            "attention_mask": torch.tensor([[1] * len(x.ids) + [0] * n for x, n in zip(batch, fill)], device=model.device),
        }
        if batch[0].types is not None:
            out["token_type_ids"] = torch.tensor([list(x.types or ()) + [0] * n for x, n in zip(batch, fill)], device=model.device)
        return out

    def _batch(self, batch: Sequence[Input]) -> list[float]:
        import torch

        _, model = self.model()
        logits = model(**self._tensors(batch)).logits.float()
        return list(torch.softmax(logits, dim=-1)[:, self._supported(model)].tolist())

    def _supported(self, model: Any) -> int:
        """The class index of "supported", checked against the head the checkpoint has."""
        if int(model.config.num_labels) != 2:
            raise BackendError(f"{self.spec}: a {self.name} checkpoint has 2 classes, this one {model.config.num_labels}")
        return 1


def _types(enc: Any) -> tuple[int, ...] | None:
    found = enc.get("token_type_ids")
    return tuple(found) if found is not None else None


class MiniCheckT5(Checker):
    """`minicheck-t5:<id>` (lytang/MiniCheck-Flan-T5-Large)."""

    kind, prefix, name = "seq2seq", "minicheck-t5", "MiniCheck-Flan-T5"
    max_length, chunk_size = 2048, 500

    def parts(self, tok: Any) -> tuple[str, str, str]:
        return "predict: ", str(tok.eos_token), ""

    def chunks(self, document: str) -> tuple[list[str], bool]:
        return minicheck_chunks(document, self.chunk_size, lambda s: len(s.split()), self.language)

    def chunking(self) -> str:
        return f"documents in chunks of {self.chunk_size} whitespace words (max over chunks; {splitter(self.language)})"

    def readout(self) -> str:
        return f"P(supported) = softmax over the logits of token ids {T5_NO} and {T5_YES} at the first decoder step (decoder input id 0), {T5_YES}'s"

    def _cost(self, rows: int, width: int) -> int:
        return self.rt.memory.seq2seq(rows, width)

    def _batch(self, batch: Sequence[Input]) -> list[float]:
        import torch

        _, model = self.model()
        if int(model.config.vocab_size) <= T5_YES:
            raise BackendError(f"{self.spec}: a vocabulary of {model.config.vocab_size} has no id {T5_YES}: not a MiniCheck-Flan-T5 checkpoint")
        start = torch.zeros((len(batch), 1), dtype=torch.long, device=model.device)
        logits = model(**self._tensors(batch), decoder_input_ids=start, use_cache=False).logits[:, 0, :].float()
        return list(torch.softmax(logits[:, [T5_NO, T5_YES]], dim=-1)[:, 1].tolist())


class MiniCheck(Checker):
    """`minicheck:<id>` (lytang/MiniCheck-RoBERTa-Large, lytang/MiniCheck-DeBERTa-v3-Large): 512
    tokens for RoBERTa, 2,048 for DeBERTa."""

    kind, prefix, name = "classifier", "minicheck", "MiniCheck"
    chunk_size = 400

    def parts(self, tok: Any) -> tuple[str, str, str]:
        return "", str(tok.eos_token), ""

    def _default_max_length(self) -> int | None:
        return 512 if "roberta" in model_type(self.path) else 2048

    def chunks(self, document: str) -> tuple[list[str], bool]:
        tok, _ = self.model()
        limit = self.max_length

        def count(text: str) -> int:
            return len(tok(text, add_special_tokens=False, truncation=True, max_length=limit)["input_ids"])

        return minicheck_chunks(document, self.chunk_size, count, self.language)


class FactCG(Checker):
    """`factcg:<id>` (yaxili96/FactCG-DeBERTa-v3-Large)."""

    kind, prefix, name = "classifier", "factcg", "FactCG"
    max_length, chunk_size = 2048, 550
    middle, tail = FACTCG_MIDDLE, FACTCG_TAIL

    def chunks(self, document: str) -> tuple[list[str], bool]:
        return factcg_chunks(document, self.chunk_size, self.language)

    def chunking(self) -> str:
        return f"documents in chunks of {self.chunk_size} NLTK word tokens joined by newlines (max over chunks; {splitter(self.language)})"


class AlignScore(Checker):
    """`alignscore:<checkpoint>`, converted (`alignscore`)."""

    kind, prefix, name = "classifier", "alignscore", "AlignScore"
    max_length, chunk_size = 512, 350

    def text(self, document: str, claim: str) -> str | tuple[str, str]:
        return document, claim

    def shown(self) -> str:
        return "tokenizer text pair (document chunk, claim sentence)"

    def chunks(self, document: str) -> tuple[list[str], bool]:
        return alignscore_chunks(document, self.chunk_size, self.language), False

    def claims(self, claim: str) -> list[str]:
        return sentences(claim, self.language) or [claim]

    def chunking(self) -> str:
        return (
            f"documents in equal runs of sentences, one per {self.chunk_size} words, claims in sentences: the mean over claim sentences "
            f"of the max over chunks ({splitter(self.language)})"
        )

    def readout(self) -> str:
        return "P(aligned) = softmax of its 3-way head, index 0"

    def _fit(self, tok: Any, document: str, claim: str) -> Input:
        """A text pair cut from the document's end only (`only_first`), as the authors tokenize it."""
        whole = len(tok(document, claim)["input_ids"])
        try:
            enc = tok(document, claim, truncation="only_first", max_length=self.max_length)
        except Exception:  # noqa: BLE001 - the claim alone is over the maximum: cut both, as its authors fall back
            enc = tok(document, claim, truncation=True, max_length=self.max_length)
        return Input(0, 0, (document, claim), tuple(enc["input_ids"]), _types(enc), whole > (self.max_length or whole))

    def _supported(self, model: Any) -> int:
        if int(model.config.num_labels) != 3:
            raise BackendError(f"{self.spec}: AlignScore's head has 3 classes, this one {model.config.num_labels}")
        return 0


class HHEM(Checker):
    """`hhem:<id>` (vectara/hallucination_evaluation_model), converted (`hhem`)."""

    kind, prefix, name = "token-classifier", "hhem", "HHEM-2.1-Open"
    head, middle = HHEM_HEAD, HHEM_MIDDLE

    def chunks(self, document: str) -> tuple[list[str], bool]:
        return [document], False

    def chunking(self) -> str:
        return "no chunks (its authors state no length limit)"

    def readout(self) -> str:
        return "P(consistent) = softmax of its token head at the first position, index 1"

    def _cost(self, rows: int, width: int) -> int:
        return self.rt.memory.seq2seq(rows, width)

    def _batch(self, batch: Sequence[Input]) -> list[float]:
        import torch

        _, model = self.model()
        logits = model(**self._tensors(batch)).logits[:, 0, :].float()
        return list(torch.softmax(logits, dim=-1)[:, self._supported(model)].tolist())


# ---------------------------------------------------------------- published weights, converted once


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def alignscore(
    ckpt: str,
    *,
    base: str = "roberta-large",
    trust_checkpoint: bool = False,
    dtype: str | None = None,
    token_budget: int | None = None,
    attention: str | None = None,
    offload: bool = False,
    document: Document = "premise",
    language: str | None = None,
) -> AlignScore:
    """`alignscore:<AlignScore-large.ckpt>[,base=roberta-large]`: the authors' Lightning checkpoint
    (their release's `AlignScore-base.ckpt` needs `base=roberta-base`), converted once into a
    `RobertaForSequenceClassification` with `base`'s tokenizer and configuration. The checkpoint is
    read with torch's weights-only loader; `trust_checkpoint=true` lets it unpickle what else the
    file holds (only for a file you trust)."""
    from ..resume import path_digest

    path, suffix = split_dtype(ckpt)
    file = Path(path).expanduser()
    if not file.is_file():
        raise BackendError(f"alignscore: no checkpoint file {path!r} (AlignScore-large.ckpt from its authors' release)")
    with loading(base):  # no weight-writing bars; a base that cannot be read is one line
        folder = converted(f"alignscore-{_digest(path_digest(file), base)}", lambda out: _write_alignscore(file, base, out, trust_checkpoint))
    spec = f"alignscore:{path}" + (f",base={base}" if base != "roberta-large" else "")
    ref = f"{folder}@{suffix}" if suffix else str(folder)
    return AlignScore(ref, spec, dtype=dtype, token_budget=token_budget, attention=attention, offload=offload, document=document, language=language)


def _write_alignscore(file: Path, base: str, out: Path, trust: bool) -> None:
    """AlignScore's RoBERTa, pooler and `tri_layer` as a stock sequence classifier."""
    import torch
    import transformers

    try:
        state = torch.load(str(file), map_location="cpu", weights_only=not trust)["state_dict"]
    except Exception as exc:  # noqa: BLE001 - said in one line
        hint = "" if trust else "; if you trust the file, give trust_checkpoint=true to unpickle it whole"
        raise BackendError(f"alignscore: cannot read {file} as an AlignScore checkpoint ({type(exc).__name__}: {str(exc)[:200]}){hint}") from None
    body = {k.removeprefix("base_model."): v for k, v in state.items() if k.startswith("base_model.") and not k.startswith("base_model.pooler.")}
    body = {k: v for k, v in body.items() if k != "embeddings.position_ids"}  # a buffer older transformers saved
    head = {
        "dense.weight": state.get("base_model.pooler.dense.weight"),
        "dense.bias": state.get("base_model.pooler.dense.bias"),
        "out_proj.weight": state.get("tri_layer.weight"),
        "out_proj.bias": state.get("tri_layer.bias"),
    }
    if any(v is None for v in head.values()):
        raise BackendError(f"alignscore: {file} has no {', '.join(k for k, v in head.items() if v is None)}: not an AlignScore checkpoint")
    labels = {0: "aligned", 1: "not aligned (1)", 2: "not aligned (2)"}
    config = transformers.AutoConfig.from_pretrained(base, num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    tok = transformers.AutoTokenizer.from_pretrained(base)
    if config.model_type != "roberta":
        raise BackendError(f"alignscore: base={base} is a {config.model_type}; AlignScore's checkpoints are RoBERTa")
    model = transformers.RobertaForSequenceClassification(config)
    _load_exactly(model.roberta, body, f"alignscore: {file}")
    _load_exactly(model.classifier, head, f"alignscore: {file}")
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))


def hhem(
    ref: str,
    *,
    dtype: str | None = None,
    token_budget: int | None = None,
    attention: str | None = None,
    offload: bool = False,
    document: Document = "premise",
) -> HHEM:
    """`hhem:<id or folder>` (vectara/hallucination_evaluation_model): its published weights (a
    `T5ForTokenClassification` under `t5.`) converted once into that stock class, with the
    foundation's tokenizer and configuration (`foundation` in its config.json: google/flan-t5-base)."""
    from ..resume import path_digest

    path, suffix = split_dtype(ref)
    source = _published(path)
    config = json.loads((source / "config.json").read_text())
    foundation = str(config.get("foundation") or "google/flan-t5-base")
    with loading(foundation):
        folder = converted(f"hhem-{_digest(path_digest(source), foundation)}", lambda out: _write_hhem(source, foundation, out))
    return HHEM(
        f"{folder}@{suffix}" if suffix else str(folder),
        f"hhem:{path}",
        dtype=dtype,
        token_budget=token_budget,
        attention=attention,
        offload=offload,
        document=document,
    )


def _published(ref: str) -> Path:
    """A published checkpoint's folder: as given, or its config and weights from the hub."""
    if os.path.isdir(os.path.expanduser(ref)):
        return Path(ref).expanduser()
    from huggingface_hub import snapshot_download

    hub_ready(model_ref(ref))
    with loading(ref):
        return Path(snapshot_download(ref, allow_patterns=["config.json", "*.safetensors", "*.bin"]))


def _write_hhem(source: Path, foundation: str, out: Path) -> None:
    import torch
    import transformers

    weights: dict[str, Any] = {}
    for f in sorted(source.glob("*.safetensors")):
        from safetensors.torch import load_file

        weights |= load_file(str(f))
    for f in [] if weights else sorted(source.glob("*.bin")):
        weights |= torch.load(str(f), map_location="cpu", weights_only=True)
    state = {k.removeprefix("t5."): v for k, v in weights.items() if k.startswith("t5.")}
    if not state:
        raise BackendError(f"hhem: {source} holds no t5.* weights: not an HHEM-2.1 checkpoint")
    labels = {0: "hallucinated", 1: "consistent"}
    config = transformers.AutoConfig.from_pretrained(foundation, num_labels=2, id2label=labels, label2id={v: k for k, v in labels.items()})
    tok = transformers.AutoTokenizer.from_pretrained(foundation)
    model = transformers.T5ForTokenClassification(config)
    _load_exactly(model, state, f"hhem: {source}")
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))


def _load_exactly(module: Any, state: dict[str, Any], where: str) -> None:
    """`state` into `module`, every weight accounted for (a tied weight given once counts for both)."""
    missing, unexpected = module.load_state_dict(state, strict=False)
    params = dict(module.named_parameters(remove_duplicate=False))
    given = {params[k].data_ptr() for k in state if k in params}
    unset = [k for k in missing if k not in params or params[k].data_ptr() not in given]
    if unset or unexpected:
        raise BackendError(f"{where}: the weights do not fit the published architecture (missing {unset[:3]}, unexpected {list(unexpected)[:3]})")


# ---------------------------------------------------------------- a served judge


class MiniCheckJudge(LLMJudgeEntailment):
    """`served-judge:<base_url>:<model>`: Bespoke-MiniCheck-7B's format on an OpenAI-compatible
    server (vLLM, llama.cpp, TGI) serving it or any chat model: MiniCheck's system prompt, the user
    turn `Document: …\nClaim: …`, one token, and P(supported) the summed probabilities of the
    top-5 first tokens that read "yes" in any case (its authors' read-out: not renormalised
    against "no"). A server that gives no log-probabilities is read by its word. Documents go
    whole: the model's 32K positions are its limit, and a longer one is the server's error."""

    max_tokens = 1

    def __init__(self, llm: Any, argument: str, document: Document = "premise"):
        super().__init__(llm)
        self.document = document
        self.spec = f"served-judge:{argument}" + (",document=hypothesis" if document == "hypothesis" else "")

    def cache_identity(self) -> str | None:
        inner = self.llm.cache_identity()
        return f"served-judge:{inner}|document={self.document}" if inner is not None else None

    def runs_as(self) -> str:
        side = "the premise is the document" if self.document == "premise" else "the hypothesis is the document"
        return (
            "MiniCheck LLM format: its system prompt, 'Document: ' + document + '\\nClaim: ' + claim; P(supported) = the summed "
            f"probability of 'yes' among the first token's top 5; supported above {THRESHOLD:g} by its authors; {side}"
        )

    def _chats(self, pairs: Sequence[tuple[str, str]]) -> list[list[Message]]:
        out = []
        for pair in pairs:
            document, claim = pair if self.document == "premise" else (pair[1], pair[0])
            user = MINICHECK_USER.format(document=document, claim=claim)
            out.append([{"role": "system", "content": MINICHECK_SYSTEM}, {"role": "user", "content": user}])
        return out

    def _p_yes(self, top: dict[str, float]) -> float | None:
        if not top:  # a server that lists no alternatives (`top_logprobs: []`): read by the reply's word, and said
            return None
        return sum(math.exp(v) for k, v in top.items() if k.lower() == "yes")


def served_judge(
    argument: str,
    *,
    document: Document = "premise",
    concurrency: int | None = None,
    identity: str | None = None,
    timeout: float = 120.0,
    max_retries: int = 5,
) -> MiniCheckJudge:
    """`served-judge:<base_url>:<model>[,document=…,concurrency=…,identity=…]`."""
    from .openai_backend import compatible

    return MiniCheckJudge(compatible(argument, concurrency=concurrency, max_retries=max_retries, timeout=timeout, identity=identity), argument, document)
