"""A dataset against a newer KG: which entries still hold (`kalma dataset check`), and the dataset
made current (`kalma dataset refresh`).

An entry is checked through the knowledge-source protocol, so against any KG: each fact of its
minimum set, and each entity it names (its `people`, the minimum set's subjects and item values).

| finding | when |
|---|---|
| `value changed` | NEW lacks the fact, and holds for its subject and property a value the entry's knowledge pool (the old KG's) did not |
| `removed` | NEW lacks the fact and holds no new value for its subject and property: nothing replaces it |
| `merged` | NEW does not know the entity, and redirects it to another (Wikidata's merged items): its id and label |
| `deleted` | NEW does not know the entity (no label, no claim) and redirects it nowhere |
| `label changed` | an entity's label (or a fact's property label) in NEW is not the one the entry records |

An entry is **valid** with no finding; **stale** when its findings are value and label changes
only (its facts have successors in NEW: the builder can make it again); **broken** when an entity
is merged or deleted or a fact removed (what it asks about is gone). The rest of an entry (its
knowledge pool beyond the minimum set, its paragraph) is not checked: the questions are answered
from the minimum set.

`refresh` keeps every valid entry byte for byte, rebuilds every stale one with the builder (the
dataset's recorded seed and settings, the entry's own record and id, the names NEW gives its
entities), drops every broken one, and writes the changelog beside its output.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kalma.errors import ConfigError, Interrupted
from kalma.jsonl import dumps, read_header, read_jsonl
from kalma.kg.base import KnowledgeSource
from kalma.kg.diff import Diff
from kalma.schema import QID_RE, DatasetEntry, Triple

BROKEN = ("merged", "deleted", "removed")  # what leaves an entry broken; any other finding leaves it stale
SPLITS = ("changed", "unchanged")  # a fresh entry's split (`records from-kg --changed-since`)


@dataclass
class Finding:
    """One thing NEW says otherwise than the entry: about an entity (`pid` None) or a fact."""

    kind: str  # value changed | removed | merged | deleted | label changed
    entity: str
    pid: str | None = None
    old: str = ""
    new: str = ""
    new_label: str = ""  # a merged entity's: the label NEW gives the item it went into


@dataclass
class EntryCheck:
    id: str
    line: int  # the entry's line in the dataset file
    status: str  # valid | stale | broken
    facts: int  # facts of its minimum set checked
    findings: list[Finding] = field(default_factory=list)


def status_of(findings: Sequence[Finding]) -> str:
    """The rule of the module docstring: broken before stale before valid."""
    if any(f.kind in BROKEN for f in findings):
        return "broken"
    return "stale" if findings else "valid"


def _named(entry: DatasetEntry) -> dict[str, str]:
    """{entity: the label the entry records for it}: its people (their pool graphs' labels), the
    minimum set's subjects and item values, in that order."""
    out: dict[str, str] = {}
    pool = {g.qid: g.label for g in entry.knowledge_pool.entities}
    for q in entry.people:
        out.setdefault(q, pool.get(q, q))
    for t in entry.minimum_set or []:
        out.setdefault(t.subject, t.subject_label)
        if t.value_type == "item" and QID_RE.match(t.value):
            out.setdefault(t.value, t.value_label)
    return out


def check_entries(entries: Sequence[DatasetEntry], lines: Sequence[int], source: KnowledgeSource, diff: Diff | None = None) -> list[EntryCheck]:
    """Each entry checked against `source` (see the module docstring), in a few batched questions.
    Given the `diff` from the dataset's KG to `source` (`matching_diff`), only the entries naming
    an id the diff names are asked about: the others hold in NEW as they held in OLD."""
    if diff is not None:
        touched = {c["subject"] for c in diff}
        asked = [i for i, e in enumerate(entries) if touched & {*_named(e), *(t.relation for t in e.minimum_set or [])}]
        found = dict(zip(asked, check_entries([entries[i] for i in asked], [lines[i] for i in asked], source))) if asked else {}
        return [found.get(i) or EntryCheck(e.id, line, "valid", len(e.minimum_set or [])) for i, (e, line) in enumerate(zip(entries, lines))]
    named = [_named(e) for e in entries]
    subjects = sorted({q for e in entries for q in e.people} | {t.subject for e in entries for t in e.minimum_set or []})
    graphs = source.subgraphs(subjects)
    values = sorted({q for n in named for q in n} - set(graphs))
    labels = {**source.labels(values), **{q: g.label for q, g in graphs.items()}}
    gone = sorted({q for n in named for q in n} - set(labels))
    moved = source.redirects(gone) if gone else {}
    into = source.labels(sorted(set(moved.values()))) if moved else {}
    out = []
    for entry, line, names in zip(entries, lines, named):
        findings = [f for q, label in names.items() if (f := _entity(q, label, labels, moved, into)) is not None]
        for t in entry.minimum_set or []:
            if t.subject in labels:
                findings += _fact(t, entry, graphs[t.subject].triples if t.subject in graphs else [])
        out.append(EntryCheck(entry.id, line, status_of(findings), len(entry.minimum_set or []), findings))
    return out


def _entity(q: str, label: str, labels: Mapping[str, str], moved: Mapping[str, str], into: Mapping[str, str]) -> Finding | None:
    """What NEW says of one entity an entry names: nothing when it knows it by the recorded label."""
    if q in labels:
        return None if labels[q] == label else Finding("label changed", q, old=label, new=labels[q])
    if q in moved:
        return Finding("merged", q, old=label, new=moved[q], new_label=into.get(moved[q], ""))
    return Finding("deleted", q, old=label)


def _fact(t: Triple, entry: DatasetEntry, now: Iterable[Triple]) -> list[Finding]:
    """What NEW says of one fact whose subject it knows: nothing when it holds as recorded."""
    same = {x.value: x for x in now if x.relation == t.relation}
    if t.value in same:
        held = same[t.value]
        return [] if held.relation_label == t.relation_label else [Finding("label changed", t.relation, old=t.relation_label, new=held.relation_label)]
    before = {x.value for x in entry.knowledge_pool.triples() if x.subject == t.subject and x.relation == t.relation} | {t.value}
    successors = [x.value_label for v, x in sorted(same.items()) if v not in before]
    if successors:
        return [Finding("value changed", t.subject, t.relation, t.value_label, ", ".join(successors))]
    return [Finding("removed", t.subject, t.relation, t.value_label)]


# ------------------------------------------------------------------ reading a dataset


@dataclass
class Dataset:
    """A dataset file as read for a check or a refresh: its header, entries, and each entry's raw line."""

    path: Path
    header: dict[str, Any]
    entries: list[DatasetEntry]
    lines: list[int]
    raw: list[bytes]  # the file's lines as written, newline included

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.header.get("provenance", {}))

    def built_on(self, old_kg: str | None = None) -> dict[str, Any] | None:
        """The version of the KG the dataset holds true for: the newest refresh's, else its build's
        (its header's `kg_version`), else `old_kg`'s (a dataset made before kalma recorded it)."""
        from kalma.kg.version import dataset_kg_version, kg_version

        return kg_version(old_kg) if old_kg else dataset_kg_version(self.header)

    def open_kg(self, spec: str) -> KnowledgeSource:
        """`spec` opened in the dataset's language, with the fallback its labels were taken from
        (a localized dataset's labels are compared with labels in its own language)."""
        from kalma.kg import open_source
        from kalma.languages import check_tag, file_language

        language = check_tag(file_language(self.header), f"{self.path}:1: field 'language'")  # the file's mistake: there is no --language
        return open_source(spec, language, self.provenance.get("label_fallback"))


def read_dataset(path: str | Path) -> Dataset:
    path = Path(path)
    found = read_jsonl(path, DatasetEntry, kind="dataset")
    return Dataset(path, read_header(path, "dataset"), found.records, found.lines, path.read_bytes().splitlines(keepends=True))


def check_languages(built: Mapping[str, Any] | None, new: Mapping[str, Any], where: str) -> None:
    """The dataset's labels are compared with NEW's: NEW must hold the language they are in."""
    if built and not set(built.get("languages", ["en"])) & set(new.get("languages", ["en"])):
        raise ConfigError(
            f"{where}: the dataset's labels are in {', '.join(built['languages'])} and {new['spec']} holds {', '.join(new['languages'])}: "
            "give a KG of the dataset's language"
        )


def matching_diff(path: str | Path, built: dict[str, Any] | None, new: dict[str, Any]) -> Diff:
    """The diff at `path` (`kalma kg diff`), refused in one line unless its OLD is the KG the
    dataset holds true for and its NEW the KG checked against (by digest)."""
    from kalma.kg.diff import read_diff
    from kalma.kg.version import describe, same_kg

    found = read_diff(path)
    for role, theirs, ours, what in (("OLD", found.meta["old"], built, "the dataset is built on"), ("NEW", found.meta["new"], new, "--kg is")):
        if not same_kg(theirs, ours):
            raise ConfigError(
                f"{path}: a diff whose {role} is {describe(theirs)}, but {what} {describe(ours) if ours else 'a KG its header does not name'}: "
                "give the diff `kalma kg diff` wrote between those two KGs, or no --diff"
            )
    return found


def summary(checks: Sequence[EntryCheck]) -> dict[str, int]:
    return {"entries": len(checks), **{s: sum(c.status == s for c in checks) for s in ("valid", "stale", "broken")}}


def check_json(ds: Dataset, new: Mapping[str, Any], checks: Sequence[EntryCheck]) -> str:
    """The check for machines: the versions, the summary, and every entry with its findings."""
    return dumps({"dataset": str(ds.path), "built_on": ds.built_on(), "kg": new, "summary": summary(checks), "entries": [asdict(c) for c in checks]}, indent=1)


def check_text(ds: Dataset, new: Mapping[str, Any], checks: Sequence[EntryCheck]) -> str:
    """The check for people: a table per stale or broken entry, then the summary."""
    from kalma.kg.version import describe

    built, refreshed = ds.built_on(), ds.provenance.get("refreshed")
    # a refreshed dataset holds for the KG it was refreshed for, not the one it was first built on
    said = f"refreshed for {describe(built)} from {describe(refreshed['from'])}" if refreshed and built else f"built on {describe(built)}" if built else ""
    out = [f"{ds.path}: {said or 'built on a KG its header does not name'}; checked against {describe(dict(new))}", ""]
    for c in checks:
        if c.status == "valid":
            continue
        out += [f"{c.id} (line {c.line}): {c.status}", "| finding | entity | property | old | new |", "|---|---|---|---|---|"]
        out += [
            f"| {f.kind} | {f.entity} | {f.pid or ''} | {_cell(f.old)} | {_cell(f.new)}{_cell(f' ({f.new_label})' if f.new_label else '')} |"
            for f in c.findings
        ]
        out.append("")
    s = summary(checks)
    out.append(f"{s['entries']} entries: {s['valid']} fully valid, {s['stale']} stale (rebuildable: `kalma dataset refresh`), {s['broken']} broken")
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# ------------------------------------------------------------------ refresh


def refresh(ds: Dataset, new_spec: str, out: str | Path, old_kg: str | None = None, progress: bool = False, diff: str | Path | None = None) -> dict[str, Any]:
    """Write `out` from `ds` made current for `new_spec` (see the module docstring): returns the
    changelog's counts. A dataset already current for NEW (everything valid, and its recorded KG
    NEW itself) is written unchanged, byte for byte. `diff`: as `check_entries` reads it."""
    from kalma.kg.version import kg_version, same_kg
    from kalma.provenance import provenance
    from kalma.resume import absolute_spec, path_digest

    from .build import beside

    out = Path(out)
    built = ds.built_on(old_kg)
    if built is None:
        raise ConfigError(
            f"{ds.path}: its header names no KG version (a dataset made before kalma recorded one): "
            "give the KG it was built on with --old-kg SPEC (the spec it was built with, e.g. wikidata-local:STORE)"
        )
    new = kg_version(absolute_spec(new_spec))  # recorded whole: the refreshed dataset is answered from it, from any folder
    check_languages(built, new, str(ds.path))
    changes = matching_diff(diff, built, new) if diff is not None else None
    # which diff told the check what changed: the output says how it was made
    used = {"diff": {"path": str(Path(diff).resolve()), "digest": path_digest(diff)}} if diff is not None else {}
    try:
        checks = check_entries(ds.entries, ds.lines, ds.open_kg(new_spec), changes)
        stale = [e for e, c in zip(ds.entries, checks) if c.status == "stale"]
        config = ds.provenance.get("config")
        config = config if isinstance(config, dict) else {}
        if stale and "seed" not in config:  # what is current needs no settings to be kept
            source = ds.provenance.get("source_dataset")
            again = f": refresh {source['path']}, which it was localized from, and localize that again" if isinstance(source, dict) else ""
            raise ConfigError(
                f"{ds.path}:1: field 'config': the header records no build settings, so its {len(stale)} stale entries cannot be rebuilt "
                f"(a dataset not made by `kalma build`){again}"
            )
        rebuilt, failed = rebuild(ds, stale, checks, config, new_spec, progress) if stale else ({}, {})
    except KeyboardInterrupt:  # the rebuild's own message would name its temporary folder, gone by now
        raise Interrupted(f"interrupted: nothing was written ({out} and its changelog are written whole, at the end): run the same command again") from None
    log: list[dict[str, Any]] = []
    body: list[bytes] = []
    for c in checks:
        if c.status == "valid":
            body.append(ds.raw[c.line - 1])
            log.append({"id": c.id, "action": "kept", "findings": []})
        elif c.id in rebuilt:
            body.append((dumps(rebuilt[c.id].model_dump(mode="json", exclude_none=False), ensure_ascii=False) + "\n").encode())
            log.append({"id": c.id, "action": "rebuilt", "findings": [asdict(f) for f in c.findings]})
        else:
            why = failed.get(c.id, "broken (" + "; ".join(_gone(f) for f in c.findings if f.kind in BROKEN) + ")")
            log.append({"id": c.id, "action": "dropped", "why": why, "findings": [asdict(f) for f in c.findings]})
    counts = {a: sum(x["action"] == a for x in log) for a in ("kept", "rebuilt", "dropped")}
    changelog = beside(out, "changelog")
    if same_kg(ds.built_on(), new) and counts["kept"] == len(ds.entries):
        head = ds.raw[0]  # nothing to do: the dataset is already what a refresh would write
    else:
        refreshed = {"kg_version": new, "from": built, "counts": counts, "changelog": changelog.name, **used, **provenance(command="kalma dataset refresh")}
        header = {"kalma": {**ds.header, "provenance": {**ds.provenance, "refreshed": refreshed}}}
        head = (dumps(header, ensure_ascii=False) + "\n").encode()
    _write_whole(out, head + b"".join(body))
    log_head = {"kalma": {"kind": "changelog", "dataset": out.name, "from": built, "to": new, "counts": counts, **used}}
    _write_whole(changelog, "".join(dumps(x, ensure_ascii=False) + "\n" for x in [log_head, *log]).encode())
    return {"counts": counts, "output": str(out), "changelog": str(changelog)}


def _gone(f: Finding) -> str:
    """`removed: Q68753 P1411 (Nobel Prize…)`, `merged: Q5 into Q7`, `deleted: Q5 (its label)`."""
    what = f"{f.entity} {f.pid}" if f.pid else f.entity
    return f"{f.kind}: {what} into {f.new}" if f.kind == "merged" else f"{f.kind}: {what} ({f.old})"


def _write_whole(path: Path, data: bytes) -> None:
    """Written whole or not at all: a temp file beside it, renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def rebuild(
    ds: Dataset, stale: Sequence[DatasetEntry], checks: Sequence[EntryCheck], config: Mapping[str, Any], new_spec: str, progress: bool
) -> tuple[dict[str, DatasetEntry], dict[str, str]]:
    """The stale entries built again by `kalma build` on NEW with the dataset's recorded settings:
    each from its own record, at its own line of a records file of the same name (so the same
    entry id and seed), its entities named as NEW names them. Returns ({id: entry}, {id: why not})."""
    from .build import BuildConfig, build
    from .evolve import EvolveConfig

    renamed = {f.entity: f.new for c in checks for f in c.findings if f.kind == "label changed" and QID_RE.match(f.entity)}
    stem = Path(str(config.get("records", "records"))).stem
    rows: dict[int, dict[str, Any]] = {}
    for e in stale:
        if e.seed is None or e.seed.source_line is None or len(e.people) != 2:
            continue
        names = [renamed.get(q, _label(e, q)) for q in e.people]
        row = {"paragraph": e.seed.paragraph, "person_a": names[0], "relation": e.seed.relation, "person_b": names[1]}
        if classes := e.meta.get("classes"):
            row |= {"class_a": classes[0], "class_b": classes[1]}
        if split := e.meta.get("split"):
            row["split"] = split
        rows[e.seed.source_line] = row
    failed = {e.id: "no record to rebuild it from (the entry names no seed line)" for e in stale if e.id not in {f"{stem}-{n}" for n in rows}}
    if not rows:
        return {}, failed
    evolve = EvolveConfig(**config.get("evolve", {}))
    cfg = BuildConfig(
        kg=new_spec,
        llm=config["llm"],
        lm=config["lm"],
        seed=config["seed"],
        evolve=evolve,
        relation_table=config.get("relation_table"),
        classes=tuple(config.get("classes", ())),
    )
    with tempfile.TemporaryDirectory(prefix="kalma-refresh-") as tmp:
        records = Path(tmp) / f"{stem}.jsonl"
        # each record at its own line: the builder names an entry by its records file and line
        records.write_text("".join((dumps(rows[n], ensure_ascii=False) if n in rows else "") + "\n" for n in range(1, max(rows) + 1)), encoding="utf-8")
        built_file = Path(tmp) / "rebuilt.jsonl"
        build(records, built_file, cfg, progress=progress, window=int(ds.provenance.get("window", 8)))
        made = {e.id: e for e in read_jsonl(built_file, DatasetEntry, kind="dataset", allow_empty=True)}
    out: dict[str, DatasetEntry] = {}
    for e in stale:
        if e.id in failed:
            continue
        got = made.get(e.id)
        if got is None:
            failed[e.id] = "the builder could not make it again on the new KG (see why in a build of its record)"
        elif got.people != e.people:
            failed[e.id] = f"its names now resolve to other entities ({', '.join(got.people)} instead of {', '.join(e.people)})"
        else:
            out[e.id] = got.model_copy(update={"seed": got.seed.model_copy(update={"source": e.seed.source}) if got.seed and e.seed else got.seed})
    return out, failed


def _label(entry: DatasetEntry, qid: str) -> str:
    return next((g.label for g in entry.knowledge_pool.entities if g.qid == qid), qid)


# ------------------------------------------------------------------ fresh entries


def records_changed_since(path: str | Path) -> dict[str, Any]:
    """What a records file drawn with `--changed-since` says of it in its header (the older KG's
    version, the splits), for the dataset built from it to say too: {} for any other file."""
    if Path(path).suffix.lower() == ".csv":
        return {}
    made = read_header(path).get("provenance")
    return {k: made[k] for k in ("changed_since", "splits") if k in made} if isinstance(made, dict) else {}


def record_splits(path: str | Path) -> dict[int, str]:
    """{line: split} of a records file's records that name one (`records from-kg --changed-since`)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        return {i + 2: r["split"] for i, r in enumerate(csv.DictReader(io.StringIO(text, newline=""))) if r.get("split") in SPLITS}
    out = {}
    for i, raw in enumerate(text.splitlines(), start=1):
        if '"split"' in raw:
            obj = json.loads(raw)
            if isinstance(obj, dict) and obj.get("split") in SPLITS:
                out[i] = obj["split"]
    return out
