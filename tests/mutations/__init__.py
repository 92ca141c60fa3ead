"""Break guarded behaviours on purpose, one mutation at a time, and expect a test to fail each time.

    python -m tests.mutations            (make mutations; every area, 47 minutes on 2 cores)
    python -m tests.mutations kg stats   (the areas named: the modules of this package)
    python -m tests.mutations stats -k pairing   (the mutations whose name holds a word)

Each module of this package holds one area's `MUTATIONS`. A mutation edits one file of the working
tree, runs the tests named for it, and puts the file back, also when the run is stopped by Ctrl-C
or SIGTERM (`timeout`, a CI job's limit; exit 130 or 143, saying how far it got). Prints one line
per mutation: caught (a test failed) or SURVIVED; exits 1 when any survived.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STOPS = {signal.SIGINT, signal.SIGTERM}


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
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "2", *m.tests]
    try:
        path.write_text(original.replace(m.old, m.new))
        # its own session, so that a stop ends its workers too: killed with the controller alone,
        # they would run on against the restored file
        tests = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            code = tests.wait()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):  # all of them ended on their own just before
                os.killpg(tests.pid, signal.SIGKILL)
            tests.wait()
            raise
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)  # a second Ctrl-C must not cut the restore short
        path.write_text(original)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
    return code != 0


def main(argv: list[str]) -> None:
    known = areas()
    words = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-k"]
    named = [a for i, a in enumerate(argv) if a != "-k" and (i == 0 or argv[i - 1] != "-k")]
    unknown = [a for a in named if a not in known]
    if unknown:
        raise SystemExit(f"no mutation area {', '.join(unknown)}; the areas are {', '.join(sorted(known))}")
    chosen = [m for name in (named or sorted(known)) for m in known[name] if not words or any(w in m.name for w in words)]
    survived = done = 0
    terminated: list[int] = []

    def on_sigterm(signum: int, _frame: object) -> None:
        terminated.append(signum)
        raise KeyboardInterrupt

    # Python's own SIGTERM ends the process without running `finally`: the file would stay mutated
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        for m in chosen:
            caught = run(m)
            survived += not caught
            done += 1
            print(f"{'caught  ' if caught else 'SURVIVED'}  {m.name}  ({m.file})", flush=True)
    except KeyboardInterrupt:
        how = "SIGTERM" if terminated else "Ctrl-C"
        print(f"stopped by {how} after {done} of {len(chosen)} mutations; the file being mutated is restored", file=sys.stderr)
        sys.exit(128 + (terminated[0] if terminated else signal.SIGINT))
    print(f"{len(chosen) - survived} of {len(chosen)} mutations caught")
    sys.exit(1 if survived else 0)
