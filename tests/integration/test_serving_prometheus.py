"""/metrics read back through a real Prometheus: it scrapes the model server (with the admin key) and its
query API returns the request counts and the graded pass ratio the server was sent.

Prometheus is Debian's ``prometheus`` package: found on PATH, else installed with apt-get when running as
root (as CI does); the test skips only where it cannot be installed, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from tests.serving.conftest import ADMIN_KEY, assert_openai_error

from coding_framework.config.serving import ServingConfig, SolveConfig
from coding_framework.llm.vllm_server import free_port
from coding_framework.serving import ServerThread
from coding_framework.testing.upstream import MockUpstream

pytestmark = [pytest.mark.slow, pytest.mark.integration]

RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"


def _installable(package: str) -> bool:
    policy = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True).stdout
    return "Candidate: " in policy and "Candidate: (none)" not in policy


def _prometheus() -> str:
    found = shutil.which("prometheus")
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("no prometheus on PATH, and not root with apt-get to install it "
                    "(apt-get install prometheus)")
    if not _installable("prometheus"):
        subprocess.run(["apt-get", "update", "-q"], capture_output=True)
        if not _installable("prometheus"):
            pytest.skip("apt has no installable prometheus package here")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-q", "prometheus"], env=env, check=True, capture_output=True)
    found = shutil.which("prometheus")
    assert found, "apt-get installed prometheus but it is not on PATH"
    return found


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, ServerThread]]:
    binary = _prometheus()
    with MockUpstream(RIGHT, model="champ") as upstream:
        config = ServingConfig(port=0, model=upstream.spec, solve=SolveConfig(max_rounds=1),
                               state_dir=tmp_path / "state")
        with ServerThread(config, admin_key=ADMIN_KEY) as server:
            port = free_port()
            scrape = {"global": {"scrape_interval": "1s"}, "scrape_configs": [{
                "job_name": "coding-framework", "metrics_path": "/metrics",
                "authorization": {"credentials": ADMIN_KEY},
                "static_configs": [{"targets": [f"127.0.0.1:{server.config.port}"]}]}]}
            (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(scrape))
            proc = subprocess.Popen(
                [binary, f"--config.file={tmp_path / 'prometheus.yml'}",
                 f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                yield f"http://127.0.0.1:{port}", server
            finally:
                proc.terminate()
                proc.wait(timeout=30)


def _query(prometheus: str, expr: str, want: float, timeout_s: float = 60) -> dict[str, float]:
    """Poll Prometheus until ``expr`` has a series at ``want``; the values by version label."""
    deadline, seen = time.monotonic() + timeout_s, {}
    while time.monotonic() < deadline:
        try:
            data = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=5).json()
        except httpx.HTTPError:
            data = {}
        if data.get("status") == "success":
            seen = {r["metric"].get("version", ""): float(r["value"][1]) for r in data["data"]["result"]}
            if want in seen.values():
                return seen
        time.sleep(0.5)
    raise AssertionError(f"{expr} never reached {want}; last seen {seen}")


def test_prometheus_scrapes_requests_and_pass_ratio(prometheus: tuple[str, ServerThread]) -> None:
    url, server = prometheus
    with httpx.Client(base_url=server.url, timeout=60) as client:
        assert_openai_error(client.get("/metrics"), 401)
        for i in range(5):
            body = {"messages": [{"role": "user", "content": "add"}], "max_tokens": 8, "session_id": f"m{i}"}
            assert client.post("/v1/chat/completions", json=body).status_code == 200
        for _ in range(3):
            body = {"prompt": "Write add(a, b).", "entry_point": "add", "tests": "assert add(1, 2) == 3\n"}
            assert client.post("/v1/solve", json=body).json()["passed"] is True
        text = client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN_KEY}"}).text
    assert "# TYPE coding_framework_requests_total counter" in text
    assert 'coding_framework_graded_pass_ratio{source="client"' in text
    champion = server.app.state.server.rollouts.champion
    requests = _query(url, 'coding_framework_requests_total{outcome="ok"}', 8.0)
    assert requests == {champion: 8.0}
    ratio = _query(url, 'coding_framework_graded_pass_ratio{source="client"}', 1.0)
    assert ratio == {champion: 1.0}
    assert _query(url, "coding_framework_queue_depth", 0.0) == {"": 0.0}
    assert _query(url, "coding_framework_replica_healthy", 1.0) == {champion: 1.0}
