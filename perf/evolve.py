"""A second Wikidata dump from a first, with a seeded, stated share of its facts changed
(`python -m perf.dumpgen --evolve FIRST --changes 0.05 --seed S -o SECOND`), and beside it the
list of what changed (`SECOND.changes.jsonl`), so that every test of `kalma kg diff` and of the
commands that read a diff knows exactly which facts changed.

FIRST is a truthy N-Triples dump `perf.dumpgen` wrote (plain or compressed). Of its claim lines
about items, `round(share × claims)` are drawn (seeded); each draws a kind of change, applied to
its line's subject:

- `changed`: the line's value replaced, same subject and property: an item by another item the
  property names elsewhere, of the old item's class (its P31, when it has one); a date by another
  year; a string by another string. Listed with `old: [old value], new: [new value]`.
- `added`: a new value beside the line's, same subject and property (`old: [], new: [value]`).
- `removed`: the line dropped (`old: [value], new: []`).
- `label`: the subject's label in one of its languages renamed, its three lines alike
  (`rdfs:label`, `skos:prefLabel`, `schema:name`; `old: [text], new: [text], lang`).
- `merged`: the subject merged into the item written before it, of the same class: its claims
  moved to that item (those it lacks), its labels gone, and one line `wd:OLD owl:sameAs wd:NEW`,
  as Wikidata's RDF dumps write a redirect (`subject: OLD, new: [NEW]`, and one `added` row per
  property of NEW that gained values).
- `deleted`: every line of the subject dropped.

A subject and property is changed once at most, a merged or deleted subject in no other way,
and an item merged into takes no other change: so each listed row is exactly one row of
`kalma kg diff` (per subject and property, the values removed and added). A drawn change that
would break this is left out; the header line of the list says how many of each kind were
written, with the share asked and the seed. Values are written as a store keeps them (`Q42`, a
literal's lexical form).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kalma.kg import ntriples as nt
from kalma.kg.dumps import dump_format, open_dump

SAME_AS = "http://www.w3.org/2002/07/owl#sameAs"
KINDS = {"changed": 0.4, "added": 0.15, "removed": 0.15, "label": 0.15, "merged": 0.1, "deleted": 0.05}
CHANGES_VERSION = 1
_LABEL = f"<{next(p for p, kind in nt.LABELS.items() if kind == 'label')}>"
_LABEL_LINES = {_LABEL, *(f"<{p}>" for p in nt.LABEL_REPEATS)}
_DATE = re.compile(r'^"(-?)(\d+)(-\d\d-\d\dT.*)$')


def changes_path(second: str | Path) -> Path:
    """Where the list of what `evolve` changed lies: beside SECOND."""
    return Path(str(second) + ".changes.jsonl")


def read_changes(second: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the rows of SECOND's list of changes."""
    lines = changes_path(second).read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(x) for x in lines[1:]]


Line = tuple[str, str, str]  # subject, predicate, object: N-Triples terms as written


def _groups(path: Path) -> Iterator[list[Line]]:
    """The dump's lines, one subject's run at a time (a subject's lines are contiguous)."""
    group: list[Line] = []
    with open_dump(path) as fh:
        for raw in fh:
            s, p, rest = raw.decode().rstrip("\n").split(" ", 2)
            if group and group[0][0] != s:
                yield group
                group = []
            group.append((s, p, rest.removesuffix(" .")))
    if group:
        yield group


def _is_claim(line: Line) -> bool:
    return line[1].startswith(f"<{nt.DIRECT}P") and line[0].startswith(f"<{nt.WD}Q")


def _value(obj: str) -> str:
    """An object as a store keeps it."""
    found = nt.read_object(obj.encode())
    assert found is not None, obj  # the generator writes nothing else
    return found[0]


class _Pools:
    """The item values each property names, by the class (P31) of the value: where a changed
    value is drawn from, so that a place stays a place and a person a person."""

    def __init__(self, path: Path):
        self.klass: dict[str, str] = {}
        seen: dict[str, dict[str, None]] = {}
        self.claims = 0
        for group in _groups(path):
            for line in group:
                if not _is_claim(line):
                    continue
                self.claims += 1
                pid = line[1][len(nt.DIRECT) + 1 : -1]
                if line[2].startswith(f"<{nt.WD}Q"):
                    seen.setdefault(pid, {})[line[2]] = None
                    if pid == "P31":
                        self.klass.setdefault(line[0], line[2])
        self.pools: dict[tuple[str, str | None], list[str]] = {}
        for pid, values in seen.items():
            for v in values:
                self.pools.setdefault((pid, self.klass.get(v)), []).append(v)

    def other(self, rng: random.Random, pid: str, obj: str, taken: set[str]) -> str | None:
        """Another value for `pid` of `obj`'s kind, none of `taken`; None when there is none."""
        if obj.startswith(f"<{nt.WD}Q"):
            pool = self.pools.get((pid, self.klass.get(obj)), [])
            for _ in range(20):
                pick = pool[rng.randrange(len(pool))] if pool else None
                if pick is not None and pick not in taken:
                    return pick
            return None
        if m := _DATE.match(obj):
            sign, year, rest = m.groups()
            shifted = int(sign + year) + rng.choice((-1, 1)) * rng.randint(1, 30)
            new = f'"{"-" if shifted < 0 else ""}{abs(shifted):04d}{rest}'
        elif obj.startswith('"'):
            body, _, suffix = obj[1:].rpartition('"')
            new = f'"{body}-r{rng.randrange(10**6)}"{suffix}'
        else:
            return None
        return new if new not in taken else None


def evolve(first: str | Path, second: str | Path, share: float = 0.05, seed: int = 0) -> dict[str, Any]:
    """Write SECOND from FIRST with `share` of FIRST's item claims drawn for a change, and the
    list of changes beside it (see the module docstring); returns the list's header."""
    from .dumpgen import _writer

    first, second = Path(first), Path(second)
    if dump_format(first)[0] != "nt":
        raise SystemExit(f"{first}: --evolve reads a truthy N-Triples dump (.nt, .nt.gz, …) that perf.dumpgen wrote")
    if not 0 <= share <= 1:
        raise SystemExit(f"--changes {share}: a share of the facts, from 0 to 1")
    pools = _Pools(first)
    rng = random.Random(seed)
    drawn = set(rng.sample(range(pools.claims), round(share * pools.claims)))
    counts = dict.fromkeys(KINDS, 0)
    rows: list[dict[str, Any]] = []
    kinds, weights = list(KINDS), list(KINDS.values())

    def row(kind: str, subject: str, pid: str | None = None, old: list[str] = (), new: list[str] = (), lang: str | None = None) -> None:  # type: ignore[assignment]
        rows.append({"kind": kind, "subject": subject, "pid": pid, "old": list(old), "new": list(new), "lang": lang})
        counts[kind] += 1

    out = second.with_name(second.name + ".tmp")
    index = 0  # claim lines about items seen so far
    # the run before, read and its changes drawn but not applied: the next item may be merged
    # into it, and it then takes no change of its own
    held: tuple[list[Line], list[tuple[Line, str]]] | None = None
    with _writer(out) as fh:

        def write(group: list[Line]) -> None:
            fh.write("".join(f"{s} {p} {o} .\n" for s, p, o in group).encode())

        def release() -> None:
            if held is not None:
                write(_apply(*held, pools, rng, row))

        for group in _groups(first):
            events = []
            for line in group:
                if _is_claim(line):
                    if index in drawn:
                        events.append((line, rng.choices(kinds, weights)[0]))
                    index += 1
            whole = next((k for _, k in events if k in ("merged", "deleted")), None)
            subject = nt.short(group[0][0][1:-1])
            if whole == "merged" and held is not None and _klass(group) and _klass(held[0]) == _klass(group):
                target = held[0]
                have = {(p, o) for s, p, o in target if _is_claim((s, p, o))}
                gained: dict[str, list[str]] = {}
                for s, p, o in group:
                    if _is_claim((s, p, o)) and (p, o) not in have:
                        target.append((target[0][0], p, o))
                        have.add((p, o))
                        gained.setdefault(p[len(nt.DIRECT) + 1 : -1], []).append(_value(o))
                new_id = nt.short(target[0][0][1:-1])
                row("merged", subject, new=[new_id])
                for pid, values in gained.items():
                    row("added", new_id, pid, new=values)
                write(target)
                write([(group[0][0], f"<{SAME_AS}>", target[0][0])])
                held = None
                continue
            release()
            held = None
            if whole == "deleted":
                row("deleted", subject)
            else:
                held = (group, [e for e in events if e[1] not in ("merged", "deleted")])
        release()
    header = {
        "kalma_changes": CHANGES_VERSION,
        "first": str(first),
        "second": str(second),
        "share": share,
        "seed": seed,
        "claims": pools.claims,
        "counts": counts,
    }
    listed = changes_path(second)
    tmp = listed.with_name(listed.name + ".tmp")
    tmp.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [header, *rows]), encoding="utf-8")
    out.replace(second)
    tmp.replace(listed)
    return header


def _klass(group: list[Line]) -> str | None:
    """A run's class (its first P31), or None."""
    return next((o for s, p, o in group if p == f"<{nt.DIRECT}P31>"), None)


def _apply(group: list[Line], events: list[tuple[Line, str]], pools: _Pools, rng: random.Random, row: Any) -> list[Line]:
    """A run with its drawn changes of one fact or label applied (one per property at most, one
    label change at most), each listed by `row`."""
    out = list(group)
    done: set[str] = set()
    subject = nt.short(group[0][0][1:-1])
    for line, kind in events:
        s, p, o = line
        key = "label" if kind == "label" else p
        if key in done:
            continue
        pid = p[len(nt.DIRECT) + 1 : -1]
        taken = {x[2] for x in out if x[1] == p}
        if kind == "label":
            labels = [x for x in out if x[1] == _LABEL]
            if not labels:
                continue
            _, _, text = rng.choice(labels)
            body, _, lang = text.rpartition("@")
            old = nt.unescape(body[1:-1])
            new = f"{old} {rng.choice(('the Elder', 'the Younger', 'von Berg', 'II', 'Jr.'))}"
            out = [(x[0], x[1], f"{nt.quote(new)}@{lang}") if x[1] in _LABEL_LINES and x[2] == text else x for x in out]
            row("label", subject, old=[old], new=[new], lang=lang)
        elif kind == "removed":  # every copy of the line (a value may be written twice)
            out = [x for x in out if x[1:] != (p, o)]
            row("removed", subject, pid, old=[_value(o)])
        else:
            other = pools.other(rng, pid, o, taken)
            if other is None:
                continue
            if kind == "changed":
                out = [(s, p, other) if x[1:] == (p, o) else x for x in out]
                out = list(dict.fromkeys(out))
                row("changed", subject, pid, old=[_value(o)], new=[_value(other)])
            else:
                out.insert(out.index(line) + 1, (s, p, other))
                row("added", subject, pid, new=[_value(other)])
        done.add(key)
    return out
