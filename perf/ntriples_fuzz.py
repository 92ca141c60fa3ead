"""The N-Triples differential fuzz test (tests/unit/test_ntriples_fuzz.py, over perf/ntriples_lines.py) run for longer: seed
after seed until the time is up, each seed as `make test` runs its one. A disagreement stops it
with the seed, the filter and the block (rerun one seed with `--first-seed N --seconds 0`).

    python -m perf.ntriples_fuzz --seconds 600
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to run, seed after seed (at least one seed runs); default 60")
    ap.add_argument("--first-seed", type=int, default=1, help="the first seed (make test runs seed 54); default 1")
    args = ap.parse_args()

    import rdflib

    import kalma.kg.dumps
    from kalma.kg.local import quiet_rdflib
    from perf.ntriples_lines import BLOCKS, fuzz

    kalma.kg.dumps.EXAMPLES = 10**9  # every malformed line compared, as the test's fixture does
    rdflib.NORMALIZE_LITERALS = False
    began, seed, totals = time.monotonic(), args.first_seed, {"seeds": 0}
    with quiet_rdflib():
        while True:
            for key, n in fuzz(seed, BLOCKS).items():
                totals[key] = totals.get(key, 0) + n
            totals["seeds"] += 1
            seed += 1
            if time.monotonic() - began >= args.seconds:
                break
    print(json.dumps({**totals, "seeds from": args.first_seed, "seconds": round(time.monotonic() - began, 1)}))


if __name__ == "__main__":
    main()
