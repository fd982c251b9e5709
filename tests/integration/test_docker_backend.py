"""The docker backend against a real Docker engine, started here the way scripts/docker_engine.sh does it.

The engine is private to this module (its data-root, socket and pidfile live in a temporary folder), runs
with `--bridge=none --iptables=false`, and its `python:3.11-slim` tag is a debootstrap-built Debian
bookworm rootfs (cached in ~/.cache/coding-framework/docker), since no registry is reachable. Where the
script says no engine can run on this machine (exit status 3: not root, docker.io not installable, dockerd
refused the privileges it needs), every test is skipped with its reason; any other failure of the script
fails them. Afterwards the daemon is stopped and its folder removed; the tests check that no container
outlives its Sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.sandbox.test_adversarial import _jobs, _program
from tests.sandbox.test_adversarial import host_env as corpus_host
from tests.sandbox.test_sandbox import probe_job

from benchmarks.grading.adversarial_corpus import ATTACKS, HOST_SECRET_ENV
from coding_framework.config import SandboxConfig
from coding_framework.config.sandbox import ResourceLimits
from coding_framework.sandbox import Job, Sandbox

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.docker]
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "docker_engine.sh"
CANNOT_RUN_HERE = 3  # docker_engine.sh's exit status when this machine cannot run an engine at all


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("docker-engine")
    start = subprocess.run(["bash", str(SCRIPT), "start", str(folder)], capture_output=True, text=True)
    if start.returncode != 0:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True)
        reason = start.stderr.strip()[-1500:]
        if start.returncode == CANNOT_RUN_HERE:
            pytest.skip(reason.splitlines()[-1])
        pytest.fail(f"scripts/docker_engine.sh start failed (exit {start.returncode}):\n{reason}")
    host = f"unix://{folder}/docker.sock"
    previous = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = host
    try:
        yield host
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], check=True, capture_output=True)
        if previous is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous
    assert not folder.exists()


def test_the_submission_runs_as_nobody(engine: str) -> None:
    with Sandbox(SandboxConfig(backend="docker", workers=1)) as sb:
        result = sb.run(probe_job("import os\nreturn os.getuid() == 65534"))
    assert result.passed, result.summary


def test_canonical_humaneval_solutions_pass_through_the_cli(engine: str, tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "coding_framework.cli", "evaluate", "--benchmark", "humaneval", "--canonical",
         "--backend", "docker", "--workers", "4", "--timeout", "10", "--results", str(results)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 164
    assert [r["task_id"] for r in rows if not r["passed"]] == []
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"pass@1": 1.0}
    assert _docker("ps", "-aq").strip() == "", "a worker container outlived its Sandbox"


host_env = corpus_host  # the corpus's module fixture: a host folder, secret, TCP server and sentinel


def test_the_whole_adversarial_corpus_runs_in_one_evaluation(engine: str, host_env: dict) -> None:
    jobs, names = [], []
    for attack in ATTACKS:
        for job in _jobs(_program(attack.program, host_env)):
            jobs.append(job)
            names.append(attack.name)
    with Sandbox(SandboxConfig(backend="docker")) as sb:
        results = sb.run_many(jobs)
    assert len(results) == len(jobs)
    lost = [n for n, r in zip(names, results, strict=True) if r.error_type == "SandboxInfrastructureError"]
    assert lost == []
    fooled = sorted({n for n, r in zip(names, results, strict=True) if r.passed})
    assert fooled == [], f"attacks scored as passing: {fooled}"
    assert HOST_SECRET_ENV in os.environ  # what env_secrets and read_proc look for was there to find
    by_name = {n: r for n, r in zip(names, results, strict=True)}
    assert by_name["memory_bomb"].status == "memory"
    assert by_name["infinite_loop"].status == "timeout"
    assert host_env["sentinel"].poll() is None, "the host sentinel process was killed"
    assert host_env["hits"] == [], "the sandbox reached a host TCP server"
    assert not list(Path(host_env["host_dir"]).glob("pwned*"))
    assert _docker("ps", "-aq").strip() == ""


def test_the_judge_is_closed_to_the_submission_through_proc(engine: str) -> None:
    probe = (
        "import os\ndef add(a, b):\n    seen = []\n"
        "    for name in ('mem', 'environ', 'maps', 'fd/1'):\n"
        "        try:\n            open('/proc/1/' + name, 'rb').close()\n            seen.append(name)\n"
        "        except OSError:\n            pass\n"
        "    return [seen, 'HOME' in os.environ or 'PATH' in os.environ]\n"
    )
    job = Job(program=probe, test_code="assert add(1, 2) == [[], False]\n", entry_point="add",
              limits=ResourceLimits(timeout_s=10))  # fmt: skip
    with Sandbox(SandboxConfig(backend="docker", workers=1)) as sb:
        result = sb.run(job)
    assert result.passed, result.summary
