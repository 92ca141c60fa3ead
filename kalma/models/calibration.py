"""How wide a CPU pass should be, measured once per machine and model.

On a CPU a forward pass gets faster per position as it widens, up to a knee (SmolLM2-135M on a
2-core AMD EPYC: 444 positions/s for one 32-token row, 847 for 4 x 128, 880 for 16 x 128), and
no faster after it, while padding and attention grow with it. So the CPU's passes are cut at the
knee: the narrowest pass whose throughput is within `WITHIN` of the best measured. Memory, not
this, bounds decoding (`runtime`).

The measurement runs the loaded model on random token ids in rows of `ROW` positions, widening
by doubling from `SIZES[0]` until a pass takes `SLOWEST` seconds (a large model stops early: its
knee is narrow) or the sizes run out, a few seconds once. It is kept in a JSON file
(KALMA_CALIBRATION, default ~/.cache/kalma/calibration.json) under this machine's processor,
torch's threads and version, and the model's shape, dtype and kind: another machine, another
thread count or another model measures again; the same one never does.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..jsonl import dumps
from .memory import Shape

SIZES = (32, 64, 128, 256, 512, 1024, 2048, 4096)
ROW = 128  # positions a row, as the scorer's items and the runner's leaves run
WITHIN = 0.9  # of the best throughput: past the knee a wider pass gains less than this
SLOWEST = 1.0  # seconds: the widest pass measured takes at most about this


def knee(measured: dict[int, float], within: float = WITHIN) -> int:
    """The narrowest pass (in positions) whose throughput (positions a second) is within `within`
    of the best measured.

    >>> knee({32: 444, 64: 592, 128: 723, 256: 788, 512: 847, 1024: 877, 2048: 880})
    512
    >>> knee({32: 300, 64: 310})
    32
    """
    best = max(measured.values())
    return min(size for size, rate in measured.items() if rate >= within * best)


def calibration_path() -> Path:
    found = os.environ.get("KALMA_CALIBRATION")
    return Path(found) if found else Path.home() / ".cache" / "kalma" / "calibration.json"


def machine_key(kind: str, shape: Shape, dtype: str) -> str:
    """What a measurement holds for: this processor, torch's threads and version, and the model."""
    import torch

    cpu = _processor()
    model = ",".join(f"{k}={v}" for k, v in asdict(shape).items())
    return f"{cpu}|threads={torch.get_num_threads()}|torch={torch.__version__}|{kind}|{dtype}|{model}"


def _processor() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure(
    probe: Callable[[int, int], None], sizes: tuple[int, ...] = SIZES, slowest: float = SLOWEST, clock: Callable[[], float] = time.perf_counter
) -> dict[int, float]:
    """Positions a second of `probe(rows, width)` at each pass size, narrowest first, until one
    pass takes `slowest` seconds by `clock`; each size timed twice (the faster kept), after one
    warm-up."""
    probe(1, min(sizes[0], ROW))
    found: dict[int, float] = {}
    for size in sizes:
        width = min(size, ROW)
        rows = size // width
        took = min(_timed(probe, rows, width, clock) for _ in range(2))
        found[size] = size / took
        if took >= slowest:
            break
    return found


def _timed(probe: Callable[[int, int], None], rows: int, width: int, clock: Callable[[], float]) -> float:
    start = clock()
    probe(rows, width)
    return max(clock() - start, 1e-9)


def pass_tokens(kind: str, shape: Shape, dtype: str, probe: Callable[[int, int], None]) -> tuple[int, str]:
    """The CPU pass width for this model on this machine, and where it came from: the file's
    measurement when it has one, else measured now and kept."""
    from filelock import FileLock

    path = calibration_path()
    key = machine_key(kind, shape, dtype)
    try:
        seen = (str(path), path.stat().st_mtime_ns, key)
    except OSError:
        seen = None
    if seen in _READ:  # a backend made again in this process: no locked read of the file
        return _READ[seen]
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        known = _read(path)
        if key not in known:
            known[key] = {str(k): round(v, 1) for k, v in measure(probe).items()}
            tmp = path.with_suffix(".tmp")
            tmp.write_text(dumps(known, indent=1, sort_keys=True))
            tmp.replace(path)
    measured = {int(k): float(v) for k, v in known[key].items()}
    width = knee(measured)
    found = width, f"the knee of this CPU's measured throughput ({measured[width]:,.0f} of at best {max(measured.values()):,.0f} positions/s; {path})"
    _READ[(str(path), path.stat().st_mtime_ns, key)] = found
    return found


_READ: dict[tuple[str, int, str] | None, tuple[int, str]] = {}  # by the file's path, modification and the key


def _read(path: Path) -> dict[str, Any]:
    """The measurements kept so far; a damaged file is measured again, not an error."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
