"""Break guarded behaviours on purpose, one mutation at a time, and expect a test to fail each time.

    python -m tests.mutations            (make mutations; every area, several minutes on 2 cores)
    python -m tests.mutations kg stats   (the areas named: the modules of this package)
    python -m tests.mutations stats -k pairing   (the mutations whose name holds a word)

Each module of this package holds one area's `MUTATIONS`. A mutation edits one file of the working
tree, runs the tests named for it, and puts the file back (also on Ctrl-C). Prints one line per
mutation: caught (a test failed) or SURVIVED; exits 1 when any survived.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


def areas() -> dict[str, tuple[Mutation, ...]]:
    """Every module of this package and its mutations, by the module's name."""
    return {m.name: importlib.import_module(f"{__name__}.{m.name}").MUTATIONS for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}


def run(m: Mutation) -> bool:
    """Whether a test caught `m`."""
    path = ROOT / m.file
    original = path.read_text()
    if original.count(m.old) != 1:
        raise SystemExit(f"{m.name}: the code it mutates is not in {m.file} once (found {original.count(m.old)}); update tests/mutations")
    try:
        path.write_text(original.replace(m.old, m.new))
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "2", *m.tests], cwd=ROOT, capture_output=True, text=True
        )
    finally:
        path.write_text(original)
    return done.returncode != 0


def main(argv: list[str]) -> None:
    known = areas()
    words = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-k"]
    named = [a for i, a in enumerate(argv) if a != "-k" and (i == 0 or argv[i - 1] != "-k")]
    unknown = [a for a in named if a not in known]
    if unknown:
        raise SystemExit(f"no mutation area {', '.join(unknown)}; the areas are {', '.join(sorted(known))}")
    chosen = [m for name in (named or sorted(known)) for m in known[name] if not words or any(w in m.name for w in words)]
    survived = 0
    for m in chosen:
        caught = run(m)
        survived += not caught
        print(f"{'caught  ' if caught else 'SURVIVED'}  {m.name}  ({m.file})", flush=True)
    print(f"{len(chosen) - survived} of {len(chosen)} mutations caught")
    sys.exit(1 if survived else 0)
