"""Sticky weighted assignment of sessions to the champion or the candidate version.

A session id hashes (blake2b, salted with the candidate's id so that each rollout tries a different slice
of sessions) to one of 10,000 buckets; the candidate owns the buckets below its weight. Raising the weight
therefore only hands control buckets to the candidate, never the reverse. A bounded LRU pin table keeps
each session on the version it first got for all of its turns, even while the weights move. A request
without a session id is a fresh random assignment.

The pins are journaled for the state file: ``drain_pins`` gives the pins made since the last call, or the
whole table after a change that dropped pins (``reset``).
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["BUCKETS", "Assigner", "Assignment", "bucket"]

BUCKETS = 10_000


def bucket(session_id: str, salt: str) -> int:
    """The session's bucket in [0, BUCKETS): stable across processes and restarts (unlike ``hash``)."""
    digest = hashlib.blake2b(session_id.encode(), digest_size=8, key=salt.encode()[:64]).digest()
    return int.from_bytes(digest, "big") % BUCKETS


@dataclass(frozen=True)
class Assignment:
    version: str
    fresh: bool  # a new unit of randomization (a new session, or a request without one): SRM counts these


class Assigner:
    """Maps sessions to versions; the weight is the candidate's percent of new sessions."""

    def __init__(self, champion: str, pin_table_size: int, rng: random.Random | None = None) -> None:
        self._champion = champion
        self._candidate: str | None = None
        self._threshold = 0  # buckets below it belong to the candidate
        self._pins: OrderedDict[str, str] = OrderedDict()
        self._size = pin_table_size
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._journal: list[tuple[str, str]] = []
        self._reset = False

    @property
    def champion(self) -> str:
        return self._champion

    @property
    def candidate(self) -> str | None:
        return self._candidate

    @property
    def weight(self) -> float:
        """The candidate's percent of new sessions."""
        return 100 * self._threshold / BUCKETS

    def set_weight(self, candidate: str, percent: float) -> None:
        """Send ``percent`` of new sessions to ``candidate``; pinned sessions keep their version."""
        if not 0 <= percent <= 100:
            raise ValueError(f"weight must be within 0..100, got {percent}")
        with self._lock:
            if candidate != self._candidate:
                self._drop_pins_to(self._candidate)
                self._candidate = candidate
            self._threshold = round(percent * BUCKETS / 100)

    def replace_champion(self, version: str) -> str:
        """A new champion for everyone (a rollback to ``previous``, a failover); returns the old one."""
        with self._lock:
            old, self._champion = self._champion, version
            self._candidate, self._threshold = None, 0
            self._pins.clear()
            self._reset = True
            return old

    def load_pins(self, pins: list[tuple[str, str]]) -> None:
        """Pins from the state file, oldest first; pins to versions no longer served are dropped."""
        with self._lock:
            live = {self._champion, self._candidate}
            self._pins.update((s, v) for s, v in pins if v in live)
            while len(self._pins) > self._size:
                self._pins.popitem(last=False)

    def drain_pins(self) -> tuple[bool, list[tuple[str, str]]]:
        """(reset, pins): the new pins since the last call; with reset, the whole table instead."""
        with self._lock:
            reset, self._reset = self._reset, False
            pins = list(self._pins.items()) if reset else self._journal
            self._journal = []
            return reset, pins

    def drop_candidate(self) -> None:
        """Rollback: from now on no request reaches the candidate, pinned sessions included."""
        with self._lock:
            self._drop_pins_to(self._candidate)
            self._candidate, self._threshold = None, 0

    def promote(self) -> str:
        """The candidate becomes the champion for everyone (the old one is about to be retired)."""
        with self._lock:
            if self._candidate is None:
                raise ValueError("no candidate to promote")
            old, self._champion = self._champion, self._candidate
            self._candidate, self._threshold = None, 0
            self._pins.clear()
            self._reset = True
            return old

    def assign(self, session_id: str | None) -> Assignment:
        with self._lock:
            if session_id is None:
                return Assignment(self._pick(self._rng.randrange(BUCKETS)), fresh=True)
            pinned = self._pins.get(session_id)
            if pinned is not None:
                self._pins.move_to_end(session_id)
                return Assignment(pinned, fresh=False)
            version = self._pick(bucket(session_id, self._candidate or ""))
            self._pins[session_id] = version
            self._journal.append((session_id, version))
            if len(self._journal) > self._size:  # nobody drains it: the next drain sends the table
                self._journal, self._reset = [], True
            if len(self._pins) > self._size:
                self._pins.popitem(last=False)
            return Assignment(version, fresh=True)

    def _pick(self, b: int) -> str:
        return self._candidate if self._candidate is not None and b < self._threshold else self._champion

    def _drop_pins_to(self, version: str | None) -> None:
        if version is not None:
            for session in [s for s, v in self._pins.items() if v == version]:
                del self._pins[session]
            self._reset = True
