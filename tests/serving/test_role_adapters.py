"""Serving per role: a model directory with a Generator and a Reviewer LoRA adapter is one version whose
checksum covers the base and both adapters; through the real server each role's calls give, token for token
at T=0, what peft's own loading of that role's adapter alone gives; bad roles are a 400 with a JSON body."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel

from coding_framework.config.policies import PoliciesConfig
from coding_framework.config.serving import PoolConfig, ServingConfig, SolveConfig
from coding_framework.llm.adapters import RoleAdapters
from coding_framework.llm.local import LocalEngine
from coding_framework.models import ADAPTER_FILE, resolve_model
from coding_framework.serving import ServerThread
from tests.serving.conftest import assert_openai_error, chat_body
from tests.serving.role_models import MAX_TOKENS, PROMPT, ROLES, build_per_role_dir, reference


@pytest.fixture(scope="module")
def per_role_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_per_role_dir(tmp_path_factory.mktemp("per-role") / "per-role")


@pytest.fixture(scope="module")
def expected(per_role_dir: Path) -> dict[str | None, tuple[str, int]]:
    out = {role: reference(per_role_dir, role, PROMPT, MAX_TOKENS) for role in (*ROLES, None)}
    # The test can fail: each adapter decodes differently from the other and from the base.
    assert len({text for text, _ in out.values()}) == 3, out
    return out


@pytest.fixture(scope="module")
def role_server(per_role_dir: Path) -> Iterator[ServerThread]:
    solve = SolveConfig(reviewer="llm", temperature=0.0, max_new_tokens=24)
    with ServerThread(ServingConfig(port=0, model=str(per_role_dir), solve=solve)) as s:
        yield s


def _chat(client: httpx.Client, **extra: object) -> httpx.Response:
    return client.post("/v1/chat/completions",
                       json=chat_body(PROMPT, max_tokens=MAX_TOKENS, temperature=0.0, **extra))


def _answer(response: httpx.Response) -> tuple[str, int]:
    assert response.status_code == 200, response.text
    body = response.json()
    return body["choices"][0]["message"]["content"], body["usage"]["completion_tokens"]


def test_a_per_role_version_is_the_base_and_every_adapter(per_role_dir: Path, tmp_path: Path) -> None:
    version = resolve_model(str(per_role_dir))
    assert [a.name for a in version.adapters] == list(ROLES)
    for adapter in version.adapters:
        digest = hashlib.sha256((per_role_dir / "adapters" / adapter.name / ADAPTER_FILE).read_bytes())
        assert adapter.sha256 == digest.hexdigest()
        assert adapter.path == per_role_dir / "adapters" / adapter.name
    # Another training that differs only in the Reviewer adapter is another version.
    other = tmp_path / "other"
    shutil.copytree(per_role_dir, other)
    reviewer = other / "adapters" / "reviewer" / ADAPTER_FILE
    tensors = load_file(str(reviewer))
    first = sorted(tensors)[0]
    tensors[first] = tensors[first] + 1e-3
    save_file(tensors, str(reviewer))
    changed = resolve_model(str(other))
    assert changed.checksum != version.checksum and changed.id != version.id
    by_name = {a.name: a.sha256 for a in changed.adapters}
    before = {a.name: a.sha256 for a in version.adapters}
    assert by_name["generator"] == before["generator"] and by_name["reviewer"] != before["reviewer"]
    # What an adapter computes with (its rank/alpha config) is part of the version; where it was made is not.
    config_path = other / "adapters" / "generator" / "adapter_config.json"
    config = json.loads(config_path.read_text())
    config["base_model_name_or_path"] = "/elsewhere"
    config["target_modules"] = list(reversed(config["target_modules"]))
    config_path.write_text(json.dumps(config))
    assert resolve_model(str(other)).checksum == changed.checksum
    config["lora_alpha"] = 16
    config_path.write_text(json.dumps(config))
    assert resolve_model(str(other)).checksum != changed.checksum


def test_each_roles_calls_run_through_its_adapter(role_server: ServerThread, per_role_dir: Path,
                                                   expected: dict[str | None, tuple[str, int]]) -> None:
    with httpx.Client(base_url=role_server.url, timeout=120) as client:
        assert _answer(_chat(client, role="generator")) == expected["generator"]
        assert _answer(_chat(client, role="reviewer")) == expected["reviewer"]
        assert _answer(_chat(client)) == expected["generator"]  # a call without a role is a Generator call
        streamed = client.post("/v1/chat/completions", json=chat_body(
            PROMPT, max_tokens=MAX_TOKENS, temperature=0.0, role="reviewer", stream=True))
        chunks = [json.loads(line[6:]) for line in streamed.text.splitlines()
                  if line.startswith("data: {")]
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        assert text == expected["reviewer"][0]

        # Both roles at once: the local engine decodes them as one mixed-adapter batch.
        def call(role: str) -> tuple[str, int]:
            return _answer(_chat(client, role=role))

        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(call, ["reviewer", "generator", "reviewer", "generator"]))
        assert got == [expected["reviewer"], expected["generator"]] * 2

        listed = client.get("/v1/models").json()["data"]
    [model] = listed
    version = resolve_model(str(per_role_dir))
    assert model["id"] == version.id and model["checksum"] == version.checksum
    assert model["adapters"] == {a.name: {"sha256": a.sha256} for a in version.adapters}
    assert model["roles"] == {"generator": "generator", "reviewer": "reviewer"}


def test_bad_roles_are_a_400_with_a_json_body(role_server: ServerThread, server: ServerThread) -> None:
    with httpx.Client(base_url=role_server.url, timeout=120) as client:
        for bad in ("executor", "Reviewer", ""):
            error = assert_openai_error(_chat(client, role=bad), 400)
            assert error["param"] == "role" and error["code"] == "unknown_role", error
            assert "generator" in str(error["message"]) and "reviewer" in str(error["message"])
        error = assert_openai_error(_chat(client, role=7), 400)
        assert error["param"] == "role"
    # A version without adapters serves every agent role with its one policy; unknown roles are still a 400.
    with httpx.Client(base_url=server.url, timeout=120) as client:
        plain = _answer(_chat(client))
        assert _answer(_chat(client, role="reviewer")) == plain
        assert assert_openai_error(_chat(client, role="critic"), 400)["code"] == "unknown_role"
        [model] = client.get("/v1/models").json()["data"]
        assert model["adapters"] == {} and model["roles"] == {}


def _local_solve(model_dir: Path, solve: SolveConfig, reviewer_role: str, body: dict[str, object]) -> str:
    """The serving workflow in-process on the per-role engine, the Reviewer calling as ``reviewer_role``."""
    from coding_framework.agents.factory import build_agents
    from coding_framework.config.agents import AgentsConfig
    from coding_framework.config.graph import GraphConfig
    from coding_framework.grading import Grader
    from coding_framework.graphs import build_graph
    from coding_framework.llm.chat_model import EngineChatModel
    from coding_framework.sandbox import Sandbox
    from coding_framework.serving.judges import judge_sandbox_config
    from coding_framework.serving.schemas import SolveRequest
    from coding_framework.serving.solve import problem_for

    engine = LocalEngine.from_pretrained(model_dir, device="cpu")
    model: PreTrainedModel = engine.model  # type: ignore[assignment]
    adapters = RoleAdapters(model, PoliciesConfig(mode="per_role_lora", rank=4, alpha=8))
    adapters.load(model_dir / "adapters")
    engine.attach_adapters(adapters)

    def chat(role: str) -> EngineChatModel:
        return EngineChatModel(engine=engine, max_new_tokens=solve.max_new_tokens,
                               temperature=solve.temperature, role=role)

    grader = Grader(sandbox=Sandbox(judge_sandbox_config(solve)))
    try:
        agents = build_agents(AgentsConfig.model_validate({"reviewer": {"backend": "llm"}}), grader,
                              mode="inference", chat_model=chat("generator"),
                              reviewer_model=chat(reviewer_role))
        graph = build_graph(agents, GraphConfig(max_rounds=2), name="reference")
        request = SolveRequest(prompt=str(body["prompt"]), entry_point=None, tests=str(body["tests"]),
                               session=None, max_rounds=2)
        problem = problem_for(request)
        assert problem is not None
        state = asyncio.run(graph.ainvoke({"problem": problem.model_dump()}))
        return str(state["code"])
    finally:
        grader.close()


@pytest.mark.slow
def test_solve_runs_the_generator_and_reviewer_through_their_adapters(
    role_server: ServerThread, per_role_dir: Path
) -> None:
    body = {"prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n",
            "tests": "assert add(1, 2) == 'never'", "max_rounds": 2}  # fails: the Reviewer is called
    with httpx.Client(base_url=role_server.url, timeout=300) as client:
        response = client.post("/v1/solve", json=body)
    assert response.status_code == 200, response.text
    out = response.json()
    assert out["rounds"] == 2 and out["passed"] is False
    solve = role_server.config.solve
    assert out["code"] == _local_solve(per_role_dir, solve, "reviewer", body)
    # Had the Reviewer run through the Generator's adapter, its review, and so the revision, would differ.
    assert out["code"] != _local_solve(per_role_dir, solve, "generator", body)


@pytest.mark.slow
def test_the_registry_attests_each_adapter(per_role_dir: Path, tmp_path: Path) -> None:
    from coding_framework.config.training import TrackingConfig
    from coding_framework.training.run.tracking import MLflowTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / "run").mkdir()
    MLflowTracker(TrackingConfig(mlflow_uri=uri), tmp_path / "run").log_model(per_role_dir, "roles")
    version = resolve_model("models:/roles@challenger", registry_uri=uri, cache_dir=tmp_path / "cache")
    local = resolve_model(str(per_role_dir))
    assert version.checksum == local.checksum and version.id == f"roles/1@{local.checksum[:12]}"
    assert [(a.name, a.sha256) for a in version.adapters] == [(a.name, a.sha256) for a in local.adapters]

    # Someone swaps the stored Reviewer adapter for another: the registry's tag catches it, by name.
    [stored] = (tmp_path / "run").glob(f"mlartifacts/models/*/artifacts/**/adapters/reviewer/{ADAPTER_FILE}")
    tensors = load_file(str(stored))
    save_file({k: v * 1.01 for k, v in tensors.items()}, str(stored))
    with pytest.raises(ValueError, match=r"attestation failed .*adapter_sha256\.reviewer.*'reviewer'"):
        resolve_model("models:/roles/1", registry_uri=uri, cache_dir=tmp_path / "fresh")
    shutil.rmtree(stored.parent)
    with pytest.raises(ValueError, match="attests adapter 'reviewer', the download has no such adapter"):
        resolve_model("models:/roles/1", registry_uri=uri, cache_dir=tmp_path / "fresher")
    # A tampered copy in the cache is fetched anew from the store, never served.
    assert version.model_dir is not None
    cached = version.model_dir / "adapters" / "generator" / ADAPTER_FILE
    cached.write_bytes(cached.read_bytes()[:-1] + b"\x00")
    with pytest.raises(ValueError, match="attestation failed"):
        resolve_model("models:/roles/1", registry_uri=uri, cache_dir=tmp_path / "cache")


@pytest.mark.slow
def test_a_worker_process_replica_gets_each_calls_role(
    per_role_dir: Path, expected: dict[str | None, tuple[str, int]]
) -> None:
    """``engine: process``: the role travels to the worker, whose own engine picks the adapter."""
    config = ServingConfig(port=0, model=str(per_role_dir), engine="process", pool=PoolConfig(replicas=1))
    with ServerThread(config) as s, httpx.Client(base_url=s.url, timeout=120) as client:
        assert _answer(_chat(client, role="reviewer")) == expected["reviewer"]
        assert _answer(_chat(client)) == expected["generator"]
        assert assert_openai_error(_chat(client, role="critic"), 400)["code"] == "unknown_role"
