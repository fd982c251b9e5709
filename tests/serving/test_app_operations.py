"""Operating rollouts over real HTTP: probe-graded canaries with no client tests, abort and rollback with
their error bodies, a restart that resumes the rollout and its sessions, and failover to ``previous``.
Backends are real OpenAI-compatible upstreams (``MockUpstream``) whose answers are right or wrong."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.config.serving import FailoverConfig, PoolConfig, ServingConfig, SolveConfig
from coding_framework.serving import ServerThread
from coding_framework.testing.upstream import MockUpstream
from tests.serving.conftest import assert_openai_error

pytestmark = pytest.mark.slow

RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
POLICY = RolloutPolicy(margin=0.3, min_graded=10, drain_s=0, steps=[50, 100], probe_concurrency=4)
_sessions = itertools.count()


@pytest.fixture
def champion() -> Iterator[MockUpstream]:
    with MockUpstream(RIGHT, model="champ") as up:
        yield up


def _config(champion: MockUpstream, tmp_path: Path, **extra: Any) -> ServingConfig:
    return ServingConfig(port=0, model=champion.spec, rollout=POLICY, solve=SolveConfig(max_rounds=1),
                         mlflow_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", state_dir=tmp_path / "state",
                         **extra)


@pytest.fixture
def probe_file(tmp_path: Path) -> str:
    problem = {"task_id": "probe/add", "prompt": "Write add(a, b).", "entry_point": "add",
               "test_code": "assert add(1, 2) == 3\nassert add(0, 0) == 0\n", "prompt_is_code": False}
    path = tmp_path / "probes.jsonl"
    path.write_text(json.dumps(problem) + "\n")
    return str(path)


def _wait(client: httpx.Client, rollout: str, limit_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + limit_s
    while (status := client.get(f"/v1/rollouts/{rollout}").json())["status"] == "running":
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    return status


def _solve(client: httpx.Client, session: str | None = None) -> httpx.Response:
    body = {"prompt": "Write add(a, b).", "entry_point": "add", "tests": "assert add(1, 2) == 3\n",
            "session_id": session or f"s{next(_sessions)}"}
    return client.post("/v1/solve", json=body)


def test_chat_only_canaries_are_judged_by_probes(champion: MockUpstream, tmp_path: Path,
                                                 probe_file: str) -> None:
    probe = {"source": probe_file, "rate_per_s": 50}
    with (ServerThread(_config(champion, tmp_path)) as server,
          httpx.Client(base_url=server.url, timeout=60) as client):
        with MockUpstream(WRONG, model="broken") as broken:
            started = client.post("/v1/rollouts", json={"candidate": broken.spec, "probe": probe})
            assert started.status_code == 201, started.text
            bad = _wait(client, started.json()["id"])
        with MockUpstream(RIGHT, model="good") as good:
            good_id = client.post("/v1/rollouts", json={"candidate": good.spec, "probe": probe}).json()["id"]
            promoted = _wait(client, good_id)
        metrics = client.get("/metrics").text
    assert bad["status"] == "rolled_back" and "pass-rate" in bad["reason"], bad["reason"]
    assert promoted["status"] == "promoted", promoted["reason"]
    for status in (bad, promoted):
        cand = status["arms"][status["candidate_version"]]
        assert cand["graded"] == 0 and cand["probe_graded"] >= 1  # no client grades: probes alone
        assert status["srm"]["log_evidence"] == 0.0
        assert sum(status["probe_pairs"].values()) == cand["probe_graded"]  # each probe graded as a pair
    assert promoted["arms"][promoted["candidate_version"]]["probe_pass_rate"] == 1.0
    ratios = {(m.labels["version"], m.labels["source"]): m.value
              for family in text_string_to_metric_families(metrics) for m in family.samples
              if m.name == "coding_framework_graded_pass_ratio"}
    assert ratios[promoted["candidate_version"], "probe"] == 1.0


def test_bad_rollout_requests_are_400s(champion: MockUpstream, tmp_path: Path) -> None:
    with (ServerThread(_config(champion, tmp_path)) as server,
          httpx.Client(base_url=server.url, timeout=60) as client):
        for body, param in (({"candidate": champion.spec, "probe": {"source": "no-such-bench"}}, "probe"),
                            ({"candidate": champion.spec, "probe": {"source": "synthetic", "rate_per_s": 0}},
                             "probe.rate_per_s"),
                            ({"candidate": champion.spec, "max_graded": 1.5}, "max_graded"),
                            ({"candidate": champion.spec, "on_inconclusive": "pray"}, "on_inconclusive")):
            assert assert_openai_error(client.post("/v1/rollouts", json=body), 400)["param"] == param


def test_abort_and_rollback(champion: MockUpstream, tmp_path: Path) -> None:
    with (ServerThread(_config(champion, tmp_path)) as server,
          httpx.Client(base_url=server.url, timeout=60) as client, MockUpstream(RIGHT, model="new") as new):
        original = client.get("/health").json()["champion"]
        missing = assert_openai_error(client.post("/v1/rollouts/ro-nope/abort"), 404)
        assert missing["code"] == "rollout_not_found"
        assert assert_openai_error(client.post("/v1/rollback"), 409)["code"] == "no_previous"
        started = client.post("/v1/rollouts", json={"candidate": new.spec}).json()
        aborted = client.post(f"/v1/rollouts/{started['id']}/abort")
        assert aborted.status_code == 200 and aborted.json()["status"] == "aborted"
        assert aborted.json()["weights"][started["candidate_version"]] == 0
        assert assert_openai_error(client.post(f"/v1/rollouts/{started['id']}/abort"), 409)["code"] == \
            "rollout_finished"
        time.sleep(0.3)  # the aborted candidate drains and retires
        immediate = client.post("/v1/rollouts", json={"candidate": new.spec, "strategy": "immediate"}).json()
        while client.get(f"/v1/rollouts/{immediate['id']}").json()["status"] == "running":
            assert _solve(client).status_code == 200
        assert client.get("/health").json()["champion"] == immediate["candidate_version"]
        rolled = client.post("/v1/rollback")
        assert rolled.status_code == 200, rolled.text
        assert rolled.json()["champion_version"] == original
        assert client.get("/health").json()["champion"] == original
        assert {_solve(client).json()["model_version"] for _ in range(3)} == {original}


def test_a_restart_resumes_the_rollout_and_its_sessions(champion: MockUpstream, tmp_path: Path) -> None:
    with MockUpstream(RIGHT, model="cand") as cand:
        with (ServerThread(_config(champion, tmp_path)) as server,
              httpx.Client(base_url=server.url, timeout=60) as client):
            started = client.post("/v1/rollouts", json={"candidate": cand.spec, "steps": [50, 100]}).json()
            pinned: dict[str, str] = {}
            # the split hashes the session with the candidate's version (its port varies): sample on
            # until both arms hold a session, at least 8 in all (P(64 on one arm) = 2^-63)
            for i in range(64):
                pinned[f"p{i}"] = _solve(client, f"p{i}").json()["model_version"]
                if i >= 7 and len(set(pinned.values())) == 2:
                    break
            before = client.get(f"/v1/rollouts/{started['id']}").json()
        with (ServerThread(_config(champion, tmp_path)) as server,
              httpx.Client(base_url=server.url, timeout=60) as client):
            after = client.get(f"/v1/rollouts/{started['id']}").json()
            again = {s: _solve(client, s).json()["model_version"] for s in pinned}
    assert after["status"] == "running" and after["decisions"][-1]["action"] == "resume"
    for version, arm in before["arms"].items():  # counts kept (latency windows are not)
        assert {k: v for k, v in after["arms"][version].items() if k != "latency_ms"} == \
            {k: v for k, v in arm.items() if k != "latency_ms"}
    assert again == pinned and len(set(pinned.values())) == 2


def test_failover_to_previous_and_back(champion: MockUpstream, tmp_path: Path) -> None:
    with MockUpstream(RIGHT, model="previous") as previous:
        config = _config(champion, tmp_path, failover=FailoverConfig(enabled=True, previous=previous.spec,
                                                                     after_s=0.3),
                         pool=PoolConfig(health_interval_s=0.1))
        with (ServerThread(config) as server, httpx.Client(base_url=server.url, timeout=60) as client):
            body = {"messages": [{"role": "user", "content": "add"}], "max_tokens": 8}

            def answered_by() -> str:
                response = client.post("/v1/chat/completions", json=body)
                assert response.status_code == 200, response.text
                return response.headers["x-model-version"]

            champ = answered_by()
            champion.status = 500  # its replica fails calls and health probes
            during = [answered_by() for _ in range(20)]
            time.sleep(0.5)
            settled = [answered_by() for _ in range(5)]
            champion.status = 200
            time.sleep(0.5)
            back = [answered_by() for _ in range(5)]
            metrics = client.get("/metrics").text
    assert champ.startswith("champ") and set(settled) == {during[-1]} and not during[-1].startswith("champ")
    assert set(back) == {champ}
    assert "coding_framework_failovers_total" in metrics and "coding_framework_failover_active 0.0" in metrics
