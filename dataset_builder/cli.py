"""`kalma dataset …`: the demo dataset, the authors' release importer, statistics, publishing."""

from __future__ import annotations

from typing import Any

import click

from kalma.cli import NO_CACHE, OVERWRITE, new_output
from kalma.jsonl import dumps
from kalma.languages import language_options

from . import WINDOW


@click.group("dataset")
def dataset() -> None:
    """Datasets: the bundled demo, the authors' release, statistics, and publishing for the Hugging Face Hub."""


@dataset.command("demo")
@click.option("--kg", default="demo", show_default=True)
@click.option("-o", "--output", default="runs/demo-dataset.jsonl", show_default=True, type=click.Path(dir_okay=False))
@OVERWRITE
def demo(kg: str, output: str, overwrite: bool) -> None:
    """Write the hand-written demo questions about the paper's people as a dataset."""
    from kalma.jsonl import write_jsonl
    from kalma.kg import open_source
    from kalma.kg.version import kg_version
    from kalma.provenance import provenance
    from kalma.resume import absolute_spec

    from .demo import demo_entries

    new_output(output, overwrite)
    whole = absolute_spec(kg)
    made = provenance(source="kalma demo questions", kg=whole, kg_version=kg_version(whole))
    n = write_jsonl(output, demo_entries(open_source(kg)), "dataset", made)
    click.echo(f"wrote {n} entries to {output}")


@dataset.command("import-biokalma")
@click.argument("release_file", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--specific", "specific_option", hidden=True, type=click.Path(exists=True, dir_okay=False), help="RELEASE_FILE's older name.")
@click.option(
    "--general", type=click.Path(exists=True, dir_okay=False), help="simple_question_graph.json (index-aligned); without it, entries have no general question"
)
@click.option("-o", "--output", default="runs/biokalma/dataset.jsonl", show_default=True, type=click.Path(dir_okay=False))
@OVERWRITE
def import_biokalma(release_file: str | None, specific_option: str | None, general: str | None, output: str, overwrite: bool) -> None:
    """Convert the authors' release (RELEASE_FILE: complex_question_graph.json, as `kalma kg
    import-biokalma` takes it) into a dataset (no minimum sets: precision/recall unavailable).
    The default output is under runs/, which git ignores: release data never enters a commit."""
    from kalma.biokalma import release_entries
    from kalma.jsonl import write_jsonl
    from kalma.provenance import provenance

    specific = release_file if release_file is not None else specific_option
    if specific is None or (release_file is not None and specific_option is not None):
        raise click.UsageError("give the release's complex_question_graph.json once: kalma dataset import-biokalma FILE [--general simple_question_graph.json]")
    new_output(output, overwrite)
    n = write_jsonl(output, release_entries(specific, general), "dataset", provenance(source="biokalma release", specific=specific, general=general))
    click.echo(f"wrote {n} entries to {output}")


@dataset.command("stats")
@click.argument("dataset_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON (this dataset's figures, the paper's, and the relation counts).")
def stats(dataset_file: str, as_json: bool) -> None:
    """The paper's §2.3 figures (entries, knowledge per minimum set, countries, cities, occupations,
    era) for this dataset, beside the paper's own for BioKaLMA; then the figures per class of entity."""
    from pathlib import Path

    from kalma.jsonl import read_jsonl
    from kalma.schema import DatasetEntry

    from .stats import PAPER, class_table, dataset_stats, stats_table

    figures = dataset_stats(list(read_jsonl(dataset_file, DatasetEntry, kind="dataset")))
    if as_json:
        click.echo(dumps({"dataset": figures, "paper": PAPER}, indent=2, ensure_ascii=False))
        return
    click.echo(stats_table(figures, Path(dataset_file).name))
    top = ", ".join(f"{k} {v}" for k, v in list(figures["minimum_set_relations"].items())[:8])
    if top:
        click.echo(f"\nmost frequent relations in minimum sets: {top}")
    if figures["classes"]:
        click.echo(f"\nper class of entity:\n{class_table(figures['classes'])}")


@dataset.command("publish")
@click.argument("built", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="The folder to write (Parquet, and README.md as the dataset card).")
@click.option(
    "--license",
    "license_",
    required=True,
    help="The dataset's license as the Hub names it (cc-by-sa-4.0 when paragraphs come from Wikipedia; cc0-1.0 for Wikidata's statements alone).",
)
@click.option("--name", default=None, help="The dataset's name in its card (default: the file's name).")
@OVERWRITE
def publish_cmd(built: str, output: str, license_: str, name: str | None, overwrite: bool) -> None:
    """Write BUILT (a dataset from `kalma build`, with its .removed and .trace files beside it) as a
    folder that `datasets.load_dataset(FOLDER)` loads and the Hugging Face Hub shows: Parquet, and
    a dataset card saying how it was built (the KG or dump, seeds, models, removals, statistics)."""
    from kalma.folders import replacing

    from .publish import WRITES, check_license, publish

    check_license(license_)
    with replacing(output, overwrite, WRITES, "kalma dataset publish") as tmp:
        done = publish(built, tmp, license_, name)
    click.echo(f"wrote {output}: {done['entries']:,} entries, {done['removed']:,} removed records, {done['failed']:,} entries not written; card in README.md")


@click.group("records")
def records() -> None:
    """Relation records for `kalma build`."""


@records.command("from-kg")
@click.option("--kg", required=True, help="Knowledge source spec (a local Wikidata: wikidata-local:STORE).")
@click.option("--classes", default="", help="Wikidata classes both ends of a pair are instances of, subclasses included (Q43229,Q515).")
@click.option(
    "--pair",
    "class_pair",
    multiple=True,
    metavar="A:B",
    help="Draw only links between an entity of class A and one of class B, either way round (Q8261:Q5); repeatable; --classes defaults to their ends.",
)
@click.option("--properties", default="", help="Properties that link the pairs (P159,P190); default: the classes' own (kalma.classes).")
@click.option("-n", "count", default=100, show_default=True, type=click.IntRange(min=1), help="Records to draw.")
@click.option("--seed", default=0, show_default=True)
@click.option("--llm", default="template", show_default=True, help="LLM that writes each seed paragraph from the pair's triples.")
@language_options
@click.option("--changed-since", "changed_since", default=None, help="An older KG: draw only pairs whose link is new or changed since it (split `changed`).")
@click.option(
    "--unchanged", default=0, show_default=True, type=click.IntRange(min=0), help="With --changed-since: also draw this many links it held (split `unchanged`)."
)
@OVERWRITE
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="records.jsonl")
def from_kg(
    kg: str,
    classes: str,
    class_pair: tuple[str, ...],
    properties: str,
    count: int,
    seed: int,
    llm: str,
    language: str,
    label_fallback: str | None,
    changed_since: str | None,
    unchanged: int,
    overwrite: bool,
    output: str,
) -> None:
    """Draw N linked pairs of the given classes from the KG (seeded, without repeats, spread over the
    properties), each with a seed paragraph written from its triples: records `kalma build` reads."""
    from kalma.classes import PROPERTY_ID
    from kalma.jsonl import write_jsonl
    from kalma.kg import open_source
    from kalma.kg.base import label_header
    from kalma.models import get_llm
    from kalma.provenance import provenance

    from .from_kg import absent_classes, check_classes, default_properties, pair_counts, records_from_kg

    asked = pair_list(class_pair)
    wanted = class_list(classes, "--classes") or tuple(dict.fromkeys(c for p in asked for c in p))
    if not wanted:
        raise click.UsageError("name the classes to draw from: --classes Q43229,Q515, or --pair Q8261:Q5")
    pids = tuple(dict.fromkeys(p.strip().upper() for p in properties.split(",") if p.strip()))
    bad = [p for p in pids if not PROPERTY_ID.fullmatch(p)]
    if bad:
        raise click.BadParameter(f"{bad[0]!r} is not a Wikidata property id (P and digits)", param_hint="--properties")
    new_output(output, overwrite)
    source, model = open_source(kg, language, label_fallback), get_llm(llm)
    if not pids:  # the classes' own properties, those the KG has
        known = source.labels(default_properties(wanted))
        pids = tuple(p for p in default_properties(wanted) if p in known)
    check_classes(source, wanted, pids)
    missing = [c for p in asked for c in p if c not in wanted]
    if missing:
        raise click.BadParameter(f"{missing[0]} is not among --classes {','.join(wanted)}", param_hint="--pair")
    if unchanged and not changed_since:
        raise click.BadParameter("draws the control split of --changed-since: give --changed-since OLD", param_hint="--unchanged")
    fresh = changed_since_header(changed_since, unchanged) if changed_since else {}
    if changed_since:
        from .from_kg import fresh_records

        drawn: list[Any] = fresh_records(source, open_source(changed_since), wanted, pids, count, unchanged, seed, model, asked, language)
    else:
        drawn = records_from_kg(source, wanted, pids, count, seed, model, asked, language=language)
    pairs = {"pairs": [f"{a}:{b}" for a, b in asked]} if asked else {}
    header = provenance(
        kg=kg,
        classes=list(wanted),
        **pairs,
        properties=list(pids),
        n=count,
        seed=seed,
        llm=model.spec,
        llm_note=model.label_note,
        **label_header(source),
        **fresh,
    )
    write_jsonl(output, drawn, "records", header)
    spread = ", ".join(f"{p} {sum(r.relation == p for r in drawn)}" for p in pids)
    click.echo(f"wrote {len(drawn)} records to {output} ({spread}){'' if len(drawn) == count else '; the KG holds no more pairs of these classes'}")
    click.echo("by class pair (class_a:class_b): " + ", ".join(f"{k} {n}" for k, n in pair_counts(drawn, wanted, asked).items()))
    if absent := absent_classes(drawn, wanted):
        names = source.labels(absent)
        said = ", ".join(f"{c} ({names[c]})" if c in names else c for c in absent)
        others = [c for c in wanted if c not in absent] or list(wanted)
        click.echo(
            f"warning: no record drawn has {said} at either end: ask for its links with --pair {absent[0]}:{others[0]}, "
            f"and name the properties that link them with --properties (these were {','.join(pids)})",
            err=True,
        )


def pair_list(given: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """`--pair Q8261:Q5` (repeated) as (class, class) tuples; anything else is a usage error naming the option."""
    out = []
    for text in given:
        a, colon, b = text.partition(":")
        ends = class_list(a, "--pair") + class_list(b, "--pair")
        if not colon or len(ends) != 2:
            raise click.BadParameter(f"{text!r}: give two class ids as A:B (Q8261:Q5)", param_hint="--pair")
        out.append((ends[0], ends[1]))
    return tuple(dict.fromkeys(out))


def class_list(text: str, option: str) -> tuple[str, ...]:
    """`Q43229,Q515` as a tuple of class ids; anything else is a usage error naming the option."""
    from kalma.classes import CLASS_ID

    found = tuple(dict.fromkeys(c.strip().upper() for c in text.split(",") if c.strip()))
    bad = [c for c in found if not CLASS_ID.fullmatch(c)]
    if bad:
        raise click.BadParameter(f"{bad[0]!r} is not a Wikidata class id (Q and digits)", param_hint=option)
    return found


@click.command("build")
@click.option("--records", required=True, type=click.Path(exists=True, dir_okay=False), help="Relation records, CSV or JSONL.")
@click.option("--kg", default="demo", show_default=True, help="Knowledge source spec.")
@click.option("--llm", default="template", show_default=True, help="LLM that annotates, extends and asks.")
@click.option("--lm", default="smollm2", show_default=True, help="LM scorer for the coherence term.")
@click.option("--rounds", default=5, show_default=True, type=click.IntRange(min=0), help="Rounds of evolution after the first annotation.")
@click.option("--alpha", default=0.5, show_default=True, type=click.FloatRange(0.0, 1.0), help="Weight of specificity against coherence.")
@click.option("--attempts", default=2, show_default=True, type=click.IntRange(min=1), help="Tries per round before it is skipped.")
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--window",
    default=WINDOW,
    show_default=True,
    type=click.IntRange(min=1),
    help="Entries evolved at once, their candidates scored in one call (1 evolves one at a time).",
)
@click.option("--relations", "relation_table", type=click.Path(exists=True, dir_okay=False), help="JSON {relation: PID} added to the default table.")
@click.option(
    "--classes",
    default="",
    help="Wikidata classes both ends of every record are looked up in, subclasses included (Q43229,Q515); "
    "by default people for the relation table's relations; for a property id, the classes its Wikidata type constraints name "
    "where the KG holds them (the query service does; a truthy import does not), else any class (a record's class_a/class_b wins).",
)
@click.option("--columns", default="", help="Column names, e.g. paragraph=text,person_a=subj,relation=rel,person_b=obj.")
@language_options
@NO_CACHE
@click.option("--overwrite", is_flag=True, help="Start over when OUTPUT exists (by default it is resumed, if made from the same inputs).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="dataset.jsonl (resumed if it exists)")
def build_cmd(
    records: str,
    kg: str,
    llm: str,
    lm: str,
    rounds: int,
    alpha: float,
    attempts: int,
    seed: int,
    window: int,
    relation_table: str | None,
    classes: str,
    columns: str,
    language: str,
    label_fallback: str | None,
    overwrite: bool,
    output: str,
) -> None:
    """Build a BioKaLMA-style dataset from relation records (paper §2.2)."""

    from .build import BuildConfig, build
    from .evolve import EvolveConfig
    from .records import DEFAULT_COLUMNS

    cols: dict[str, str] = {}
    for kv in filter(None, (p.strip() for p in columns.split(","))):
        key, eq, name = kv.partition("=")
        if not eq or not name.strip() or key.strip() not in DEFAULT_COLUMNS:
            raise click.BadParameter(f"{kv!r}: give FIELD=COLUMN, FIELD one of {', '.join(DEFAULT_COLUMNS)}", param_hint="--columns")
        cols[key.strip()] = name.strip()
    cfg = BuildConfig(
        kg=kg,
        llm=llm,
        lm=lm,
        seed=seed,
        relation_table=relation_table,
        columns=cols,
        classes=class_list(classes, "--classes"),
        evolve=EvolveConfig(rounds=rounds, alpha=alpha, attempts=attempts),
        language=language,
        label_fallback=label_fallback,
    )
    report = build(records, output, cfg, overwrite=overwrite, window=window)
    click.echo(dumps(report, indent=2, ensure_ascii=False))


# `kalma dataset check` and `refresh` read the same diff the same way
DIFF = click.option(
    "--diff",
    "diff_path",
    default=None,
    type=click.Path(exists=True),
    help="The `kalma kg diff` from the dataset's KG to --kg: only the entries naming what it changed are asked about (refused unless its two KGs are those).",
)


@dataset.command("check")
@click.argument("dataset_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--kg", required=True, help="The newer knowledge source to check the entries against (wikidata-local:STORE, a snapshot, an endpoint).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the KG versions, the summary, every entry with its findings.")
@DIFF
def check_cmd(dataset_file: str, kg: str, as_json: bool, diff_path: str | None) -> None:
    """Whether each entry still holds in KG: every fact of its minimum set and every entity it names
    (unchanged, value changed, removed, merged, deleted, label changed). A table per stale or broken
    entry and a summary; exit 1 when any entry is stale or broken (docs/time.md gives the rule)."""
    from kalma.kg.version import kg_version

    from .freshness import check_entries, check_json, check_languages, check_text, matching_diff, read_dataset

    ds = read_dataset(dataset_file)
    new = kg_version(kg)
    check_languages(ds.built_on(), new, dataset_file)
    changes = matching_diff(diff_path, ds.built_on(), new) if diff_path else None
    checks = check_entries(ds.entries, ds.lines, ds.open_kg(kg), changes)
    click.echo(check_json(ds, new, checks) if as_json else check_text(ds, new, checks))
    if any(c.status != "valid" for c in checks):
        raise SystemExit(1)


@dataset.command("refresh")
@click.argument("dataset_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--kg", required=True, help="The newer knowledge source to make the dataset current for.")
@click.option("--old-kg", default=None, help="The KG the dataset was built on, for a dataset whose header names none (made before kalma recorded it).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The refreshed dataset (its changelog is written beside it).")
@DIFF
@NO_CACHE
@OVERWRITE
def refresh_cmd(dataset_file: str, kg: str, old_kg: str | None, output: str, overwrite: bool, diff_path: str | None) -> None:
    """Keep every still-valid entry byte for byte, rebuild the stale ones with the dataset's own seed
    and settings (same ids), drop the broken ones with their reasons; a changelog beside OUTPUT, and
    the header records both KG versions. A second refresh against the same KG changes nothing."""
    from .build import beside
    from .freshness import read_dataset, refresh

    new_output(output, overwrite)
    new_output(str(beside(output, "changelog")), overwrite)
    done = refresh(read_dataset(dataset_file), kg, output, old_kg, diff=diff_path)
    c = done["counts"]
    if c["dropped"] and not c["kept"] + c["rebuilt"]:  # more likely another KG than a world where all of it changed
        click.echo(
            f"note: every entry was dropped: is {kg} a later version of the KG {dataset_file} was built on? (the changelog says why each went)", err=True
        )
    click.echo(f"wrote {output}: {c['kept']} kept, {c['rebuilt']} rebuilt, {c['dropped']} dropped; changelog {done['changelog']}")


@dataset.command("localize")
@click.argument("dataset_file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--kg", required=True, help="Knowledge source holding labels in the language (a local Wikidata imported with --languages, a snapshot, an endpoint)."
)
@click.option("--llm", default="template", show_default=True, help="LLM that writes the reference and the questions in the language.")
@language_options
@OVERWRITE
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The localized dataset (.jsonl).")
def localize_cmd(dataset_file: str, kg: str, llm: str, language: str, label_fallback: str | None, overwrite: bool, output: str) -> None:
    """Render DATASET_FILE in --language: the same entry ids and minimum sets (the same QIDs and
    PIDs), the knowledge relabelled from the KG in the language, the reference and questions written
    in it. An entry a label is missing for is left out and listed on stderr, one line each."""
    import os
    from pathlib import Path

    from kalma.errors import ConfigError
    from kalma.jsonl import read_header, read_jsonl, write_jsonl
    from kalma.kg import open_source
    from kalma.kg.base import label_header
    from kalma.kg.version import kg_version
    from kalma.languages import file_language
    from kalma.models import get_llm
    from kalma.provenance import provenance
    from kalma.resume import absolute_spec, path_digest
    from kalma.schema import DatasetEntry

    from .localize import localize

    new_output(output, overwrite)
    header = read_header(dataset_file, "dataset")
    was = file_language(header)
    if was == language:
        raise ConfigError(f"{dataset_file}: the dataset is already in {language} (its header's language); give another --language")
    entries = list(read_jsonl(dataset_file, DatasetEntry, kind="dataset"))
    source, model = open_source(kg, language, label_fallback), get_llm(llm)
    done = localize(entries, source, model)
    for gone in done.left_out:
        click.echo(f"left out {gone['id']}: {gone['reason']}", err=True)
    if not done.entries:
        raise ConfigError(f"{dataset_file}: no entry could be rendered in {language} from {kg} ({len(done.left_out)} left out, listed above): nothing written")
    whole = absolute_spec(kg)
    made = provenance(  # paths whole: the dataset is checked, refreshed and compared from other folders
        source_dataset={"path": str(Path(dataset_file).resolve()), "digest": path_digest(dataset_file), "language": was},
        kg=whole,
        kg_version=kg_version(whole),
        llm=model.spec,
        localization=done.report(),
        **label_header(source),
    )
    tmp = Path(f"{output}.tmp")
    write_jsonl(tmp, done.entries, "dataset", made)
    os.replace(tmp, output)  # whole or not at all
    click.echo(f"wrote {len(done.entries)} entries in {language} to {output}; {len(done.left_out)} left out (listed on stderr)")


def changed_since_header(old: str, unchanged: int) -> dict[str, Any]:
    """What a records file drawn with --changed-since records of it: the older KG's version, and the splits."""
    from kalma.kg.version import kg_version
    from kalma.resume import absolute_spec

    return {"changed_since": kg_version(absolute_spec(old)), "splits": {"changed": "links new or changed since changed_since", "unchanged": unchanged}}
