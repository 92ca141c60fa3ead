"""`kalma dataset publish`: a built dataset as a folder that Hugging Face `datasets` loads and the
Hub shows, with a dataset card that says how it was built.

The folder:
- `data/test-00000-of-00001.parquet`: the entries (config `default`, split `test`), one row each,
  every field of `DatasetEntry` typed as the schema types it (questions, seed record, people,
  knowledge pool, minimum set, reference, evolution trace);
- `removed/records-00000-of-00001.parquet`: the records not built from and why (config `removed`);
- `README.md`: the card, with the Hub's YAML metadata (license, task categories, size category,
  configs, split sizes) and, in prose and tables, the build's provenance: the knowledge graph (the
  dump's file and date for a local Wikidata, else the source and the day it was queried), the
  seed, the models, the records removed by reason, the entries that failed, and `kalma dataset
  stats` beside the paper's §2.3.

Arrow has no type for a mapping with free keys: a `dict[str, X]` field (an entity's
`property_aliases`) becomes a list of `{key, value}` rows, and a `dict[str, Any]` (`meta`) JSON
text. Everything else keeps its shape. Entries are written in row groups of 1,000.
"""

from __future__ import annotations

import re
import types
import typing
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel

from kalma.errors import ConfigError
from kalma.jsonl import dumps, read_header, read_jsonl
from kalma.schema import BuildTrace, DatasetEntry, RemovedRecord

from .build import beside
from .stats import dataset_stats, stats_table

ROW_GROUP = 1_000
TASKS = ["question-answering", "text-generation"]
WRITES = ("README.md", "data", "removed")  # all a published folder holds: --overwrite replaces nothing else
# The Hub's license field takes an identifier (apache-2.0, cc-by-sa-4.0, cc0-1.0, other): lower
# case, no spaces. A license without one is `other`, described in the card.
LICENSE_ID = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


def check_license(license: str) -> None:
    if not LICENSE_ID.match(license):
        raise ConfigError(
            f"--license {license!r}: the Hub takes a license identifier (e.g. cc-by-sa-4.0, cc0-1.0, apache-2.0; lower case, no spaces), "
            "or 'other' for a license it does not list"
        )


# ---------------------------------------------------------------- pydantic -> Arrow


def arrow_type(annotation: Any) -> Any:
    """The Arrow type of a field annotated `annotation` (see the module docstring)."""
    import pyarrow as pa

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]  # Optional[X]: nullable X
        return arrow_type(inner)
    if annotation is str or origin is Literal:
        return pa.string()
    if annotation in (int, float, bool):
        return {int: pa.int64(), float: pa.float64(), bool: pa.bool_()}[annotation]
    if origin is list:
        return pa.list_(arrow_type(args[0]))
    if origin is dict:
        return pa.string() if args[1] is Any else pa.list_(pa.struct([("key", arrow_type(args[0])), ("value", arrow_type(args[1]))]))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct([(name, arrow_type(f.annotation)) for name, f in annotation.model_fields.items()])
    raise TypeError(f"no Arrow type for {annotation!r}")


def arrow_value(value: Any, annotation: Any) -> Any:
    """`value` (a field's JSON form) in the shape `arrow_type(annotation)` describes."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if value is None:
        return None
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        return arrow_value(value, inner)
    if origin is list:
        return [arrow_value(v, args[0]) for v in value]
    if origin is dict:
        if args[1] is Any:
            return dumps(value, ensure_ascii=False, sort_keys=True)
        return [{"key": k, "value": arrow_value(v, args[1])} for k, v in value.items()]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {name: arrow_value(value[name], f.annotation) for name, f in annotation.model_fields.items()}
    return value


def _write(path: Path, model: type[BaseModel], records: Iterator[BaseModel]) -> tuple[int, int]:
    """`records` as one Parquet file of `model`'s schema; returns (rows, bytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_type(model)
    schema = pa.schema([pa.field(f.name, f.type) for f in schema])
    path.parent.mkdir(parents=True, exist_ok=True)
    rows, batch = 0, []
    with pq.ParquetWriter(path, schema) as writer:
        for record in records:
            batch.append(arrow_value(record.model_dump(mode="json"), model))
            if len(batch) == ROW_GROUP:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                rows, batch = rows + len(batch), []
        if batch or not rows:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            rows += len(batch)
    return rows, path.stat().st_size


# ---------------------------------------------------------------- the card


def size_category(n: int) -> str:
    """The Hub's size bucket for `n` rows."""
    for bound, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")):
        if n < bound:
            return name
    return "10M<n<100M"


def _kg_facts(provenance: dict[str, Any]) -> list[tuple[str, str]]:
    """What the knowledge graph was, as the build recorded it."""
    spec = str(provenance.get("config", {}).get("kg", "?"))
    dump = provenance.get("kg_dump")
    if dump:
        return [
            ("knowledge graph", f"a local Wikidata (`kalma kg import`) from the dump `{Path(dump['path']).name}`"),
            ("dump date", str(dump.get("date", "?"))),
            ("dump size", f"{dump['size']:,} bytes ({dump.get('compression') or 'uncompressed'})"),
        ]
    kind = "Wikidata's public query service" if spec.split(",")[0] == "wikidata" else f"`{spec}`"
    return [("knowledge graph", kind), ("queried on", str(provenance.get("created", "?"))[:10] + " (the build's start; the source may have changed since)")]


def card(
    name: str, license: str, header: dict[str, Any], entries: int, removed: Counter[str], failed: Counter[str], stats: dict[str, Any], sizes: dict[str, Any]
) -> str:
    from huggingface_hub import DatasetCard, DatasetCardData

    prov = header.get("provenance", {})
    cfg = prov.get("config", {})
    records = prov.get("records", {})
    from kalma.languages import file_language, get_language

    lang = file_language(header)
    data = DatasetCardData(
        license=license,
        language=[lang],
        task_categories=TASKS,
        size_categories=[size_category(entries)],
        pretty_name=name,
        tags=["knowledge-graph", "wikidata", "attribution", "citation", "kalma"],
        configs=[
            {"config_name": "default", "default": True, "data_files": [{"split": "test", "path": "data/test-*.parquet"}]},
            *([{"config_name": "removed", "data_files": [{"split": "records", "path": "removed/records-*.parquet"}]}] if "removed" in sizes else []),
        ],
        dataset_info=[
            {"config_name": c, "splits": [{"name": split, "num_bytes": b, "num_examples": n}], "download_size": b, "dataset_size": b}
            for c, split, (n, b) in (("default", "test", sizes["test"]), *([("removed", "records", sizes["removed"])] if "removed" in sizes else []))
        ],
    )
    evolve = cfg.get("evolve", {})
    built: list[tuple[str, str]] = [
        ("built by", f"kalma {prov.get('kalma_version', '?')}" + (f" (commit `{prov['git_commit']}`)" if prov.get("git_commit") else "")),
        ("built on", str(prov.get("created", "?"))),
        *_kg_facts(prov),
        *_refreshed_facts(prov),
        ("LLM (annotates, extends, asks)", f"`{cfg.get('llm', '?')}`" + (f": {cfg['llm_note']}" if cfg.get("llm_note") else "")),
        ("LM scorer (coherence)", f"`{cfg.get('lm', '?')}`"),
        ("seed", f"{cfg.get('seed', '?')} (each entry's own seed is derived from it and the entry's id, and is in its `meta`)"),
        ("evolution", ", ".join(f"{k} {v}" for k, v in evolve.items()) or "?"),
        ("records read", f"{records.get('read', '?'):,}" if isinstance(records.get("read"), int) else "?"),
        ("records built from", f"{records.get('built from', '?'):,}" if isinstance(records.get("built from"), int) else "?"),
    ]
    if lang != "en":  # the language its labels and text are in, and where a localization came from (`kalma dataset localize`)
        source = prov.get("source_dataset") or {}
        built.insert(0, ("language", f"{get_language(lang).name} (`{lang}`): labels from the KG in it, questions and reference written in it"))
        if source:
            built.insert(
                1, ("localized from", f"`{Path(source.get('path', '?')).name}` ({source.get('language', '?')}, {str(source.get('digest', '?'))[:19]}…)")
            )
    if not cfg and not prov.get("source_dataset"):  # not made by `kalma build`: say so, not a table of question marks and a query date
        built = [("provenance", "not recorded: this file was not made by `kalma build` (its header holds no build configuration)")]
    lines = [
        f"# {name}",
        "",
        "Questions about pairs of people, each with the knowledge-graph triples an answer needs (its minimum set) "
        "and the one-hop knowledge pool an answering model is given: a dataset for knowledge-aware language model "
        "attribution (KaLMA), built with the KaLMA benchmark suite's `kalma build` and published with `kalma dataset publish`.",
        "",
        "```python",
        "from datasets import load_dataset",
        'entries = load_dataset("PATH_OR_HUB_ID", split="test")',
        *(['removed = load_dataset("PATH_OR_HUB_ID", "removed", split="records")'] if "removed" in sizes else []),
        "```",
        "",
        "## How it was built",
        "",
        "| | |",
        "|---|---|",
        *(f"| {k} | {v.replace('|', chr(92) + '|')} |" for k, v in built),  # a | in a spec would end the cell
        "",
        f"{entries:,} entries were written. Records not built from ({sum(removed.values()):,}"
        + (", in the `removed` config with their lines):" if "removed" in sizes else "):"),
        "",
        *([f"- {reason}: {n:,}" for reason, n in removed.most_common()] or ["- none"]),
        "",
        f"Entries attempted but not written ({sum(failed.values()):,}), by reason:",
        "",
        *([f"- {reason}: {n:,}" for reason, n in failed.most_common()] or ["- none"]),
        "",
        "## Statistics",
        "",
        "`kalma dataset stats`, beside the paper's figures for BioKaLMA:",
        "",
        stats_table(stats, name),
        "",
        "## Fields",
        "",
        "| field | what it holds |",
        "|---|---|",
        "| `id` | the entry's id: the records file's name and the record's line |",
        "| `general_question`, `specific_question` | the two questions asked of a model |",
        "| `seed` | the relation record the entry grew from (paragraph, people, relation, its file and line) |",
        "| `people` | the two people's QIDs |",
        "| `knowledge_pool` | `entities`: one graph per entity (QID, label, aliases, description, triples, "
        "`property_aliases` as `{key: PID, value: names}` rows) |",
        "| `minimum_set` | the triples an answer needs (subject, relation PID and label, value and its label) |",
        "| `reference` | the builder's final paragraph, citations stripped |",
        "| `trace` | each evolution round: candidates with their scores, the triple chosen, the status |",
        "| `meta` | JSON text: the entry's seed, models and settings |",
        "",
        "## Citation",
        "",
        "The task, the dataset's design and its metrics are those of *Towards Verifiable Generation: A Benchmark for "
        "Knowledge-aware Language Model Attribution* (Li, Cao, Pan, Ma and Sun; Findings of ACL 2024). Cite it, and the "
        "knowledge graph: Wikidata's statements are CC0.",
    ]
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines) + "\n"))


# ---------------------------------------------------------------- publish


def publish(built: str | Path, out: str | Path, license: str, name: str | None = None) -> dict[str, Any]:
    """Write the folder (see the module docstring) for the dataset `built`; returns its figures."""
    built, out = Path(built), Path(out)
    header = read_header(built)
    entries = list(read_jsonl(built, DatasetEntry, kind="dataset"))
    removed_file, trace_file = beside(built, "removed"), beside(built, "trace")
    removed = list(read_jsonl(removed_file, RemovedRecord, kind="removed_records", allow_empty=True)) if removed_file.is_file() else []
    traces = list(read_jsonl(trace_file, BuildTrace, kind="build_trace", allow_empty=True)) if trace_file.is_file() else []
    sizes = {"test": _write(out / "data" / "test-00000-of-00001.parquet", DatasetEntry, iter(entries))}
    if removed:  # no records removed: no `removed` config (an empty Parquet file is no split `datasets` loads)
        sizes["removed"] = _write(out / "removed" / "records-00000-of-00001.parquet", RemovedRecord, iter(removed))
    stats = dataset_stats(entries)
    failed = Counter(reason for t in traces if t.status == "failed" for reason in t.failures)
    text = card(name or built.stem, license, header, len(entries), Counter(r.reason for r in removed), failed, stats, sizes)
    (out / "README.md").write_text(text, encoding="utf-8")
    return {"entries": len(entries), "removed": len(removed), "failed": sum(failed.values()), "folder": str(out)}


def _refreshed_facts(provenance: dict[str, Any]) -> list[tuple[str, str]]:
    """A refreshed dataset (`kalma dataset refresh`): both KG versions, by dump date and digest, and
    what the refresh did; nothing for a dataset never refreshed."""
    done = provenance.get("refreshed")
    if not done:
        return []

    def version(v: dict[str, Any]) -> str:
        return f"`{v['spec']}`, dump {v.get('dump_date') or 'date unknown'}, digest `{v.get('digest') or 'none (a live endpoint)'}`"

    c = done.get("counts", {})
    did = f"{c.get('kept', 0)} entries kept as built, {c.get('rebuilt', 0)} rebuilt, {c.get('dropped', 0)} dropped (`{done.get('changelog', '?')}`)"
    return [
        ("refreshed for", f"{version(done['kg_version'])}; on {str(done.get('created', '?'))[:10]}"),
        ("refreshed from", version(done["from"])),
        ("refresh", did),
    ]
