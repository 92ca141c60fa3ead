"""Model backends behind three interfaces (LLM, Entailment, LMScorer), chosen by spec string.

| spec | LLM | entailment | LM scorer |
|---|---|---|---|
| `openai:<model>` | ✓ | | |
| `openai-compatible:<base_url>:<model>` | ✓ | | |
| `hf:<hub id or path>` | ✓ | | ✓ |
| `smollm2` | ✓ | | ✓ |
| `template` | ✓ (offline patterns) | | |
| `hf-seq2seq:<id>` | | ✓ TRUE-style | |
| `hf-nli:<id>` | | ✓ MNLI-style | |
| `llm:<llm spec>` | | ✓ LLM judge | |
| `lexical` | | ✓ rule-based approximation | |
| `table:<file.jsonl>` | | ✓ judgements read from a file (human labels) | |

Text scorers for CONNER: relevance by `cross-encoder:<id>` or the `minilm` embedding fallback;
paragraph coherence by a sequence classifier `hf-cls:<id>`.

A new backend is one class plus one entry below; heavy libraries import only when a backend
is built.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from .base import Entailment, GenParams, Generation, LLM, LMScorer


def _hf_llm(arg: str) -> LLM:
    from .hf import HFCausalLM

    return HFCausalLM(arg)


def _smollm2_llm(arg: str) -> LLM:
    from .hf import HFCausalLM
    from .smollm2 import SPEC, converted_dir

    return HFCausalLM(str(converted_dir()), spec=SPEC)


def _openai(arg: str) -> LLM:
    from .openai_backend import OpenAIChat

    return OpenAIChat(arg)


def _openai_compatible(arg: str) -> LLM:
    from .openai_backend import OpenAIChat, parse_compatible

    base, model = parse_compatible(arg)
    return OpenAIChat(model, base_url=base)


def _template(arg: str) -> LLM:
    from .template import TemplateLLM

    return TemplateLLM()


def _hf_seq2seq(arg: str) -> Entailment:
    from .hf import HFSeq2SeqEntailment

    return HFSeq2SeqEntailment(arg)


def _hf_nli(arg: str) -> Entailment:
    from .hf import HFNLIEntailment

    return HFNLIEntailment(arg)


def _llm_judge(arg: str) -> Entailment:
    from .judge import LLMJudgeEntailment

    return LLMJudgeEntailment(get_llm(arg))


def _table(arg: str) -> Entailment:
    from .table import TableEntailment

    return TableEntailment(arg)


def _lexical(arg: str) -> Entailment:
    from .lexical import LexicalEntailment

    return LexicalEntailment()


def _hf_scorer(arg: str) -> LMScorer:
    from .hf import HFCausalScorer

    return HFCausalScorer(arg)


def _smollm2_scorer(arg: str) -> LMScorer:
    from .hf import HFCausalScorer
    from .smollm2 import SPEC, converted_dir

    return HFCausalScorer(str(converted_dir()), spec=SPEC)


def _cross_encoder(arg: str) -> object:
    from .matcher import CrossEncoderMatcher

    return CrossEncoderMatcher(arg)


def _minilm(arg: str) -> object:
    from .matcher import MiniLMMatcher

    return MiniLMMatcher()


LLMS: dict[str, Callable[[str], LLM]] = {
    "openai": _openai, "openai-compatible": _openai_compatible, "hf": _hf_llm, "smollm2": _smollm2_llm, "template": _template,
}
ENTAILMENT: dict[str, Callable[[str], Entailment]] = {
    "hf-seq2seq": _hf_seq2seq, "hf-nli": _hf_nli, "llm": _llm_judge, "lexical": _lexical, "table": _table,
}
SCORERS: dict[str, Callable[[str], LMScorer]] = {"hf": _hf_scorer, "smollm2": _smollm2_scorer}
def _classifier(arg: str) -> object:
    from .matcher import ClassifierScorer

    return ClassifierScorer(arg)


MATCHERS: dict[str, Callable[[str], object]] = {"cross-encoder": _cross_encoder, "minilm": _minilm, "hf-cls": _classifier}
NO_ARGUMENT = {"smollm2", "template", "lexical", "minilm"}


def _build(kind: str, table: dict[str, Callable[[str], object]], spec: str) -> object:
    name, sep, arg = spec.partition(":")
    if name in table and (sep or name in NO_ARGUMENT):
        return table[name](arg)
    close = difflib.get_close_matches(name, list(table), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    forms = ", ".join(n if n in NO_ARGUMENT else f"{n}:…" for n in table)
    raise ValueError(f"unknown {kind} backend {spec!r}; known: {forms}.{hint}")


_instances: dict[tuple[str, str], object] = {}


def _get(kind: str, table: dict[str, Callable[[str], object]], spec: str) -> object:
    key = (kind, spec)
    if key not in _instances:
        _instances[key] = _build(kind, table, spec)
    return _instances[key]


def get_llm(spec: str) -> LLM:
    return _get("LLM", LLMS, spec)  # type: ignore[return-value]


def get_entailment(spec: str) -> Entailment:
    return _get("entailment", ENTAILMENT, spec)  # type: ignore[return-value]


def get_scorer(spec: str) -> LMScorer:
    return _get("LM scorer", SCORERS, spec)  # type: ignore[return-value]


def get_matcher(spec: str):  # type: ignore[no-untyped-def]
    """A query-text relevance matcher: `cross-encoder:<id>` or the `minilm` fallback."""
    return _get("matcher", MATCHERS, spec)


__all__ = ["get_matcher", "LLM", "Entailment", "LMScorer", "GenParams", "Generation", "get_llm", "get_entailment", "get_scorer", "LLMS", "ENTAILMENT", "SCORERS"]
