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

Other classes come after the people when asked for (`--organizations`, `--cities`, `--works`), with
their own properties, labels and aliases, and some of them instances of a subclass (a company is a
business is an organization; a big city is a city; a novel is a literary work), so that the
class look-up's subclass walk has something to walk: organizations with headquarters (a city),
founders (a person), industries and inception dates; cities with countries, mayors (a person) and
twin towns; works with authors (a person), genres and publication dates. A dump of people only is
written exactly as before (no class vocabulary, the same random draws).

    python -m perf.dumpgen --people 1000000 --format nt -o runs/scale/latest-truthy.nt.gz   # compressed by the name's suffix
    python -m perf.dumpgen --people 500 --organizations 2000 --cities 2000 -o runs/classes/truthy.nt
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterable, Iterator
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
# The properties of the other classes (written only in a dump that has them)
CLASS_PROPERTIES = {
    "P279": ("subclass of", "WikibaseItem", []),
    "P159": ("headquarters location", "WikibaseItem", ["headquarters", "HQ"]),
    "P112": ("founded by", "WikibaseItem", ["founder"]),
    "P452": ("industry", "WikibaseItem", ["sector"]),
    "P571": ("inception", "Time", ["founded"]),
    "P17": ("country", "WikibaseItem", []),
    "P6": ("head of government", "WikibaseItem", ["mayor"]),
    "P190": ("twinned administrative body", "WikibaseItem", ["twin town", "sister city"]),
    "P50": ("author", "WikibaseItem", ["writer"]),
    "P136": ("genre", "WikibaseItem", []),
    "P577": ("publication date", "Time", ["published"]),
    "P373": ("Commons category", "String", []),  # trivial for any class but a person's list does not name it
}
# class -> (label, the class it is a subclass of)
CLASS_ITEMS = {
    "Q43229": ("organization", None),
    "Q4830453": ("business", "Q43229"),
    "Q783794": ("company", "Q4830453"),
    "Q163740": ("nonprofit organization", "Q43229"),  # a class no entity of the dump is an instance of
    "Q515": ("city", None),
    "Q1549591": ("big city", "Q515"),
    "Q7725634": ("literary work", None),
    "Q8261": ("novel", "Q7725634"),
}
INDUSTRIES, GENRES = 60, 30
ORG_WORDS = "Nordwind Aster Corvid Halden Ibex Juniper Kestrel Lumen Meridian Obsidian Pelican Quill Rowan Solstice Tamarind Umber Vireo Wren".split()
ORG_KINDS = "Logistics Foods Textiles Robotics Press Shipping Energy Pharma Optics Brewing".split()
CITY_ROOTS = "Alden Bram Cora Dun Elm Fenn Gale Hart Isen Jor Kell Lorn Mara Nor Orr Pell Quen Ross Sand Tarn".split()
CITY_ENDS = "ford burg ton wick stead haven mouth field dale port".split()
WORK_WORDS = "Silent Amber Hollow Distant Iron Paper Winter Golden Broken Hidden".split()
WORK_NOUNS = "River Garden Lantern Harbour Letters Orchard Mirror Tide Crown Forest".split()
PLACES, OCCUPATIONS, COUNTRIES, TONGUES = 2000, 300, 120, 40
BASE = 900_000_000  # invented QIDs start here
ORG_BASE, CITY_BASE, WORK_BASE = BASE + 3_000_000, BASE + 4_000_000, BASE + 5_000_000


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


def class_vocabulary() -> Iterator[dict[str, Any]]:
    """The other classes' properties, the classes themselves (with their subclass statements),
    industries and genres."""
    kinds = {"WikibaseItem": "wikibase-item", "Time": "time", "String": "string"}
    for pid, (label, kind, aliases) in CLASS_PROPERTIES.items():
        yield {**_entity(pid, label, f"Wikidata property {pid}", None, aliases), "datatype": kinds[kind], "sitelinks": {}}
    for q, (label, parent) in CLASS_ITEMS.items():
        yield _entity(q, label, "class", {"P279": [_snak("P279", _item(parent))]} if parent else None)
    for i in range(INDUSTRIES):
        yield _entity(f"Q{BASE + 6000 + i}", f"industry {i}", "invented industry")
    for i in range(GENRES):
        yield _entity(f"Q{BASE + 7000 + i}", f"genre {i}", "invented genre")


def _person_qids(n: int, release: list[dict[str, Any]] | None) -> list[str]:
    return [release[i]["qid"] if release and i < len(release) else f"Q{BASE + 10_000 + i}" for i in range(n)]


def others(organizations: int, cities: int, works: int, people_qids: list[str], seed: int = 0) -> Iterator[tuple[dict[str, Any], list[tuple[str, str, str]]]]:
    """Cities, then organizations, then works, each with its links (name, PID, name) for records;
    links go to entities made before (people, cities) so each is written with what it names."""
    rng = random.Random(seed + 1)
    random.seed(seed + 1)
    city_names: list[tuple[str, str]] = []
    country = [f"Q{BASE + PLACES + OCCUPATIONS + i}" for i in range(COUNTRIES)]
    for i in range(cities):
        q = f"Q{CITY_BASE + i}"
        k = i % (len(CITY_ROOTS) * len(CITY_ENDS))
        name = f"{CITY_ROOTS[k % len(CITY_ROOTS)]}{CITY_ENDS[k // len(CITY_ROOTS)]}" + (f" {i // 200 + 1}" if i >= 200 else "")
        claims: dict[str, list[Any]] = {
            "P31": [_snak("P31", _item("Q1549591" if rng.random() < 0.3 else "Q515"))],
            "P17": [_snak("P17", _item(rng.choice(country)))],
            "P373": [_snak("P373", {"type": "string", "value": name})],
        }
        links = []
        if people_qids:
            claims["P6"] = [_snak("P6", _item(rng.choice(people_qids)))]
        if city_names and rng.random() < 0.6:
            other, other_name = city_names[rng.randrange(len(city_names))]
            claims["P190"] = [_snak("P190", _item(other))]
            links.append((name, "P190", other_name))
        city_names.append((q, name))
        yield _entity(q, name, "invented city", claims, [f"City of {name}"]), links
    for i in range(organizations):
        q = f"Q{ORG_BASE + i}"
        k = i % (len(ORG_WORDS) * len(ORG_KINDS))
        name = f"{ORG_WORDS[k % len(ORG_WORDS)]} {ORG_KINDS[k // len(ORG_WORDS)]}" + (f" {i // 180 + 1}" if i >= 180 else "")
        claims = {
            "P31": [_snak("P31", _item(rng.choice(["Q43229", "Q4830453", "Q783794"])))],
            "P452": [_snak("P452", _item(f"Q{BASE + 6000 + rng.randrange(INDUSTRIES)}")) for _ in range(rng.randint(1, 2))],
            "P571": [_snak("P571", _time(rng.randint(1800, 2020), rng.randint(1, 12), rng.randint(1, 28)))],
            "P373": [_snak("P373", {"type": "string", "value": name})],
        }
        links = []
        if city_names:
            hq, hq_name = city_names[rng.randrange(len(city_names))]
            claims["P159"] = [_snak("P159", _item(hq))]
            links.append((name, "P159", hq_name))
        if people_qids:
            claims["P112"] = [_snak("P112", _item(rng.choice(people_qids)))]
        yield _entity(q, name, "invented organization", claims, [name.split()[0] + " " + name.split()[1][0] + "."]), links
    for i in range(works):
        q = f"Q{WORK_BASE + i}"
        name = f"The {WORK_WORDS[i % 10]} {WORK_NOUNS[(i // 10) % 10]}" + (f" {i // 100 + 1}" if i >= 100 else "")
        claims = {
            "P31": [_snak("P31", _item(rng.choice(["Q7725634", "Q8261"])))],
            "P136": [_snak("P136", _item(f"Q{BASE + 7000 + rng.randrange(GENRES)}"))],
            "P577": [_snak("P577", _time(rng.randint(1700, 2020), rng.randint(1, 12), rng.randint(1, 28)))],
        }
        if people_qids:
            claims["P50"] = [_snak("P50", _item(rng.choice(people_qids)))]
        yield _entity(q, name, "invented literary work", claims, [name.removeprefix("The ")]), []


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


def write_dump(
    out: Path,
    n: int,
    fmt: str = "nt",
    seed: int = 0,
    records: Path | None = None,
    with_release: bool = True,
    organizations: int = 0,
    cities: int = 0,
    works: int = 0,
    languages: tuple[str, ...] | None = None,
    named_only: bool = False,
) -> dict[str, int]:
    """Write a dump of `n` people (and the vocabulary), then of the other classes asked for, as
    `fmt` (`nt` or `json`, plus `.gz`, `.bz2` or `.zst` by `out`'s suffix), and their relation
    records; returns counts. With `languages`, labels and aliases are written in those languages
    as Wikidata has them (`perf.wikidata_labels`), some entities lacking one; without, every
    label is the English one in eight languages, as before. With `named_only`, the vocabulary's
    items are only those the dump's claims name (the same people, other entities and records):
    a dump of a few people is then some 1,000 lines, not 80,000 lines of places no claim names."""
    from .wikidata_labels import in_languages

    release = release_people() if with_release else []
    counts = {"entities": 0, "lines": 0, "records": 0}
    rec_fh = records.open("w", encoding="utf-8") if records else None
    with _writer(out) as fh:
        if fmt == "json":
            fh.write(b"[\n")
        first = True

        def emit(entity: dict[str, Any], named: bool = False) -> None:
            nonlocal first
            if languages:
                entity = in_languages(entity, languages, named)
            if fmt == "json":
                fh.write((b"" if first else b",\n") + json.dumps(entity, ensure_ascii=False, separators=(",", ":")).encode())
                counts["lines"] += 1
            else:
                lines = entity_nt(entity, languages or LANGUAGES)
                fh.write(("\n".join(lines) + "\n").encode())
                counts["lines"] += len(lines)
            first = False
            counts["entities"] += 1

        more = organizations or cities or works
        folks: Iterable[tuple[dict[str, Any], list[tuple[str, str, str]]]] = people(n, seed, release)
        rest: Iterable[tuple[dict[str, Any], list[tuple[str, str, str]]]] = others(organizations, cities, works, _person_qids(n, release), seed) if more else ()
        vocab, classes = list(vocabulary()), list(class_vocabulary()) if more else []  # drawn in the order they are written
        named: set[str] | None = None
        if named_only:  # made before the vocabulary is written, to know what they name (the same draws, in the same order)
            folks, rest = list(folks), list(rest)
            named = _named([e for e, _ in [*folks, *rest]] + classes)
        for entity in vocab:
            if named is None or entity["type"] == "property" or entity["id"] in named:
                emit(entity)
        for entity in classes:
            emit(entity)
        for entity, links in folks:
            emit(entity, named=True)
            for a, rel, b in links:
                if rec_fh:
                    rec_fh.write(json.dumps({"paragraph": f"{a}'s {rel} was {b}.", "person_a": a, "relation": rel, "person_b": b}) + "\n")
                counts["records"] += 1
        for entity, links in rest:
            emit(entity, named=True)
            for a, pid, b in links:
                if rec_fh:
                    said = f"{a}'s {CLASS_PROPERTIES[pid][0]} is {b}."
                    rec_fh.write(json.dumps({"paragraph": said, "person_a": a, "relation": pid, "person_b": b}) + "\n")
                counts["records"] += 1
        if fmt == "json":
            fh.write(b"\n]\n")
    if rec_fh:
        rec_fh.close()
    return counts


def _named(entities: list[dict[str, Any]]) -> set[str]:
    """The ids of the items the entities' claims name."""
    return {
        snak["mainsnak"]["datavalue"]["value"]["id"]
        for entity in entities
        for snaks in entity["claims"].values()
        for snak in snaks
        if snak["mainsnak"].get("datavalue", {}).get("type") == "wikibase-entityid"
    }


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
    ap.add_argument("--organizations", type=int, default=0, help="organizations after the people (headquarters, founders, industries; default 0)")
    ap.add_argument("--cities", type=int, default=0, help="cities after the people (countries, mayors, twin towns; default 0)")
    ap.add_argument("--works", type=int, default=0, help="literary works after the people (authors, genres; default 0)")
    ap.add_argument(
        "--evolve",
        metavar="FIRST",
        help="write a second dump from FIRST (an N-Triples dump this wrote) with --changes of its facts changed, and DUMP.changes.jsonl (perf.evolve)",
    )
    ap.add_argument("--changes", type=float, default=0.05, help="with --evolve: the share of FIRST's item claims drawn for a change (default 0.05)")
    ap.add_argument("-o", "--output", required=True, metavar="DUMP", help="the dump to write; .gz, .bz2 or .zst at its end compresses it")
    ap.add_argument(
        "--languages",
        metavar="en,fr,de",
        help="write labels and aliases in these languages as Wikidata has them (en, fr, de, es: perf.wikidata_labels), "
        "some people, cities and organizations lacking one; default: the English label in eight languages",
    )
    return ap


def main() -> None:
    args = parser().parse_args()
    if args.evolve:
        from .evolve import evolve

        print(json.dumps(evolve(Path(args.evolve), Path(args.output), args.changes, args.seed)))
        return
    counts = write_dump(
        Path(args.output),
        args.people,
        args.format,
        seed=args.seed,
        records=Path(args.records) if args.records else None,
        with_release=not args.no_release,
        organizations=args.organizations,
        cities=args.cities,
        works=args.works,
        languages=tuple(lang.strip() for lang in args.languages.split(",") if lang.strip()) if args.languages else None,
    )
    if not args.records:  # no records were written: a count of them would say otherwise
        del counts["records"]
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
