"""What languages cost, in one run on one machine: `kalma dataset localize` on 1,000 entries (its
time per entry against 100 entries', which says whether the relabelling is batched), and the
import of a dump keeping three label languages against one (time and rows).

One dump `perf.dumpgen --languages en,fr,de` writes (people, organizations and cities, some without
a French or German label) is imported twice, with `--languages en` and with `en,fr,de`, the two
alternating for `--rounds` rounds. The English entries are made from the three-language store as
`kalma build` makes them from records drawn by `kalma records from-kg` (the pair's graphs as the
pool, the link and up to three of the pair's facts as the minimum set), without the evolution and
its scorer, which localize does not redo; they are then localized to French by `template`.

    python -m perf.languages_bench --entries 1000 --rounds 3

Figures go to perf/results/languages_bench.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path
from typing import Any

from .common import report, scratch, timed


def english_entries(store: Path, n: int) -> list[Any]:
    """`n` English entries of organizations and cities from `store` (see the module docstring)."""
    from dataset_builder.from_kg import draw
    from dataset_builder.pool import has_label, make_pool
    from kalma.classes import entity_class
    from kalma.kg import open_source
    from kalma.schema import DatasetEntry

    src = open_source(f"wikidata-local:{store}")
    pairs = draw(src, ["Q43229", "Q515"], ["P159", "P190"], n, 0)
    graphs = src.subgraphs(sorted({q for x in pairs for q in x[:3:2]}))
    out = []
    for i, (a, p, b, ca, cb) in enumerate(pairs):
        ga, gb = graphs[a], graphs[b]
        link = next(t for t in ga.triples if t.relation == p and t.value == b)
        others = [t for g, c in ((ga, ca), (gb, cb)) for t in g.triples if t != link and has_label(t) and not entity_class(c).is_trivial(t)]
        facts = [link, *random.Random(i).sample(others, min(3, len(others)))]
        out.append(
            DatasetEntry(
                id=f"bench-{i}",
                general_question=f"What connects {ga.label} and {gb.label}?",
                specific_question=f"What are {ga.label}'s {link.relation_label} and the rest?",
                people=[a, b],
                knowledge_pool=make_pool([ga, gb])[0],
                minimum_set=facts,
                meta={"seed": i, "classes": [ca, cb]},
            )
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=1000, help="entries localized (default 1,000)")
    ap.add_argument("--rounds", type=int, default=3, help="imports of each kind, alternating (default 3)")
    args = ap.parse_args()

    from dataset_builder.localize import localize
    from kalma.kg import open_source
    from kalma.kg.store import import_dump
    from kalma.models import get_llm

    from .dumpgen import write_dump

    work = Path(scratch())
    dump = work / "truthy.nt"
    n = max(1500, args.entries)
    write_dump(dump, 300, "nt", with_release=False, organizations=n, cities=n, languages=("en", "fr", "de"))
    times: dict[str, list[float]] = {"en": [], "en,fr,de": []}
    rows: dict[str, dict[str, int]] = {}
    for r in range(args.rounds):
        for langs in times:
            store = work / f"store-{langs}-{r}"
            seconds, meta = timed(lambda: import_dump(dump, store, languages=tuple(langs.split(",")), progress=False))
            times[langs].append(seconds)
            rows[langs] = meta["rows"]
    store = work / f"store-en,fr,de-{args.rounds - 1}"
    entries = english_entries(store, args.entries)
    llm = get_llm("template")
    per_entry = {}
    for k in (len(entries) // 10, len(entries)):
        source = open_source(f"wikidata-local:{store}", "fr")  # a fresh source: nothing cached from the run before
        seconds, done = timed(lambda: localize(entries[:k], source, llm))
        per_entry[k] = seconds / k
        left = len(done.left_out)
    one, three = statistics.median(times["en"]), statistics.median(times["en,fr,de"])
    report(
        "languages_bench",
        {
            "entries localized": len(entries),
            "localize entries/s (all)": 1 / per_entry[len(entries)],
            "localize s/entry, all / a tenth": per_entry[len(entries)] / per_entry[len(entries) // 10],
            "entries left out (a label missing in fr)": left,
            "import s, en (median)": one,
            "import s, en,fr,de (median)": three,
            "import time, three languages / one": three / one,
            "label rows, three languages / one": rows["en,fr,de"]["labels"] / rows["en"]["labels"],
            "dump lines": sum(1 for _ in dump.open("rb")),
            "rounds": args.rounds,
        },
    )


if __name__ == "__main__":
    main()
