"""The adversarial corpus: every attack fails, in both test formats, and the host stays untouched."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchmarks.grading.adversarial_corpus import (
    ATTACKS,
    HOST_SECRET_ENV,
    TOY_ANSWERS,
    TOY_ASSERTS,
    TOY_CHECK,
    TOY_PROMPT,
)
from coding_framework.config.sandbox import ResourceLimits, SandboxConfig
from coding_framework.sandbox import Job, Sandbox

LIMITS = ResourceLimits(timeout_s=3.0, memory_mb=512)


@pytest.fixture(scope="module")
def host_env(tmp_path_factory):
    """The host the attacks aim at; workers started while it is up see its secret in their environment."""
    host_dir = tmp_path_factory.mktemp("host")
    secret = host_dir / "answers.json"
    secret.write_text(json.dumps(TOY_ANSWERS))
    previous = os.environ.get(HOST_SECRET_ENV)
    os.environ[HOST_SECRET_ENV] = json.dumps(TOY_ANSWERS)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(30)
    hits: list[bytes] = []

    def answer():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            data = conn.recv(100)
            hits.append(data)
            a, b = map(int, data.split(b","))
            conn.sendall(str(a + b).encode())
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    sentinel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield {
        "host_dir": host_dir,
        "secret": secret,
        "port": server.getsockname()[1],
        "sentinel": sentinel,
        "hits": hits,
    }
    sentinel.kill()
    server.close()
    if previous is None:
        del os.environ[HOST_SECRET_ENV]
    else:
        os.environ[HOST_SECRET_ENV] = previous


def _program(template: str, env: dict) -> str:
    return (
        template.replace("{host_dir}", str(env["host_dir"]))
        .replace("{secret}", str(env["secret"]))
        .replace("{port}", str(env["port"]))
        .replace("{sentinel}", str(env["sentinel"].pid))
    )


def _jobs(program: str) -> list[Job]:
    return [
        Job(program=program, test_code=TOY_ASSERTS, entry_point="add", test_format="asserts", limits=LIMITS),
        Job(
            program=TOY_PROMPT + program,
            test_code=TOY_CHECK,
            entry_point="add",
            test_format="check_function",
            prelude=TOY_PROMPT,
            limits=LIMITS,
        ),
    ]


def test_honest_solution_passes_both_formats(sandbox):
    results = sandbox.run_many(_jobs("def add(a, b):\n    return a + b\n"))
    assert [r.passed for r in results] == [True, True]
    assert [r.tests_total for r in results] == [3, 4]


@pytest.mark.slow
def test_no_attack_passes_and_host_is_untouched(host_env):
    jobs, names = [], []
    for attack in ATTACKS:
        for job in _jobs(_program(attack.program, host_env)):
            jobs.append(job)
            names.append(f"{attack.category}/{attack.name}/{job.test_format}")
    with Sandbox(SandboxConfig(workers=4)) as sandbox:  # its workers start with the host's secret set
        results = sandbox.run_many(jobs)
    fooled = [n for n, r in zip(names, results, strict=True) if r.passed]
    assert len(ATTACKS) >= 45
    assert fooled == [], f"attacks scored as passing: {fooled}"
    assert not list(Path(host_env["host_dir"]).glob("pwned*"))
    assert not Path("/tmp/pwned.txt").exists() and not Path("/work/main/pwned.txt").exists()
    assert host_env["sentinel"].poll() is None, "the host sentinel process was killed"
    assert host_env["hits"] == [], "the sandbox reached a host TCP server"


def test_attack_categories_cover_the_threat_model():
    categories = {a.category for a in ATTACKS}
    assert categories == {
        "early_exit",
        "fake_equality",
        "monkeypatch",
        "introspection",
        "fake_output",
        "processes",
        "flood",
        "data_access",
    }


@pytest.mark.parametrize(
    ("name", "expected_status"),
    [
        ("infinite_loop", "timeout"),
        ("memory_bomb", "memory"),
        ("os_exit_in_call", "crashed"),
        ("sys_exit_at_import", "error"),
        ("always_equal_object", "failed"),
        ("flood_stdout", "failed"),
    ],
)
def test_attacks_get_the_right_status(sandbox, host_env, name, expected_status):
    attack = next(a for a in ATTACKS if a.name == name)
    result = sandbox.run(_jobs(_program(attack.program, host_env))[0])
    assert result.status == expected_status, result.summary
    assert not result.passed
    if name == "flood_stdout":
        assert result.stdout_truncated and len(result.stdout) <= LIMITS.output_bytes


def test_host_process_survives_kill_everything(sandbox, host_env):
    attack = next(a for a in ATTACKS if a.name == "kill_everything")
    result = sandbox.run(_jobs(attack.program)[0])
    assert not result.passed
    assert host_env["sentinel"].poll() is None
    assert os.getpid() > 0


def test_a_run_that_locks_its_tmp_dirs_spoils_no_later_run():
    """The judge keeps /tmp/run between runs when it is untouched; a run that takes away its permissions
    (or leaves a locked directory behind) must not make the next, honest run on that worker fail."""
    lock = (
        "import os\nos.makedirs('/tmp/run/locked/deep')\nopen('/tmp/run/locked/deep/f', 'w').write('x')\n"
        "os.chmod('/tmp/run/locked/deep', 0)\nos.chmod('/tmp/run/locked', 0)\nos.chmod('/tmp/run', 0o500)\n"
        "def add(a, b):\n    return a + b\n"
    )
    honest = (
        "import os\ndef add(a, b):\n"
        "    return a + b if sorted(os.listdir('/tmp/run')) == ['stderr.txt', 'stdout.txt'] else None\n"
    )
    with Sandbox(SandboxConfig(workers=1)) as sandbox:
        jobs = [
            Job(program=p, test_code=TOY_ASSERTS, entry_point="add", limits=LIMITS) for p in (lock, honest)
        ]
        results = [sandbox.run(job) for job in jobs + jobs[1:]]
    assert [r.passed for r in results] == [True, True, True], [r.summary for r in results]
