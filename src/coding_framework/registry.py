"""One shape for every registry (algorithms, rewards, benchmarks, synthetic families, sandbox backends).

A registry is a dict of name -> entry with two rules: ``register(name)`` rejects a name that another
entry holds (registering the same entry again is a no-op, so a re-imported module is harmless), and
``resolve(name)`` answers a miss with an error that lists the valid names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

__all__ = ["Registry"]

T = TypeVar("T")
E = TypeVar("E")


class Registry(dict[str, T]):
    """Entries of one ``kind`` (e.g. "reward"); a miss raises ``miss`` (a ValueError subclass)."""

    def __init__(self, kind: str, plural: str | None = None, miss: type[ValueError] = ValueError) -> None:
        super().__init__()
        self.kind, self.plural, self.miss = kind, plural or f"{kind}s", miss

    def add(self, name: str, entry: T) -> T:
        if name in self and self[name] is not entry:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self[name] = entry
        return entry

    def register(self, name: str) -> Callable[[E], E]:
        """A decorator that registers its target under ``name``."""

        def decorator(entry: E) -> E:
            self.add(name, cast(T, entry))  # E is the decorated T itself (a class or a factory)
            return entry

        return decorator

    def resolve(self, name: str) -> T:
        if name not in self:
            raise self.miss(f"unknown {self.kind} {name!r}; valid {self.plural}: {sorted(self)}")
        return self[name]
