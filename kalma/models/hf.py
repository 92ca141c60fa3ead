"""Hugging Face transformers backends: causal LMs (chat + scoring), TRUE-style seq2seq
entailment, and MNLI-style classifiers. Models load once per process, from a hub id or a local
path, on CUDA when available and the CPU otherwise."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .base import Entailment, GenParams, Generation, LLM, LMScorer, Message, TokenLogprob


@contextmanager
def loading(path: str) -> Iterator[None]:
    """A model that cannot be loaded (no such path, no hub access, not a model) is a
    BackendError naming it, not a traceback."""
    from ..errors import BackendError, one_line

    try:
        yield
    except (OSError, ValueError, EnvironmentError) as exc:
        raise BackendError(f"cannot load the model {path!r} ({one_line(exc)})") from None


def model_ref(path: str) -> str:
    """`path` if it can name a model: an existing local folder, or a hub id (`name` or
    `org/name`). A filesystem path that does not exist is refused at once, before any work."""
    from ..errors import BackendError

    looks_local = path.startswith(("/", "./", "../", "~")) or path.count("/") > 1 or os.sep != "/" and os.sep in path
    if looks_local and not os.path.isdir(os.path.expanduser(path)):
        raise BackendError(f"cannot load the model {path!r} (no such folder)")
    return path


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=4)
def load_causal(path: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with loading(path):
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device()).eval()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok, model


def render_chat(tok: Any, messages: list[Message]) -> str:
    """The model's own chat template when it has one, else a plain transcript."""
    if getattr(tok, "chat_template", None):
        return str(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n".join(lines) + "\nAssistant:"


class HFCausalLM(LLM):
    """`hf:<hub id or path>`: batched generation with left padding."""

    def __init__(self, path: str, spec: str | None = None, batch_size: int = 8):
        self.path = model_ref(path)
        self.spec = spec or f"hf:{path}"
        self.batch_size = batch_size

    def _generate(self, batch: Sequence[list[Message]], params: GenParams) -> list[Generation]:
        import torch

        tok, model = load_causal(self.path)
        prompts = [render_chat(tok, m) for m in batch]
        tok.padding_side = "left"
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        if params.seed is not None:
            torch.manual_seed(params.seed)
        sample = params.temperature > 0
        with torch.no_grad():
            out = model.generate(
                **enc,
                max_new_tokens=params.max_tokens,
                do_sample=sample,
                temperature=params.temperature if sample else None,
                top_p=params.top_p if sample else None,
                top_k=None,
                pad_token_id=tok.pad_token_id,
                output_scores=params.logprobs > 0,
                return_dict_in_generate=True,
            )
        new = out.sequences[:, enc["input_ids"].shape[1] :]
        gens = []
        for i, ids in enumerate(new):
            stop = [j for j, t in enumerate(ids.tolist()) if t in {tok.eos_token_id, tok.pad_token_id}]
            n = stop[0] if stop else len(ids)
            lps = None
            if params.logprobs > 0:
                lps = []
                for step in range(n):
                    logp = torch.log_softmax(out.scores[step][i].float(), dim=-1)
                    top = torch.topk(logp, params.logprobs)
                    tid = int(ids[step])
                    lps.append(TokenLogprob(
                        tok.decode([tid]), float(logp[tid]),
                        {tok.decode([int(t)]): float(v) for v, t in zip(top.values, top.indices)},
                    ))
            gens.append(Generation(
                text=tok.decode(ids[:n], skip_special_tokens=True).strip(),
                model=self.spec, logprobs=lps,
                prompt_tokens=int(enc["attention_mask"][i].sum()), completion_tokens=n,
            ))
        return gens


class HFCausalScorer(LMScorer):
    """Token log-probs from a causal LM, batched with right padding."""

    def __init__(self, path: str, spec: str | None = None, batch_size: int = 8):
        self.path = model_ref(path)
        self.spec = spec or f"hf:{path}"
        self.batch_size = batch_size

    def _score(self, items: Sequence[tuple[str, str]]) -> list[list[tuple[float, int, int]]]:
        import torch

        tok, model = load_causal(self.path)
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else [tok.eos_token_id]
        seqs, starts, spans = [], [], []
        for context, text in items:
            ctx = tok(context, add_special_tokens=False)["input_ids"] if context else []
            sep = " " if context and text and not context.endswith((" ", "\n")) else ""
            enc = tok(sep + text, add_special_tokens=False, return_offsets_mapping=True)
            seqs.append(bos + ctx + enc["input_ids"])
            starts.append(1 + len(ctx))
            spans.append([(max(0, a - len(sep)), max(0, b - len(sep))) for a, b in enc["offset_mapping"]])
        width = max(len(s) for s in seqs)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=model.device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=model.device)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1)
        chosen = logp.gather(2, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        return [
            [(lp, a, b) for lp, (a, b) in zip(chosen[i, starts[i] - 1 : len(s) - 1].tolist(), spans[i])]
            for i, s in enumerate(seqs)
        ]


@functools.lru_cache(maxsize=4)
def _load_seq2seq(path: str) -> tuple[Any, Any]:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    with loading(path):
        return AutoTokenizer.from_pretrained(path), AutoModelForSeq2SeqLM.from_pretrained(path).to(device()).eval()


class HFSeq2SeqEntailment(Entailment):
    """`hf-seq2seq:<id>`: TRUE-style models (e.g. google/t5_xxl_true_nli_mixture) read
    `premise: … hypothesis: …` and answer "1" or "0"; P(entail) = softmax over those two
    tokens at the first decoding step."""

    def __init__(self, path: str, batch_size: int = 16):
        self.path, self.spec, self.batch_size = model_ref(path), f"hf-seq2seq:{path}", batch_size

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        import torch

        tok, model = _load_seq2seq(self.path)
        yes, no = (tok(t, add_special_tokens=False)["input_ids"][-1] for t in ("1", "0"))
        enc = tok([f"premise: {p} hypothesis: {h}" for p, h in pairs], return_tensors="pt", padding=True, truncation=True).to(model.device)
        start = torch.full((len(pairs), 1), model.config.decoder_start_token_id, device=model.device)
        with torch.no_grad():
            logits = model(**enc, decoder_input_ids=start).logits[:, 0, :].float()
        two = torch.softmax(logits[:, [yes, no]], dim=-1)
        return two[:, 0].tolist()


@functools.lru_cache(maxsize=4)
def _load_classifier(path: str) -> tuple[Any, Any]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    with loading(path):
        return AutoTokenizer.from_pretrained(path), AutoModelForSequenceClassification.from_pretrained(path).to(device()).eval()


def nli_label_indices(id2label: dict[int, str]) -> dict[str, int]:
    """Map entailment/neutral/contradiction to class indices by NAME, never by position.

    >>> sorted(nli_label_indices({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}).items())
    [('contradiction', 0), ('entailment', 2), ('neutral', 1)]
    """
    found: dict[str, int] = {}
    for idx, name in id2label.items():
        low = name.lower()
        for key in ("entailment", "neutral", "contradiction"):
            if low.startswith(key[:6]):
                found[key] = int(idx)
    if "entailment" not in found:
        raise ValueError(f"no entailment label in id2label={id2label}")
    return found


class HFNLIEntailment(Entailment):
    """`hf-nli:<id>`: MNLI-style sequence classifiers over (premise, hypothesis)."""

    def __init__(self, path: str, batch_size: int = 16):
        self.path, self.spec, self.batch_size = model_ref(path), f"hf-nli:{path}", batch_size

    def _softmax(self, pairs: Sequence[tuple[str, str]]) -> tuple[Any, dict[str, int]]:
        import torch

        tok, model = _load_classifier(self.path)
        idx = nli_label_indices(model.config.id2label)
        enc = tok([p for p, _ in pairs], [h for _, h in pairs], return_tensors="pt", padding=True, truncation=True).to(model.device)
        with torch.no_grad():
            return torch.softmax(model(**enc).logits.float(), dim=-1), idx

    @property
    def three_way(self) -> bool:  # type: ignore[override]
        _, model = _load_classifier(self.path)
        return len(nli_label_indices(model.config.id2label)) == 3

    def _entail(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        probs, idx = self._softmax(pairs)
        return probs[:, idx["entailment"]].tolist()

    def _entail3(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        probs, idx = self._softmax(pairs)
        if len(idx) < 3:
            raise TypeError(f"{self.spec} has no neutral/contradiction classes: {idx}")
        return [(float(r[idx["entailment"]]), float(r[idx["neutral"]]), float(r[idx["contradiction"]])) for r in probs]
