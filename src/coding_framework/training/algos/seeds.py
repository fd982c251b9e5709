"""Every seed a run derives: a pure function of the run's seed and a few named parts.

The parts are joined with ``:`` into one key. ``derive_seed`` hashes the key to a 63-bit integer (for
torch generators and sampling seeds); ``seeded_random`` seeds a ``random.Random`` with the key itself (for
shuffles and draws). Both are stable across processes, unlike ``hash``, so a resumed run rederives them.
"""

from __future__ import annotations

import hashlib
import random

__all__ = ["derive_seed", "seeded_random"]


def _key(*parts: object) -> str:
    return ":".join(map(str, parts))


def derive_seed(*parts: object) -> int:
    """A 63-bit seed that is a pure function of ``parts``."""
    digest = hashlib.sha256(_key(*parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


def seeded_random(*parts: object) -> random.Random:
    """A ``random.Random`` seeded with the key of ``parts``."""
    return random.Random(_key(*parts))
