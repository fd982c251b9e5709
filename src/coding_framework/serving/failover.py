"""Failover: while every replica of the champion is unhealthy, its traffic goes to the previous champion.

``previous`` is a version the server keeps loaded for this (``failover.previous``, the registry alias
``previous`` of a ``models:/`` champion, or the champion a promotion on this server replaced). Once every
champion replica has been out of rotation for ``after_s`` and ``previous`` has a healthy one, the
champion's traffic is routed to ``previous`` (logged and counted as a failover); it fails back as soon as
a champion replica is healthy again. Before ``after_s`` has passed, a request the champion cannot serve
at all (no healthy replica: a 429) is answered by ``previous`` instead, so clients see neither a 5xx nor
that 429.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from coding_framework.config.serving import FailoverConfig
from coding_framework.logs import get_logger

__all__ = ["Failover"]

log = get_logger(__name__)


class Failover:
    """Decides, per request, whether the champion's traffic goes to ``previous``."""

    def __init__(self, config: FailoverConfig, pools: Mapping[str, Any],
                 on_switch: Callable[[str, str], None]) -> None:
        self.config, self._pools, self._on_switch = config, pools, on_switch
        self.previous: str | None = None
        self.active = False
        self._down_since: float | None = None

    def _healthy(self, version: str | None) -> bool:
        pool = self._pools.get(version) if version is not None else None
        return pool is not None and pool.healthy > 0

    def target(self, champion: str) -> str:
        """The version that answers the champion's traffic now."""
        if self.previous is None or self.previous == champion:
            return champion
        if self._healthy(champion):
            if self.active:
                self.active = False
                log.warning("failback", champion=champion, previous=self.previous)
                self._on_switch(self.previous, champion)
            self._down_since = None
            return champion
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
        if not self.active and now - self._down_since >= self.config.after_s and self._healthy(self.previous):
            self.active = True
            log.warning("failover", champion=champion, previous=self.previous,
                        down_s=round(now - self._down_since, 2))
            self._on_switch(champion, self.previous)
        return self.previous if self.active else champion

    def rescue(self, version: str, champion: str) -> str | None:
        """The version to retry a request on that ``version`` could not serve: ``previous`` when
        ``version`` is the champion, it has no healthy replica and ``previous`` has one; else None."""
        if version != champion or self.previous in (None, champion) or self._healthy(champion):
            return None
        return self.previous if self._healthy(self.previous) else None
