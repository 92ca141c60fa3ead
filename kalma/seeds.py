"""Seeds derived in one way everywhere: from the run's seed and the names of what is drawn.

A draw (an entry's LLM calls in the builder, the triples removed from one entry, the people
kept at one retrieval accuracy, CONNER's negatives for one answer, one sampled answer) depends
only on the run seed and on what it is for, never on what else the run does, in what order, or
in which batch. Every output records the run seed; anything drawn can be drawn again from it.

>>> derive_seed(0, "remove", 2, "demo-crane") == derive_seed(0, "remove", 2, "demo-crane")
True
>>> derive_seed(0, "remove", 2, "demo-crane") != derive_seed(1, "remove", 2, "demo-crane")
True
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

SEED_BITS = 31  # fits every backend's seed field (torch, numpy, OpenAI's int)


def derive_seed(seed: int, *parts: str | int | float) -> int:
    """A seed for one purpose, from the run seed and the purpose's parts."""
    text = ":".join([str(seed), *(str(p) for p in parts)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % (1 << SEED_BITS)


def rng(seed: int, *parts: str | int | float) -> random.Random:
    """A random generator for one purpose (see `derive_seed`)."""
    return random.Random(derive_seed(seed, *parts))


def item_seed(seed: int, item: Any) -> int:
    """The seed one item (a chat, a prompt) is sampled with: the same whatever batch it is in."""
    digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]
    return derive_seed(seed, "item", digest)
