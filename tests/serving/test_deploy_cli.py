"""`coding-framework deploy`: against the real model server, and its error paths against a small real
HTTP server that plays scripted answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest

from coding_framework.config.serving import ServingConfig
from coding_framework.config.training import TrackingConfig
from coding_framework.embedded import ensure_embedded_model
from coding_framework.models.registry import TRACKING_ENV
from coding_framework.problems.sources import load_source
from coding_framework.serving import ServerThread
from coding_framework.testing.models import tiny_model_dir
from coding_framework.training.run.gate import GateResult
from coding_framework.training.run.tracking import MLflowTracker


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coding_framework.cli", "deploy", *args],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **(env or {})})


def _one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


def _status(status: str, weight: int) -> dict[str, Any]:
    arm = {"requests": 10, "graded": 4, "pass_rate": 0.5, "errors": 0, "latency_ms": {}, "tokens": 40}
    return {"id": "ro-1", "status": status, "strategy": "canary", "candidate_version": "c@1",
            "champion_version": "a@1", "weights": {"a@1": 100 - weight, "c@1": weight},
            "arms": {"a@1": arm, "c@1": arm}, "reason": "" if status == "running" else "scripted end"}


class _Scripted(BaseHTTPRequestHandler):
    """POST /v1/rollouts: 201 (candidate 'busy': 409, 'html': a 502 without JSON); GET: running, then
    rolled back on the third poll. Records the Authorization headers and the candidates."""

    polls = 0
    auth: ClassVar[list[str | None]] = []
    candidates: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).auth.append(self.headers.get("Authorization"))
        type(self).candidates.append(body["candidate"])
        if body["candidate"] == "busy":
            self._send(409, {"error": {"message": "rollout ro-0 is still running", "type": "x"}})
        elif body["candidate"] == "html":
            self._send(502, None)
        else:
            self._send(201, _status("running", body.get("steps", [10])[0]))

    def do_GET(self) -> None:
        type(self).polls += 1
        self._send(200, _status("rolled_back" if type(self).polls >= 3 else "running", 10))

    def _send(self, code: int, payload: dict[str, Any] | None) -> None:
        data = json.dumps(payload).encode() if payload is not None else b"<html>bad gateway</html>"
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[str]:
    _Scripted.polls, _Scripted.auth, _Scripted.candidates = 0, [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_bad_input_and_an_unreachable_server_are_one_line_errors() -> None:
    _one_line_error(_cli("x", "--steps", "50,10"), "--steps", "strictly increasing")
    _one_line_error(_cli("x", "--steps", "10,fifty"), "comma-separated")
    _one_line_error(_cli("x", "--strategy", "yolo"), "unknown strategy")
    _one_line_error(_cli("x", "--server", "http://127.0.0.1:9"), "cannot reach the server")


def test_http_errors_are_one_line_errors(scripted: str) -> None:
    _one_line_error(_cli("busy", "--server", scripted), "409", "still running")
    _one_line_error(_cli("html", "--server", scripted), "502")


def test_wait_follows_the_rollout_and_prints_the_final_status_last(scripted: str) -> None:
    result = _cli("cand", "--server", scripted, "--steps", "20,100", "--wait", "--poll-interval", "0.05",
                  env={"CODING_FRAMEWORK_ADMIN_KEY": "k-env"})
    assert result.returncode == 0, result.stderr
    final = json.loads(result.stdout.strip().splitlines()[-1])
    assert final["status"] == "rolled_back" and _Scripted.polls == 3
    assert "scripted end" in result.stderr  # the progress display, on stderr
    assert _Scripted.auth == ["Bearer k-env"]


def test_wait_gives_up_after_the_timeout(scripted: str) -> None:
    _Scripted.polls = -10_000
    result = _cli("cand", "--server", scripted, "--wait", "--poll-interval", "0.2", "--timeout", "1",
                  "--admin-key", "k")
    assert result.returncode == 1
    assert json.loads(result.stdout.strip().splitlines()[-1])["status"] == "running"


@pytest.fixture(scope="module")
def gated_registry(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real SQLite registry with two versions of `gen`, registered as the trainer registers its final model
    (``log_model(challenger=gate.passed, tags=gate.tags())``): 1 failed its gate, 2 passed (`challenger`)."""
    root = tmp_path_factory.mktemp("gated")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    (root / "run").mkdir()
    tracker = MLflowTracker(TrackingConfig(mlflow_uri=uri), root / "run", system_metrics_interval_s=None)
    model = tiny_model_dir(root / "model")
    for passed, after, reason in ((False, 0.1, "heldout: pass@1 fell 0.50 -> 0.10"),
                                  (True, 0.6, "every set passed")):
        gate = GateResult(passed=passed, before={"heldout": 0.5}, after={"heldout": after}, reason=reason,
                          sets={})
        tracker.log_model(model, "gen", challenger=gate.passed, tags=gate.tags())
    tracker.finish()
    return uri


@pytest.mark.slow
def test_a_version_that_failed_its_gate_is_deployed_only_with_force(gated_registry: str,
                                                                    scripted: str) -> None:
    env = {TRACKING_ENV: gated_registry}
    refused = _cli("models:/gen/1", "--server", scripted, env=env)
    _one_line_error(refused, "models:/gen/1 failed its regression gate (heldout: pass@1 fell 0.50 -> 0.10)",
                    "--force")
    assert _Scripted.candidates == []  # refused before anything reached the server
    forced = _cli("models:/gen/1", "--server", scripted, "--force", env=env)
    assert forced.returncode == 0, forced.stderr
    assert "warning: models:/gen/1 failed its regression gate" in forced.stderr
    passed = _cli("models:/gen@challenger", "--server", scripted, env=env)
    assert passed.returncode == 0 and "regression gate" not in passed.stderr, passed.stderr
    assert _Scripted.candidates == ["models:/gen/1", "models:/gen@challenger"]


def _wait_for_running_rollout(url: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if any(r["status"] == "running" for r in httpx.get(url + "/v1/rollouts").json()["data"]):
            return
        time.sleep(0.2)
    raise AssertionError("the rollout did not start within 120 s")


@pytest.mark.slow
def test_deploy_against_the_real_server() -> None:
    """The real server and local engine: a bad spec is a 400, a second rollout a 409, and an immediate
    rollout of the embedded model's directory is promoted by graded /v1/solve traffic. The champion has no
    graded history, so the candidate must pass something: a problem of a family the embedded model
    solves greedily in two drafts."""
    problem = {p.task_id: p for p in load_source("synthetic:heldout")}["synthetic/divisible_by/0907fef2be"]
    config = ServingConfig.model_validate({"port": 0, "rollout": {"min_graded": 2, "drain_s": 0},
                                           "solve": {"temperature": 0}})
    with ServerThread(config) as server:
        _one_line_error(_cli("/no/such/model", "--server", server.url), "400")
        solve = {"prompt": problem.prompt, "entry_point": problem.entry_point, "tests": problem.test_code,
                 "max_rounds": 2}
        stop = threading.Event()

        def traffic() -> None:
            with httpx.Client(base_url=server.url, timeout=120) as client:
                while not stop.is_set():
                    client.post("/v1/solve", json=solve)

        deployer = subprocess.Popen(
            [sys.executable, "-m", "coding_framework.cli", "deploy", str(ensure_embedded_model()), "--server",
             server.url, "--strategy", "immediate", "--wait", "--poll-interval", "0.2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sender = threading.Thread(target=traffic, daemon=True)
        try:
            _wait_for_running_rollout(server.url)  # the champion must have no graded history
            _one_line_error(_cli("embedded", "--server", server.url), "409")
            sender.start()
            out, err = deployer.communicate(timeout=240)
        finally:
            stop.set()
            deployer.kill()
        assert deployer.returncode == 0, err
        final = json.loads(out.strip().splitlines()[-1])
        assert final["status"] == "promoted", final
        assert final["arms"][final["candidate_version"]]["graded"] >= 2
        assert httpx.get(server.url + "/health").json()["champion"] == final["candidate_version"]


def test_abort_and_rollback_flags(server: ServerThread) -> None:
    _one_line_error(_cli("--server", server.url), "exactly one of SPEC")
    _one_line_error(_cli("x", "--rollback", "--server", server.url), "exactly one of SPEC")
    _one_line_error(_cli("x", "--probe-rate", "2", "--server", server.url), "need --probe")
    _one_line_error(_cli("x", "--on-inconclusive", "pray", "--server", server.url), "rollback or hold")
    _one_line_error(_cli("--abort", "ro-nope", "--server", server.url), "404", "no rollout")
    _one_line_error(_cli("--rollback", "--server", server.url), "409", "no previous version")
