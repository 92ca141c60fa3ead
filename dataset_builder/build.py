"""`kalma build`: relation records → a BioKaLMA-style dataset, resumable and seeded.

Three files, beside one another (`ds.jsonl` gives `ds.trace.jsonl` and `ds.removed.jsonl`):
- the dataset: only entries that succeeded (`kalma.schema.DatasetEntry` refuses the others);
- the trace: per entry, every LLM call (prompt, reply, backend, seed, round) and whether the
  entry was written, or why not: what a published dataset is audited by;
- the removed records: every record not built from, with its line and reason (selection, then
  disambiguation). The dataset's header summarises them.

Entry ids come from the records' file and line, and every entry's seed is derived from the
run seed and its id, so a killed run resumes with no entry lost, doubled or shifted, and the
resumed files equal uninterrupted ones. The fingerprint that decides whether an output may be
resumed covers the records, the relation table, the KG source (a file by content, an
endpoint by URL), the LLM and the LM scorer.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kalma.cache import get_cache
from kalma.classes import ANY, CLASSES, PROPERTY_ID, EntityClass, entity_class, frequent_relations
from kalma.errors import Interrupted
from kalma.jsonl import write_jsonl
from kalma.kg import KnowledgeSource, open_source
from kalma.kg.base import label_header
from kalma.kg.version import kg_version
from kalma.models import get_llm, get_scorer
from kalma.models.openai_backend import reachable_first
from kalma.progress import SettlingBar
from kalma.provenance import provenance
from kalma.resume import ResumableOutput, absolute_spec, fingerprint
from kalma.schema import BuildTrace, DatasetEntry, EntityGraph, RemovedRecord
from kalma.seeds import derive_seed

from . import WINDOW
from .disambiguate import Resolution, disambiguate, load_relation_table
from .evolve import EvolveConfig, evolution, interleave
from .freshness import record_splits, records_changed_since
from .pool import inverse_table, make_pool
from .records import DEFAULT_COLUMNS, PEOPLE, Selection, read_records, removed_note
from .selection import relation_counts


@dataclass
class BuildConfig:
    kg: str = "demo"
    llm: str = "template"
    lm: str = "smollm2"
    seed: int = 0
    evolve: EvolveConfig = field(default_factory=EvolveConfig)
    relation_table: str | None = None
    columns: dict[str, str] = field(default_factory=dict)
    classes: tuple[str, ...] = ()  # every record's ends are looked up in these (`--classes`)
    language: str = "en"  # the KG's labels and the text written (`--language`)
    label_fallback: str | None = None  # a label missing in the language taken from this one (`--label-fallback`)


def beside(out: str | Path, name: str) -> Path:
    """The file `name` that goes with the dataset `out`: `ds.jsonl` -> `ds.<name>.jsonl`."""
    out = Path(out)
    return out.with_name(f"{out.stem if out.suffix == '.jsonl' else out.name}.{name}.jsonl")


def kept(files: list[str], done: int, entries: int, window: int) -> str:
    """What an interrupted build keeps (`files`: those that stay), and how to go on: entries are
    written as their window finishes, and the calls of the unfinished ones are in the call cache
    (when it is on)."""
    calls = (
        "the rerun replays from the call cache the model calls they made"
        if get_cache().path is not None
        else "the call cache is off: the rerun makes their model calls again"
    )
    return (
        f"{done} of {entries} entries are done ({', and '.join(files) if files else 'no file is written yet'}); "
        f"the ones under way (up to {window} at once) are not, "
        f"but {calls}: run the same command again to resume"
    )


def check_against(source: KnowledgeSource, records: str | Path, selection: Selection, cfg: BuildConfig) -> None:
    """One line naming the file, line and field when a record names a property the KG does not
    know, or a class that is none or has no instances in it (`--classes` is checked first)."""
    cols = {**DEFAULT_COLUMNS, **cfg.columns}
    pids = {r.relation: r.source_line for r in reversed(selection.records) if PROPERTY_ID.fullmatch(r.relation)}
    known = source.labels(sorted(pids)) if pids else {}
    for pid, line in sorted(pids.items(), key=lambda x: x[1] or 0):
        if pid not in known:
            raise ValueError(f"{records}:{line}: {cols['relation']}: {pid} is no property of the knowledge graph {cfg.kg}")
    named = {(0, "--classes", c) for c in cfg.classes}
    named |= {(line, column, c) for (line, column), end in selection.classes.items() for c in end if c not in cfg.classes and end != PEOPLE}
    status = source.class_status(sorted({c for _, _, c in named})) if named else {}
    for line, column, c in sorted(named):
        if status[c] != "has instances":
            where = f"{records}:{line}: {column}" if line else f"{records}: {column}"
            why = (
                f"{c} is no class in the knowledge graph {cfg.kg} (nothing is an instance or a subclass of it)"
                if status[c] == "not a class"
                else f"no entity in the knowledge graph {cfg.kg} is an instance of {c} or of its subclasses"
            )
            raise ValueError(f"{where}: {why}")


def constrain(source: KnowledgeSource, selection: Selection) -> dict[str, dict[str, list[str]]]:
    """Give each end of a property-id record that names no class (and no --classes) the classes its
    property's Wikidata type constraints name: subject for person_a, value for person_b. Only
    classes with instances in the KG restrict (a constraint naming none would remove every record);
    an end left without any is looked up in any class. Returns the constraints applied, by PID."""
    open_ends = {(r.source_line or 0, r.relation) for r in selection.records if PROPERTY_ID.fullmatch(r.relation) and not all(selection.of(r))}
    found = source.type_constraints(sorted({pid for _, pid in open_ends})) if open_ends else {}
    status = source.class_status(sorted({c for ends in found.values() for cs in ends.values() for c in cs})) if found else {}
    usable = {p: {k: [c for c in cs if status[c] == "has instances"] for k, cs in ends.items()} for p, ends in found.items()}
    applied: dict[str, dict[str, list[str]]] = {}
    for line, pid in sorted(open_ends):
        for column, end in (("class_a", "subject"), ("class_b", "value")):
            if not selection.classes[(line, column)] and (classes := usable.get(pid, {}).get(end)):
                selection.classes[(line, column)] = tuple(classes)
                applied.setdefault(pid, {})[end] = classes
    return applied


def classes_of(resolved: list[Resolution], graphs: Mapping[str, EntityGraph], labels: Mapping[str, str]) -> dict[str, EntityClass]:
    """Each resolved entity's class: the one it was found in, else (any class was looked in) its
    first `instance of` the registry knows, else its first; a class outside the registry has the
    relations its entities all state alike as trivial (`frequent_relations`)."""
    found: dict[str, EntityClass] = {}
    for r in resolved:
        for q, c in ((r.qid_a, r.class_a), (r.qid_b, r.class_b)):
            g = graphs[q]  # type: ignore[index]
            if not c:
                kinds = [t for t in g.triples if t.relation == "P31"]
                known = [t for t in kinds if t.value in CLASSES] or kinds
                found[g.qid] = entity_class(known[0].value, known[0].value_label) if known else ANY
            else:
                found[g.qid] = entity_class(c, labels.get(c, ""))
    generic: dict[str, list[str]] = {}
    for q, cls in found.items():
        if cls.qid not in CLASSES:
            generic.setdefault(cls.qid, []).append(q)
    for qids in generic.values():
        trivial = found[qids[0]].with_trivial(frequent_relations(graphs[q].triples for q in qids))
        found.update({q: trivial for q in qids})
    return found


def class_report(
    classes: Mapping[str, EntityClass], selection: Selection, asked: tuple[str, ...], constrained: Mapping[str, Mapping[str, list[str]]]
) -> dict[str, object]:
    """The classes the dataset's entities are of (what its header records), and how they were asked for."""
    counts = Counter(c.qid for c in classes.values())
    named_classes = {c.qid: c for c in classes.values()}
    named = {c for end in selection.classes.values() for c in end}
    unrestricted = any(not end for end in selection.classes.values())
    said = "; ".join(f"{p} " + ", ".join(f"{k} {'|'.join(cs)}" for k, cs in ends.items()) for p, ends in constrained.items())
    how = (
        f"--classes {','.join(asked)}"
        if asked
        else f"the properties' Wikidata type constraints ({said})" + ("; any class for the ends they do not cover" if unrestricted else "")
        if said
        else "any class (property ids with no --classes and no class_a/class_b, and no type constraint in the KG: the look-up was not restricted)"
        if unrestricted
        else "per record"
        if named - {"Q5"}
        else "people (the relation table's relations link humans)"
    )
    found = {q or "unknown": {"label": named_classes[q].label, "entities": n, "person": named_classes[q].person} for q, n in counts.most_common()}
    return {"asked": how, "found": found}


def build(
    records: str | Path,
    out: str | Path,
    cfg: BuildConfig,
    progress: bool = True,
    stop_after: int | None = None,
    overwrite: bool = False,
    window: int = WINDOW,
) -> dict[str, object]:
    table = load_relation_table(cfg.relation_table)
    selection = read_records(records, cfg.columns, set(table), cfg.classes)
    splits = record_splits(records)  # records drawn with --changed-since: each entry keeps its split
    llm = get_llm(cfg.llm)
    reachable_first(llm)  # a server that is not there is said before the KG and the scorer load
    scorer = get_scorer(cfg.lm)
    reachable_first(scorer)
    began = time.perf_counter()
    source = open_source(cfg.kg, cfg.language, cfg.label_fallback)
    check_against(source, records, selection, cfg)
    constrained = constrain(source, selection)
    resolutions, status = disambiguate(selection.records, source, table, [selection.of(r) for r in selection.records])
    resolved = [r for r in resolutions if r.status == "resolved"]
    graphs = source.subgraphs(sorted({q for r in resolved for q in (r.qid_a, r.qid_b)}))  # type: ignore[misc]
    labels = source.labels(sorted({c for r in resolved for c in (r.class_a, r.class_b) if c and c not in CLASSES}))
    classes = classes_of(resolved, graphs, labels)
    pools, unlabelled = [], 0
    for r in resolved:
        pool, dropped = make_pool([graphs[r.qid_a], graphs[r.qid_b]])  # type: ignore[index]
        pools.append(pool)
        unlabelled += dropped
    inverses = inverse_table(source, {t.relation for p in pools for t in p.triples() if t.relation})
    kg_seconds = time.perf_counter() - began  # every KG question is asked above, in batches
    counts, n = relation_counts(pools)

    removed: list[RemovedRecord] = selection.removed + [
        RemovedRecord(
            source=x.record.source,
            line=x.record.source_line or 0,
            stage="disambiguation",
            reason=x.status,
            detail=f"candidates {list(x.candidates_a)} / {list(x.candidates_b)}",
            person_a=x.record.person_a,
            relation=x.record.relation,
            person_b=x.record.person_b,
        )
        for x in resolutions
        if x.status != "resolved"
    ]
    removed_file, trace_file = beside(out, "removed"), beside(out, "trace")
    removed.sort(key=lambda r: r.line)
    write_jsonl(removed_file, removed, "removed_records", provenance(records=str(records)))
    if note := removed_note(removed, len(selection.records) + len(selection.removed), removed_file.name):
        print(f"note: {note}", file=sys.stderr, flush=True)
    accounted = {
        "read": selection.report()["read"],
        "built from": len(resolved),
        "removed": dict(Counter(r.reason for r in removed)),
        "removed_file": removed_file.name,
        "unlabelled values left out of pools": unlabelled,
        "classes": class_report(classes, selection, cfg.classes, constrained),
    }
    config = {"records": str(records), **asdict(cfg), "llm_note": llm.label_note}
    if not cfg.classes:  # the fingerprint of a build without classes stays what it was before them
        del config["classes"]
    if cfg.language == "en" and not cfg.label_fallback:  # nor does an English build's, before languages
        del config["language"], config["label_fallback"]
    run = fingerprint(
        {"records": records, "relation_table": cfg.relation_table},
        {**config, "llm_identity": llm.spec, "lm_identity": scorer.spec},
        components={"kg": cfg.kg, "llm": cfg.llm, "lm": cfg.lm},
    )
    stem = Path(records).stem
    dump = getattr(source, "meta", {}).get("dump")  # a local Wikidata: the dump it was imported from
    # the paths it names whole: a refresh or an answer run from another folder opens them again
    named = {k: absolute_spec(v) for k in ("kg", "llm", "lm", "relation_table") if isinstance(v := config.get(k), str)}
    header = provenance(
        config={**config, "records": str(Path(records).resolve()), **named},
        window=window,
        records=accounted,
        trace_file=trace_file.name,
        **({"kg_dump": dump} if dump else {}),
        kg_version=kg_version(named["kg"]),
        **label_header(source),
        **records_changed_since(records),  # the older KG its `changed` split is new since
    )
    with (
        ResumableOutput(trace_file, "build_trace", BuildTrace, lambda t: t.entry_id, run, header, overwrite=overwrite) as traces,
        ResumableOutput(out, "dataset", DatasetEntry, lambda e: e.id, run, header, overwrite=overwrite) as output,
    ):
        # Only why entries failed is kept: a whole trace (every LLM call) per entry held 4.3 GB at
        # 100,000 records.
        failures = {t.entry_id: t.failures for t in traces.existing if t.status == "failed"}
        finished = set(output.done) | set(failures)
        todo = [(r, p) for r, p in zip(resolved, pools) if f"{stem}-{r.record.source_line}" not in finished]
        if stop_after is not None:
            todo = todo[:stop_after]
        written, began = 0, time.perf_counter()
        entries = (
            evolution(
                eid,
                r.record,
                (r.qid_a, r.qid_b),  # type: ignore[arg-type]
                pool,
                llm,
                counts,
                n,
                cfg.evolve,
                derive_seed(cfg.seed, "build", eid),
                inverses,
                scorer.spec,
                (classes[r.qid_a], classes[r.qid_b]),  # type: ignore[index]
                language=cfg.language,
            )
            for r, pool in todo
            for eid in [f"{stem}-{r.record.source_line}"]
        )
        # Entries of a window finish together: an estimate from the first is hours off, so none is
        # shown until a window has finished; the scorer's calls show the rounds moving until then.
        settles = min(window, len(todo))

        def step(calls: int, held: int, texts: int) -> None:
            bar.set_postfix_str(f"scorer call {calls}: {texts} texts of {held} entries", refresh=True)

        bar = SettlingBar(settles, f"{settles} entries", total=len(todo), desc=f"build ({cfg.llm})", unit="entry", disable=not progress)
        try:
            with closing(bar):  # closed before the interruption is said, never glued to its line
                for outcome in interleave(entries, scorer, window, step):
                    bar.update()  # counted here, not by iterating the bar: tqdm's count lags its iterator, and the rounds' line shows it
                    eid = outcome.trace.entry_id
                    if eid not in traces.done:  # a kill between the two writes redoes the entry, not its trace row
                        traces.write(outcome.trace)
                        if outcome.trace.status == "failed":
                            failures[eid] = outcome.trace.failures
                    if outcome.entry is not None:
                        if outcome.entry.seed and (split := splits.get(outcome.entry.seed.source_line or 0)):
                            outcome.entry.meta["split"] = split
                        output.write(outcome.entry)
                        written += 1
        except KeyboardInterrupt:
            stays = ((str(out), output.kept), (f"{trace_file.name} for the failed", traces.kept))  # a file with a header alone is removed
            files = [name for name, kept_ in stays if kept_]
            raise Interrupted(f"interrupted: {kept(files, len(set(output.done) | set(failures)), len(resolved), window)}") from None
    failed = Counter(reason for found in failures.values() for reason in found)
    return {
        "records": accounted,
        "disambiguation": dict(status),
        "entries": {"written": written, "already_there": len(output.done) - written, "failed": dict(failed), "attempted": len(todo)},
        "files": {"dataset": str(out), "trace": str(trace_file), "removed": str(removed_file)},
        "seconds": {"knowledge graph": round(kg_seconds, 2), "evolution": round(time.perf_counter() - began, 2)},
    }
