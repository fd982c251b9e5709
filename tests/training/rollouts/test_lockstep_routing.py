"""A rollout on a server that routes calls by role (a vLLM rollout engine's per-version LoRA names) must keep
each call's role: without it every Generator call reached the base model while the adapter trained (the
auditor caught it as 1,402 offending tokens in a quickstart run)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from coding_framework.llm.base import Generation, SamplingParams
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.training.rollouts.episodes import LockstepEngine, run_lockstep


class RoleRoutedEngine(ScriptedEngine):
    """Routes like ``OpenAICompatibleEngine``: ``role_models`` names the model each role asks for."""

    def __init__(self, role_models: dict[str, str]) -> None:
        super().__init__(respond=lambda _: "def f():\n    return 1\n")
        self.role_models = role_models
        self.roles: list[str | None] = []

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        self.roles += [params.role] * len(prompts)
        return super().generate_batch(prompts, params)


class _Graph:
    def __init__(self, engine: LockstepEngine) -> None:
        self.engine = engine

    async def ainvoke(self, role: dict[str, str]) -> dict[str, str]:
        params = SamplingParams(max_new_tokens=4, role=role["role"])
        await self.engine.agenerate([1, 2, 3], params)
        return role


def _roles(engine: ScriptedEngine) -> list[str | None]:
    lockstep = LockstepEngine(engine, seed=0, episodes=2)
    asyncio.run(run_lockstep(_Graph(lockstep), [{"role": "generator"}, {"role": "reviewer"}], lockstep))
    return engine.roles  # type: ignore[attr-defined, no-any-return]


def test_a_role_routed_server_gets_each_calls_role() -> None:
    assert sorted(_roles(RoleRoutedEngine({"generator": "policy-ab12cd-v3"}))) == ["generator", "reviewer"]


def test_an_engine_without_routing_decodes_one_wave_without_roles() -> None:
    engine = RoleRoutedEngine({})
    assert _roles(engine) == [None, None]
