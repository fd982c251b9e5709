"""Rollouts end to end over real HTTP: graded /v1/solve traffic drives canary and shadow rollouts, a broken
candidate is rolled back, and after a rollback no request reaches it. Backends are real OpenAI-compatible
upstreams (``MockUpstream``) whose answers are right or wrong, so the verdicts are known in advance."""

from __future__ import annotations

import concurrent.futures
import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mlflow.tracking import MlflowClient

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.config.serving import ServingConfig, SolveConfig
from coding_framework.serving import ServerThread
from coding_framework.testing.upstream import MockUpstream

pytestmark = pytest.mark.slow

RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
POLICY = RolloutPolicy(margin=0.3, min_graded=10, drain_s=0, steps=[50, 100], shadow_share=1.0, error_burst=3)
_sessions = itertools.count()


@pytest.fixture
def champion() -> Iterator[MockUpstream]:
    with MockUpstream(RIGHT, model="champ") as up:
        yield up


@pytest.fixture
def server(champion: MockUpstream, tmp_path) -> Iterator[ServerThread]:
    config = ServingConfig(
        port=0,
        model=champion.spec,
        rollout=POLICY,
        solve=SolveConfig(max_rounds=1),
        mlflow_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
    )
    with ServerThread(config) as s:
        yield s


def _solve(client: httpx.Client) -> httpx.Response:
    body = {
        "prompt": "Write add(a, b).",
        "entry_point": "add",
        "tests": "assert add(1, 2) == 3\n",
        "session_id": f"s{next(_sessions)}",
    }
    return client.post("/v1/solve", json=body)


def _drive(
    server: ServerThread, candidate: str, strategy: str, limit: int = 400
) -> tuple[dict[str, Any], list]:
    """Start a rollout, send graded traffic until it ends; returns the final status and every response."""
    responses: list[httpx.Response] = []
    with (
        httpx.Client(base_url=server.url, timeout=120) as client,
        concurrent.futures.ThreadPoolExecutor(4) as pool,
    ):
        started = client.post("/v1/rollouts", json={"candidate": candidate, "strategy": strategy})
        assert started.status_code == 201, started.text
        rollout = started.json()["id"]
        status = started.json()
        while status["status"] == "running" and len(responses) < limit:
            responses += list(pool.map(lambda _: _solve(client), range(8)))
            status = client.get(f"/v1/rollouts/{rollout}").json()
    assert max(r.status_code for r in responses) < 500
    return status, responses


def test_canary_of_a_good_version_is_promoted(server: ServerThread, champion: MockUpstream) -> None:
    with MockUpstream(RIGHT, model="good") as good:
        status, _ = _drive(server, good.spec, "canary")
        assert status["status"] == "promoted", status
        with httpx.Client(base_url=server.url, timeout=60) as client:
            before = champion.requests
            answers = [_solve(client).json() for _ in range(10)]
    assert {a["model_version"] for a in answers} == {status["candidate_version"]}
    assert champion.requests == before
    assert status["arms"][status["candidate_version"]]["graded"] >= POLICY.min_graded
    run = MlflowClient(server.config.mlflow_uri).get_run(status["mlflow_run_id"])
    assert run.data.params  # the verdict and its figures landed in MLflow


def test_broken_canary_is_rolled_back_and_then_gets_no_request(server: ServerThread) -> None:
    with MockUpstream(WRONG, model="broken") as broken:
        status, responses = _drive(server, broken.spec, "canary")
        assert status["status"] == "rolled_back" and "pass-rate" in status["reason"], status
        reached = broken.requests
        with httpx.Client(base_url=server.url, timeout=60) as client:
            after = [_solve(client) for _ in range(20)]
        assert broken.requests == reached
    assert {r.json()["model_version"] for r in after} == {status["champion_version"]}
    assert all(r.json()["passed"] for r in after)
    assert status["candidate_version"] in {r.json()["model_version"] for r in responses}


def test_shadow_never_answers_the_client(server: ServerThread) -> None:
    with MockUpstream(WRONG, model="shadowed") as shadow:
        status, responses = _drive(server, shadow.spec, "shadow")
        assert status["status"] == "rolled_back", status
        assert shadow.requests > 0
    assert {r.json()["model_version"] for r in responses} == {status["champion_version"]}
    assert all(r.json()["passed"] for r in responses)


def test_erroring_candidate_is_rolled_back_without_grades(server: ServerThread) -> None:
    with MockUpstream(RIGHT, model="erroring", status=500) as failing:
        status, responses = _drive(server, failing.spec, "canary", limit=200)
        reached = failing.requests
        with httpx.Client(base_url=server.url, timeout=60) as client:
            after = [_solve(client) for _ in range(10)]
        assert failing.requests == reached
    assert status["status"] == "rolled_back" and "error" in status["reason"], status
    assert {r.status_code for r in responses} <= {200, 429} and {r.status_code for r in after} == {200}
