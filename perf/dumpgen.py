"""Wikidata dumps at scale, in Wikidata's own formats, for the import and builder benchmarks.

Entities are made as Wikidata's JSON dump holds them, then written as `latest-all.json` lines or
as truthy N-Triples (`kalma.kg.dumps.entity_nt`), so both formats hold the same statements. The
line mix follows a real person's: labels in eight languages (each written three times in the
truthy dump), aliases, descriptions, about twenty claims (dates with precision, places,
occupations, family and teaching relations among the people, given and family names), ten
external identifiers (which the store keeps and the queries leave out), and deprecated and
preferred statements the truthy rules must sort out. With ../shared present, the authors'
release's people come first, under their own QIDs and names, linked as the release links them;
the rest are invented (`Q9…` ids, far beyond any real QID). Relation records for the builder
(`records`) come from the family and teaching links, with a one-line paragraph each.

    python -m perf.dumpgen --people 1000000 --format nt -o runs/scale/latest-truthy.nt.gz   # compressed by the name's suffix
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from kalma.kg.dumps import entity_nt

LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "pt", "ru")
GIVEN = (
    "Anna Karl Maria Luca Sofia Pietro Elena Jan Ada Tomas Clara Ivan Greta Paolo Nora Felix Rosa Hugo Irene Otto Lea Marco Vera "
    "Bruno Alma Emil Iris Leon Mira Oscar Ruth Simon Tilde Victor Wanda Xaver Yara Zeno"
).split()
FAMILY_ROOTS = "Berg Rossi Novak Weber Costa Moreau Lind Varga Russo Meyer Silva Horvat Dubois Ferrari Kowal Brandt Greco Nagel Marin Falk".split()
RELATIONS = {"P22": "father", "P25": "mother", "P26": "spouse", "P40": "child", "P3373": "sibling", "P1066": "student of", "P802": "student"}
PROPERTIES = {
    "P31": ("instance of", "WikibaseItem", ["is a"]),
    "P21": ("sex or gender", "WikibaseItem", ["gender"]),
    "P19": ("place of birth", "WikibaseItem", ["birthplace", "born in"]),
    "P20": ("place of death", "WikibaseItem", ["deathplace"]),
    "P22": ("father", "WikibaseItem", []),
    "P25": ("mother", "WikibaseItem", []),
    "P26": ("spouse", "WikibaseItem", ["wife", "husband"]),
    "P40": ("child", "WikibaseItem", []),
    "P3373": ("sibling", "WikibaseItem", []),
    "P1066": ("student of", "WikibaseItem", ["teacher"]),
    "P802": ("student", "WikibaseItem", []),
    "P106": ("occupation", "WikibaseItem", ["profession"]),
    "P27": ("country of citizenship", "WikibaseItem", ["citizenship"]),
    "P569": ("date of birth", "Time", ["born"]),
    "P570": ("date of death", "Time", ["died"]),
    "P735": ("given name", "WikibaseItem", []),
    "P734": ("family name", "WikibaseItem", ["surname"]),
    "P1412": ("languages spoken, written or signed", "WikibaseItem", []),
    "P1696": ("inverse property", "WikibaseProperty", []),
    **{f"P{214 + i}": (f"authority identifier {i}", "ExternalId", []) for i in range(10)},
}
INVERSES = {"P22": "P40", "P25": "P40", "P1066": "P802"}
PLACES, OCCUPATIONS, COUNTRIES, TONGUES = 2000, 300, 120, 40
BASE = 900_000_000  # invented QIDs start here


def _snak(pid: str, dv: dict[str, Any] | None, rank: str = "normal", kind: str = "value") -> dict[str, Any]:
    snak: dict[str, Any] = {"snaktype": kind, "property": pid}
    if dv is not None:
        snak["datavalue"] = dv
    return {"mainsnak": snak, "type": "statement", "rank": rank, "id": f"{pid}${random.getrandbits(64):016x}"}


def _item(q: str) -> dict[str, Any]:
    return {"type": "wikibase-entityid", "value": {"entity-type": "item", "numeric-id": int(q[1:]), "id": q}}


def _time(year: int, month: int, day: int, precision: int = 11) -> dict[str, Any]:
    sign = "-" if year < 0 else "+"
    return {
        "type": "time",
        "value": {
            "time": f"{sign}{abs(year):04d}-{month:02d}-{day:02d}T00:00:00Z",
            "precision": precision,
            "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
            "timezone": 0,
            "before": 0,
            "after": 0,
        },
    }


def _names(labels: dict[str, str]) -> dict[str, Any]:
    return {lang: {"language": lang, "value": text} for lang, text in labels.items()}


def _entity(eid: str, label: str, description: str = "", claims: dict[str, list[Any]] | None = None, aliases: list[str] = (), **extra: Any) -> dict[str, Any]:  # type: ignore[assignment]
    return {
        "type": "item" if eid.startswith("Q") else "property",
        "id": eid,
        "labels": _names({lang: label for lang in LANGUAGES}),
        "descriptions": _names({lang: description for lang in LANGUAGES}) if description else {},
        "aliases": {"en": [{"language": "en", "value": a} for a in aliases]} if aliases else {},
        "claims": claims or {},
        "sitelinks": {f"{lang}wiki": {"site": f"{lang}wiki", "title": label, "badges": []} for lang in LANGUAGES[:4]},
        **extra,
    }


def vocabulary() -> Iterator[dict[str, Any]]:
    """The properties (with labels, aliases, types and inverses) and the things people's claims name."""
    for pid, (label, kind, aliases) in PROPERTIES.items():
        datatype = {"WikibaseItem": "wikibase-item", "Time": "time", "ExternalId": "external-id", "WikibaseProperty": "wikibase-property"}[kind]
        claims = (
            {"P1696": [_snak("P1696", {"type": "wikibase-entityid", "value": {"entity-type": "property", "id": INVERSES[pid]}})]} if pid in INVERSES else {}
        )
        yield {**_entity(pid, label, f"Wikidata property {pid}", claims, aliases), "datatype": datatype, "sitelinks": {}}
    yield _entity("Q5", "human", "common name of Homo sapiens")
    yield _entity("Q6581097", "male", "male human")
    yield _entity("Q6581072", "female", "female human")
    for i in range(PLACES):
        yield _entity(f"Q{BASE + i}", f"Placeton {i}", "invented town")
    for i in range(OCCUPATIONS):
        yield _entity(f"Q{BASE + PLACES + i}", f"occupation {i}", "invented occupation")
    for i in range(COUNTRIES):
        yield _entity(f"Q{BASE + PLACES + OCCUPATIONS + i}", f"Country {i}", "invented country")
    for i in range(TONGUES):
        yield _entity(f"Q{BASE + PLACES + OCCUPATIONS + COUNTRIES + i}", f"Tongue {i}", "invented language")
    for i, name in enumerate(GIVEN):
        yield _entity(f"Q{BASE + 5000 + i}", name, "given name")


def _family(i: int) -> str:
    root = FAMILY_ROOTS[i % len(FAMILY_ROOTS)]
    return f"{root}{'ova' if i % 7 == 0 else ''}{'-' + FAMILY_ROOTS[(i // 20) % len(FAMILY_ROOTS)] if i >= 20 else ''}{i // 400 or ''}"


def people(n: int, seed: int = 0, release: list[dict[str, Any]] | None = None) -> Iterator[tuple[dict[str, Any], list[tuple[str, str, str]]]]:
    """`n` people (the release's first, when given), each as an entity and its relation links
    (person, relation label, person) for records. Links go to people made before (families and
    teachers), so each is written with what it names."""
    rng = random.Random(seed)
    random.seed(seed)
    names: list[tuple[str, str]] = []  # (qid, name) of each person made so far
    for i in range(n):
        if release and i < len(release):
            qid, name = release[i]["qid"], release[i]["name"]
        else:
            qid = f"Q{BASE + 10_000 + i}"
            name = f"{rng.choice(GIVEN)} {_family(rng.randrange(max(50, n // 8)))}"  # namesakes: about 8 people a family name
        born = rng.randint(-300, 1990)
        claims: dict[str, list[Any]] = {
            "P31": [_snak("P31", _item("Q5"))],
            "P21": [_snak("P21", _item(rng.choice(["Q6581097", "Q6581072"])))],
            "P569": [_snak("P569", _time(born, rng.randint(1, 12), rng.randint(1, 28))), _snak("P569", _time(born - 1, 1, 1, 9), rank="deprecated")],
            "P19": [_snak("P19", _item(f"Q{BASE + rng.randrange(PLACES)}"))],
            "P106": [_snak("P106", _item(f"Q{BASE + PLACES + rng.randrange(OCCUPATIONS)}")) for _ in range(rng.randint(1, 3))],
            "P27": [_snak("P27", _item(f"Q{BASE + PLACES + OCCUPATIONS + rng.randrange(COUNTRIES)}"), rank=r) for r in ("preferred", "normal")],
            "P735": [_snak("P735", _item(f"Q{BASE + 5000 + GIVEN.index(name.split()[0])}"))] if name.split()[0] in GIVEN else [],
            "P1412": [_snak("P1412", _item(f"Q{BASE + PLACES + OCCUPATIONS + COUNTRIES + rng.randrange(TONGUES)}"))],
            **{f"P{214 + k}": [_snak(f"P{214 + k}", {"type": "string", "value": f"{k}-{i:09d}"})] for k in range(10)},
        }
        if born < 1950:
            claims["P570"] = [_snak("P570", _time(born + rng.randint(20, 90), rng.randint(1, 12), rng.randint(1, 28)))]
            claims["P20"] = [_snak("P20", _item(f"Q{BASE + rng.randrange(PLACES)}"))]
        links = []
        for pid in rng.sample(sorted(RELATIONS), k=rng.randint(0, 3)) if names else []:
            other, other_name = names[rng.randrange(max(0, len(names) - 5000), len(names))]  # kin made recently
            claims.setdefault(pid, []).append(_snak(pid, _item(other)))
            links.append((name, RELATIONS[pid], other_name))
        names.append((qid, name))
        aliases = [name.split()[0][0] + ". " + " ".join(name.split()[1:])]
        yield _entity(qid, name, f"invented person born in {born}", claims, aliases), links


def release_people() -> list[dict[str, Any]]:
    """The release's people (QID and name), when ../shared holds it; else none."""
    from .common import BIOKALMA

    path = BIOKALMA / "complex_question_graph.json"
    if not path.exists():
        return []
    seen: dict[str, dict[str, Any]] = {}
    for _, graphs in json.loads(path.read_text()):
        for g in graphs:
            if isinstance(g.get("qid"), str) and g.get("name"):
                seen.setdefault(g["qid"], {"qid": g["qid"], "name": g["name"]})
    return list(seen.values())


def write_dump(out: Path, n: int, fmt: str = "nt", seed: int = 0, records: Path | None = None, with_release: bool = True) -> dict[str, int]:
    """Write a dump of `n` people (and the vocabulary) as `fmt` (`nt` or `json`, plus `.gz`,
    `.bz2` or `.zst` by `out`'s suffix), and their relation records; returns counts."""
    release = release_people() if with_release else []
    counts = {"entities": 0, "lines": 0, "records": 0}
    rec_fh = records.open("w", encoding="utf-8") if records else None
    with _writer(out) as fh:
        if fmt == "json":
            fh.write(b"[\n")
        first = True

        def emit(entity: dict[str, Any]) -> None:
            nonlocal first
            if fmt == "json":
                fh.write((b"" if first else b",\n") + json.dumps(entity, ensure_ascii=False, separators=(",", ":")).encode())
                counts["lines"] += 1
            else:
                lines = entity_nt(entity, LANGUAGES)
                fh.write(("\n".join(lines) + "\n").encode())
                counts["lines"] += len(lines)
            first = False
            counts["entities"] += 1

        for entity in vocabulary():
            emit(entity)
        for entity, links in people(n, seed, release):
            emit(entity)
            for a, rel, b in links:
                if rec_fh:
                    rec_fh.write(json.dumps({"paragraph": f"{a}'s {rel} was {b}.", "person_a": a, "relation": rel, "person_b": b}) + "\n")
                counts["records"] += 1
        if fmt == "json":
            fh.write(b"\n]\n")
    if rec_fh:
        rec_fh.close()
    return counts


def _writer(out: Path) -> IO[bytes]:
    out.parent.mkdir(parents=True, exist_ok=True)
    name = out.name
    if name.endswith(".gz"):
        try:
            from isal import igzip

            return igzip.open(out, "wb", compresslevel=1)  # type: ignore[return-value,unused-ignore]
        except ImportError:
            import gzip

            return gzip.open(out, "wb", compresslevel=1)  # type: ignore[return-value]
    if name.endswith(".bz2"):
        import bz2

        return bz2.open(out, "wb", compresslevel=1)
    if name.endswith(".zst"):
        import zstandard

        return zstandard.ZstdCompressor(level=3, threads=-1).stream_writer(out.open("wb"))  # type: ignore[return-value,unused-ignore]
    return out.open("wb")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n")[-1].strip(), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--people", type=int, default=10_000, help="people in the dump, the release's first (default 10,000; about 55 N-Triples lines each)")
    ap.add_argument("--format", choices=["nt", "json"], default="nt", help="truthy N-Triples (latest-truthy.nt) or the JSON dump (latest-all.json); default nt")
    ap.add_argument("--seed", type=int, default=0, help="the seed of the invented people: the same seed writes the same dump (default 0)")
    ap.add_argument("--records", metavar="FILE", help="also write the builder's relation records (JSON Lines) here")
    ap.add_argument("--no-release", action="store_true", help="invented people only, even where ../shared holds the release")
    ap.add_argument("-o", "--output", required=True, metavar="DUMP", help="the dump to write; .gz, .bz2 or .zst at its end compresses it")
    return ap


def main() -> None:
    args = parser().parse_args()
    counts = write_dump(
        Path(args.output), args.people, args.format, seed=args.seed, records=Path(args.records) if args.records else None, with_release=not args.no_release
    )
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
