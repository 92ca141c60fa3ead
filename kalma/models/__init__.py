"""Model backends behind four interfaces (LLM, Entailment, LMScorer, Matcher), chosen by spec string.

| spec | LLM | entailment | LM scorer |
|---|---|---|---|
| `openai:<model>` | ✓ | | |
| `openai-compatible:<base_url>:<model>` | ✓ | | ✓ served: /completions with `echo` and `logprobs` |
| `hf:<hub id or path>` | ✓ | | ✓ |
| `smollm2` | ✓ | | ✓ |
| `template` | ✓ (offline patterns) | | |
| `hf-seq2seq:<id>` | | ✓ TRUE-style | |
| `hf-nli:<id>` | | ✓ MNLI-style | |
| `minicheck-t5:<id>` | | ✓ MiniCheck-Flan-T5, its format (`checkers`) | |
| `minicheck:<id>` | | ✓ MiniCheck-RoBERTa / -DeBERTa-v3, its format | |
| `factcg:<id>` | | ✓ FactCG-DeBERTa-v3, its format | |
| `alignscore:<checkpoint>` | | ✓ AlignScore, its checkpoint converted once | |
| `hhem:<id>` | | ✓ HHEM-2.1-Open, its weights converted once | |
| `served-judge:<base_url>:<model>` | | ✓ Bespoke-MiniCheck-7B's format on a served chat model | |
| `llm:<llm spec>` | | ✓ LLM judge | |
| `lexical` | | ✓ rule-based approximation | |
| `table:<file.jsonl>` | | ✓ judgements read from a file (human labels) | |

Text scorers for CONNER: relevance by `cross-encoder:<id>` or the `minilm` embedding fallback;
paragraph coherence by a sequence classifier `hf-cls:<id>`.

A new backend is one class plus one `add` line below (or an entry point in another package);
heavy libraries import only when a backend is built. Options follow the spec:
`openai-compatible:http://host:8000/v1:model,concurrency=64`, `hf:ID,dtype=bf16,token_budget=8192`.
"""

from __future__ import annotations

from typing import Any

from ..registry import Registry
from .base import LLM, Entailment, Generation, GenParams, LMScorer, Matcher

LLMS: Registry[LLM] = Registry("LLM backend", "kalma.llms")
LLMS.add("openai", "kalma.models.openai_backend:OpenAIChat")
LLMS.add("openai-compatible", "kalma.models.openai_backend:compatible")
LLMS.add("hf", "kalma.models.hf:HFCausalLM")
LLMS.add("smollm2", "kalma.models.smollm2:llm", argument="none")
LLMS.add("template", "kalma.models.template:TemplateLLM", argument="none")

ENTAILMENT: Registry[Entailment] = Registry("entailment backend", "kalma.entailment")
ENTAILMENT.add("hf-seq2seq", "kalma.models.hf:HFSeq2SeqEntailment")
ENTAILMENT.add("hf-nli", "kalma.models.hf:HFNLIEntailment")
ENTAILMENT.add("llm", "kalma.models.judge:from_spec", raw=True)
ENTAILMENT.add("minicheck-t5", "kalma.models.checkers:MiniCheckT5")
ENTAILMENT.add("minicheck", "kalma.models.checkers:MiniCheck")
ENTAILMENT.add("factcg", "kalma.models.checkers:FactCG")
ENTAILMENT.add("alignscore", "kalma.models.checkers:alignscore")
ENTAILMENT.add("hhem", "kalma.models.checkers:hhem")
ENTAILMENT.add("served-judge", "kalma.models.checkers:served_judge")
ENTAILMENT.add("lexical", "kalma.models.lexical:LexicalEntailment", argument="none")
ENTAILMENT.add("table", "kalma.models.table:TableEntailment")
# Judges whose judgements depend on the text's language: the lexical judge's text rules, the
# checkers' sentence splitting. `kalma evaluate` gives them the dataset's (`,language=`).
READS_LANGUAGE = frozenset({"lexical", "minicheck-t5", "minicheck", "factcg", "alignscore"})  # HHEM reads its document whole

SCORERS: Registry[LMScorer] = Registry("LM scorer", "kalma.scorers")
SCORERS.add("hf", "kalma.models.hf:HFCausalScorer")
SCORERS.add("smollm2", "kalma.models.smollm2:scorer", argument="none")
SCORERS.add("openai-compatible", "kalma.models.openai_backend:compatible_scorer")

MATCHERS: Registry[Matcher] = Registry("text scorer", "kalma.matchers")
MATCHERS.add("cross-encoder", "kalma.models.hf:HFCrossEncoder")
MATCHERS.add("minilm", "kalma.models.matcher:minilm", argument="none")
MATCHERS.add("hf-cls", "kalma.models.hf:HFTextClassifier")

_instances: dict[tuple[Any, ...], object] = {}


def _get(registry: Registry[Any], spec: str) -> Any:
    """One instance per spec and process: a model loads once however many metrics use it. A
    file the spec names (`table:labels.jsonl`) is part of the key by its size and modification
    time, so an edited file is read again, never served from the instance of its old content."""
    from ..resume import spec_paths

    files = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in spec_paths(spec) if p.is_file())
    key = (registry.group, spec, *files)
    if key not in _instances:
        from ..errors import HubMissing

        try:
            _instances[key] = registry.build(spec)
        except HubMissing as missing:  # its hint is the spec as given, with a folder for the id
            missing.spec = spec
            raise
    return _instances[key]


def get_llm(spec: str) -> LLM:
    return _get(LLMS, spec)


def get_entailment(spec: str) -> Entailment:
    return _get(ENTAILMENT, spec)


def get_scorer(spec: str) -> LMScorer:
    return _get(SCORERS, spec)


def describe(spec: str | None, registry: Registry[Any]) -> str:
    """A model as every report names it: its spec and, for one this process runs, how
    (`hf-seq2seq:google/t5_xxl_true_nli_mixture @bf16 on NVIDIA H100 80GB HBM3, eager attention`):
    a CPU run and a GPU run of one spec never read as the same model."""
    if not spec:
        return "none"
    how = getattr(_get(registry, spec), "runs_as", None)
    return f"{spec} {how()}" if callable(how) else spec


def runtimes() -> dict[str, Any]:
    """Every local model this process built, with each device decision it resolved to."""
    out: dict[str, Any] = {}
    for key, backend in _instances.items():
        runtime = getattr(backend, "runtime", None)
        if callable(runtime):
            out[str(key[1])] = runtime()  # by the spec as given
    return out


def get_matcher(spec: str) -> Matcher:
    """A query-text relevance matcher: `cross-encoder:<id>`, `hf-cls:<id>` or the `minilm` fallback."""
    return _get(MATCHERS, spec)


__all__ = [
    "get_matcher",
    "describe",
    "runtimes",
    "LLM",
    "Entailment",
    "LMScorer",
    "Matcher",
    "GenParams",
    "Generation",
    "get_llm",
    "get_entailment",
    "get_scorer",
    "LLMS",
    "ENTAILMENT",
    "SCORERS",
    "MATCHERS",
]
