"""The preflight keeps a model's role adapters: its token server, reached the way verl's client reaches it
(the call's role among the forwarded keywords), decodes through the role's adapter, and the audit
teacher-forces through that adapter too, so a per-role directory comes back with zero drift. Checked
against peft's own loading of the adapter alone, and against the base, which must differ (else the test
could not fail)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coding_framework.llm.base import SamplingParams
from coding_framework.llm.session import TokenSession
from coding_framework.problems.prompts import generation_messages
from coding_framework.training.trajectory import Trajectory
from coding_framework.training.verl.agent_loop import ServerManagerEngine
from coding_framework.training.verl.audit import drift
from coding_framework.training.verl.interop import to_data_proto
from coding_framework.training.verl.preflight import PreflightConfig, audit_batch
from coding_framework.training.verl.token_server import TokenServer, local_config
from tests.serving.role_models import alone, build_per_role_dir
from tests.training._episodes import ADD

MAX_TOKENS = 12
GREEDY = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0}


class ForwardingClient:
    """verl's ``LLMServerClient.generate`` minus the load balancer: extra keywords reach the server."""

    def __init__(self, server: TokenServer) -> None:
        self.server = server

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> Any:
        return await self.server.generate(request_id=request_id, prompt_ids=prompt_ids,
                                          sampling_params=sampling_params, image_data=None, video_data=None,
                                          **kwargs)


@pytest.fixture(scope="module")
def per_role_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_per_role_dir(tmp_path_factory.mktemp("per-role") / "per-role")


@pytest.fixture(scope="module")
def server(per_role_dir: Path) -> TokenServer:
    return TokenServer(local_config(per_role_dir))  # as start_token_servers builds each actor


async def _episode(server: TokenServer, send_role: bool) -> tuple[TokenSession, list[int], list[int]]:
    """One Generator call, as the agent loop makes it: (the session, its prompt ids, the generated ids)."""
    engine = ServerManagerEngine(ForwardingClient(server), server.engine.tokenizer, GREEDY, prompt_length=512,
                                 response_length=MAX_TOKENS, send_role=send_role)
    session = TokenSession(server.engine.tokenizer)
    session.add_messages(generation_messages(ADD))
    session.add_generation_prompt()
    prompt = list(session.ids)
    gen = await session.agenerate(engine, SamplingParams(max_new_tokens=MAX_TOKENS), role="generator")
    return session, prompt, list(gen.token_ids)


def _alone(model_dir: Path, role: str | None, prompt: list[int]) -> list[int]:
    gen = alone(model_dir, role).generate(prompt, SamplingParams(max_new_tokens=MAX_TOKENS, temperature=0.0))
    return list(gen.token_ids)


async def test_the_token_server_decodes_through_the_calls_role(server: TokenServer,
                                                                per_role_dir: Path) -> None:
    _, prompt, generated = await _episode(server, send_role=True)
    assert generated == _alone(per_role_dir, "generator", prompt)
    assert generated != _alone(per_role_dir, None, prompt)  # the adapter changes the decode
    _, _, unrouted = await _episode(server, send_role=False)  # no role sent: the base
    assert unrouted == _alone(per_role_dir, None, prompt)


async def test_the_audit_teacher_forces_through_the_trained_roles_adapter(server: TokenServer,
                                                                          per_role_dir: Path) -> None:
    session, _, _ = await _episode(server, send_role=True)
    row = Trajectory.from_session(session, reward=1.0, role="generator", task_id=ADD.task_id, group_id="g")
    batch = to_data_proto([row, row], pad_token_id=0)
    report, drift_tokens = audit_batch(batch, per_role_dir, tol=1e-4)
    assert drift_tokens == 0 and report.checked_tokens == 2 * row.calls[0].length, report.summary()
    base = alone(per_role_dir, None)
    _, base_drift = drift(batch, base.model, base.tokenizer, 1e-4)  # the base did not sample these
    assert base_drift > 0


def test_a_vllm_token_server_asks_for_each_roles_lora_module(per_role_dir: Path) -> None:
    """The endpoint engine of ``engine=vllm``: the served name may hold an ``@`` (``ResolvedModel.id``), and
    each role's calls ask for its adapter, served as a LoRA module (no request is made here)."""
    from coding_framework.models import resolve_model, role_adapter_map
    from coding_framework.training.verl.token_server import endpoint_config

    model = resolve_model(f"local:{per_role_dir}")
    server = TokenServer(endpoint_config("http://127.0.0.1:9", model.id, per_role_dir),
                         role_adapter_map(model.adapters))
    engine: Any = server.engine
    assert engine.api_url == "http://127.0.0.1:9/v1" and engine.model == model.id and "@" in model.id
    asked = [engine.model_for(r) for r in ("generator", "reviewer", None)]
    assert asked == ["generator", "reviewer", model.id]


def test_model_specs_the_preflight_takes_and_refuses() -> None:
    assert PreflightConfig(model="vllm:embedded").engine == "vllm"
    assert PreflightConfig(model="local:/m", engine="vllm").engine == "local"  # the prefix wins
    assert str(PreflightConfig(model="models:/coder@champion").model) == "models:/coder@champion"
    with pytest.raises(ValueError, match="endpoint: the token-exactness audit"):
        PreflightConfig(model="openai:http://h:8000/v1@m")


@pytest.mark.slow  # a local Ray cluster, verl's AgentLoopManager and two workers (~40 s)
def test_verl_preflight_on_a_per_role_directory_has_no_drift(per_role_dir: Path, tmp_path: Path) -> None:
    """The real command: the token servers and the audit both run the Generator's adapter (each checked
    against peft and the base above), so the recorded logprobs match the teacher-forced ones."""
    import json

    from typer.testing import CliRunner

    from coding_framework.cli.main import app

    result = CliRunner().invoke(app, ["verl-preflight", "--model", f"local:{per_role_dir}", "--problems", "1",
                                      "--n", "2", "--workers", "2", "--response-length", "256",
                                      "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["adapters"] == ["generator", "reviewer"] and report["trajectories"] == 2
    assert report["drift_tokens"] == 0 and report["masks_consistent"], report
