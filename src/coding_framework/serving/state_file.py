"""The server's state file: one SQLite database under the state directory, so a restart (even after
``kill -9``) serves the same champion, resumes the running rollout with its id, counts and step, and keeps
sticky sessions on their versions.

Tables: ``meta`` (the configured model, the champion's spec and id, the local ``previous``), ``rollouts``
(each rollout's record as JSON, `Rollout.to_state`; ``active`` marks the one routing traffic) and
``pins`` (session -> version). The server writes changes every ``state_flush_s`` and right after each
rollout decision, on a thread, in one transaction (WAL journal): a kill loses at most that much of the
counts, a decision only if it comes within the write, and never leaves a torn record.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

__all__ = ["StateStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rollouts (id TEXT PRIMARY KEY, active INTEGER NOT NULL, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pins (session TEXT PRIMARY KEY, version TEXT NOT NULL, seq INTEGER NOT NULL);
"""


class StateStore:
    """Reads and writes the state file (blocking: call from a thread off the event loop)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()
        self._seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM pins").fetchone()[0]

    def meta(self) -> dict[str, Any]:
        with self._lock:
            return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    def rollouts(self) -> tuple[list[dict[str, Any]], str | None]:
        """Every rollout record, in start order, and the id of the active one (None if none)."""
        with self._lock:
            rows = self._db.execute("SELECT record, active FROM rollouts").fetchall()
        records = sorted((json.loads(r) for r, _ in rows), key=lambda r: r["started_at"])
        active = [json.loads(r)["id"] for r, a in rows if a]
        return records, active[0] if active else None

    def pins(self) -> list[tuple[str, str]]:
        """Sticky sessions, oldest first."""
        with self._lock:
            return [(s, v) for s, v in self._db.execute("SELECT session, version FROM pins ORDER BY seq")]

    def write(self, meta: dict[str, Any], records: list[dict[str, Any]], active: str | None,
              pins: tuple[bool, list[tuple[str, str]]]) -> None:
        """One transaction: ``meta`` keys, the changed rollout ``records`` and the pins (reset: the table
        is replaced by ``pins``; else they are added)."""
        reset, rows = pins
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                               [(k, json.dumps(v)) for k, v in meta.items()])
                db.executemany("INSERT OR REPLACE INTO rollouts VALUES (?, ?, ?)",
                               [(r["id"], int(r["id"] == active), json.dumps(r)) for r in records])
                db.execute("UPDATE rollouts SET active = 0 WHERE id IS NOT ?", (active,))
                if reset:
                    db.execute("DELETE FROM pins")
                start, self._seq = self._seq, self._seq + len(rows)
                db.executemany("INSERT OR REPLACE INTO pins VALUES (?, ?, ?)",
                               [(s, v, start + i) for i, (s, v) in enumerate(rows)])
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def forget(self) -> None:
        """Start over (the server was started with another model than the state's)."""
        with self._lock:
            self._db.executescript("DELETE FROM meta; DELETE FROM rollouts; DELETE FROM pins;")

    def close(self) -> None:
        with self._lock:
            self._db.close()
