"""What produced an output: package version, configuration, seeds, models, host facts."""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from typing import Any

from . import __version__


def provenance(**config: Any) -> dict[str, Any]:
    """A provenance block for an output file's header; `config` is recorded verbatim."""
    return {
        "kalma_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **config,
    }
