"""Recording rollout hooks (a real object, no mocks) and a traffic driver for the real RolloutManager."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from coding_framework.serving.rollouts.manager import RolloutManager, Route
from coding_framework.serving.rollouts.outcomes import Outcome


@dataclass
class RecordingHooks:
    """Deploys a spec as the version id ``<spec>@0000``; records every call."""

    registry: dict[str, tuple[str, int, str | None]] = field(default_factory=dict)
    deployed: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)

    async def deploy(self, spec: str) -> str:
        if spec.startswith("bad"):
            raise ValueError(f"cannot resolve {spec!r}")
        self.deployed.append(spec)
        return f"{spec}@0000"

    async def retire(self, version_id: str) -> None:
        self.retired.append(version_id)

    def registry_of(self, version_id: str) -> tuple[str, int, str | None] | None:
        return self.registry.get(version_id)


@dataclass
class Traffic:
    """Simulated clients: each request routes, then reports its outcome like the server does.

    ``pass_rates`` / ``error_rates`` per version id; graded requests are answered (the shadow too).
    """

    manager: RolloutManager
    pass_rates: dict[str, float]
    error_rates: dict[str, float] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    routes: list[Route] = field(default_factory=list)

    def request(self, session: str | None = None, graded: bool = True) -> Route:
        route = self.manager.route(session)
        self.routes.append(route)
        for version in filter(None, (route.version, route.shadow)):
            error = self.rng.random() < self.error_rates.get(version, 0.0)
            self.manager.observe(version, latency_s=0.01 + self.rng.random() / 100, error=error, tokens=20)
            if graded and not error:
                passed = self.rng.random() < self.pass_rates[version]
                self.manager.observe_grade(version, Outcome.PASSED if passed else Outcome.FAILED)
        return route

    def run_until_done(self, rollout_id: str, limit: int, graded: bool = True) -> dict:
        for i in range(limit):
            self.request(f"session-{i}", graded)
            if self.manager.status(rollout_id)["status"] != "running":
                break
        return self.manager.status(rollout_id)
