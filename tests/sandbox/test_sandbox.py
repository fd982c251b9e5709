"""Isolation properties and structured results of the default (bwrap) backend."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.config.sandbox import ResourceLimits
from coding_framework.sandbox import BackendUnavailable, Job, Sandbox

PROBE_TEST = "assert probe() == True\n"


def probe_job(body: str, limits: ResourceLimits | None = None) -> Job:
    program = "def probe():\n" + "".join(f"    {line}\n" for line in body.strip().splitlines())
    return Job(program=program, test_code=PROBE_TEST, entry_point="probe", limits=limits)


@pytest.mark.parametrize(
    "body",
    [
        # the view of the file system holds the runtime and nothing of the project, data or home
        "import os\nreturn not any(os.path.exists(p) for p in ('/work', '/home', '/etc/passwd', '/proc/self', '/root/.cache'))",
        # scrubbed environment
        "import os\nreturn set(os.environ) <= {'PYTHONDONTWRITEBYTECODE', 'LC_CTYPE', 'PWD'}",
        # new processes are refused
        "import os\ntry:\n    os.fork()\nexcept PermissionError:\n    return True",
        "import subprocess\ntry:\n    subprocess.run(['true'])\nexcept (PermissionError, FileNotFoundError):\n    return True",
        # a private writable tmp dir
        "open('x.txt', 'w').write('ok')\nimport os\nreturn open('x.txt').read() == 'ok' and os.getcwd().startswith('/tmp')",
        # the runtime is read-only
        "import os\ntry:\n    open(os.__file__, 'a')\nexcept OSError:\n    return True",
        # third-party packages of the host are not importable
        "try:\n    import numpy\nexcept ImportError:\n    return True",
    ],
)
def test_isolation_property(sandbox, body):
    result = sandbox.run(probe_job(body))
    assert result.passed, result.summary
    assert result.isolation["seccomp"] is True and result.isolation["network"] is False


NETWORK_PROBE = (
    "import socket\ntry:\n    socket.create_connection(('127.0.0.1', PORT), timeout=2).close()\n"
    "except OSError:\n    return True\nreturn False"
)


def test_no_network_not_even_the_hosts_loopback(sandbox, listener):
    assert listener.reachable_from_host()
    result = sandbox.run(probe_job(NETWORK_PROBE.replace("PORT", str(listener.port))))
    assert result.passed, result.summary
    assert listener.accepted == 1, "the sandbox reached the host's listener"
    assert result.isolation["network"] is False


def test_tmp_is_wiped_between_runs(sandbox):
    jobs = [probe_job("open('/tmp/leak', 'w').write('x')\nreturn True")] + [
        probe_job("import os\nreturn not os.path.exists('/tmp/leak')") for _ in range(2 * sandbox.size)
    ]
    assert all(r.passed for r in sandbox.run_many(jobs))


def test_structured_result_per_test(sandbox):
    job = Job(
        program="def f(x):\n    print('out', x)\n    return x * 2 if x < 3 else -1\n",
        test_code="assert f(1) == 2\nassert f(2) == 4\nassert f(5) == 10, 'big input'\nassert g(1) == 1\n",
        entry_point="f",
    )
    result = sandbox.run(job)
    assert (result.passed, result.status, result.tests_passed, result.tests_total) == (False, "failed", 2, 4)
    assert [t.passed for t in result.tests] == [True, True, False, False]
    assert result.tests[2].error_type == "AssertionError" and result.tests[2].message == "big input"
    assert result.tests[3].error_type == "NameError"
    assert "out 1" in result.stdout and result.duration_s > 0 and result.call_time_s > 0
    assert result.summary.startswith("failed: AssertionError in test 2")


def test_submission_exceptions_keep_builtin_types(sandbox):
    job = Job(
        program="def f(x):\n    raise ValueError('bad ' + str(x))\n",
        test_code="try:\n    f(1)\n    raise AssertionError('no error')\nexcept ValueError as e:\n    assert str(e) == 'bad 1'\n",
        entry_point="f",
    )
    assert sandbox.run(job).passed


def test_objects_of_submission_classes_work_through_handles(sandbox):
    job = Job(
        program="class Node:\n    def __init__(self, v):\n        self.v = v\n        self.next = None\n"
        "def total(n):\n    return n.v + (total(n.next) if n.next else 0)\n",
        test_code="a = Node(1)\na.next = Node(2)\nassert total(a) == 3\nassert a.v == 1\nassert a == a\n",
        entry_point="total",
    )
    assert sandbox.run(job).passed


def test_limits(sandbox):
    small = ResourceLimits(timeout_s=1.0, memory_mb=256, output_bytes=1000)
    timeout = sandbox.run(probe_job("while True:\n    pass", small))
    assert timeout.status == "timeout" and timeout.timed_out and timeout.duration_s < 3
    memory = sandbox.run(probe_job("x = bytearray(1 << 30)\nreturn True", small))
    assert memory.status == "memory" and memory.memory_exceeded
    flood = sandbox.run(probe_job("print('y' * 100000)\nreturn True", small))
    assert flood.passed and flood.stdout_truncated and len(flood.stdout) == 1000


def test_syntax_error_is_an_error_not_a_crash(sandbox):
    result = sandbox.run(Job(program="def f(:\n", test_code="assert f() == 1\n", entry_point="f"))
    assert result.status == "error" and result.error_type == "SyntaxError"


def test_tests_without_assertions_never_pass(sandbox):
    result = sandbox.run(Job(program="def f():\n    return 1\n", test_code="f()\n", entry_point="f"))
    assert not result.passed and result.error_type == "NoTests"


def test_run_many_keeps_order_and_runs_concurrently(sandbox):
    jobs = [probe_job(f"import time\ntime.sleep(0.3)\nreturn {i % 2 == 0}") for i in range(sandbox.size)]
    start = time.perf_counter()
    results = sandbox.run_many(jobs)
    assert [r.passed for r in results] == [i % 2 == 0 for i in range(sandbox.size)]
    assert time.perf_counter() - start < 0.3 * sandbox.size  # not serialized


async def test_arun_does_not_block_the_event_loop(sandbox):
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    result = await sandbox.arun(probe_job("import time\ntime.sleep(0.5)\nreturn True"))
    task.cancel()
    assert result.passed and ticks >= 10


def test_workers_are_recycled_and_survive_a_killed_judge():
    with Sandbox(SandboxConfig(workers=1, recycle_after=3)) as sb:
        results = [sb.run(probe_job("return True")) for _ in range(7)]
        assert all(r.passed for r in results)
        os_kill = probe_job("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nreturn True")
        assert not sb.run(os_kill).passed
        assert sb.run(probe_job("return True")).passed


def test_unavailable_docker_gives_a_clear_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with (
        Sandbox(SandboxConfig(backend="docker", workers=1)) as sb,
        pytest.raises(BackendUnavailable, match="Docker engine"),
    ):
        sb.run(probe_job("return True"))


def test_process_backend_reports_start_failures(monkeypatch):
    from coding_framework.sandbox.backends import bwrap

    real = bwrap.build_command
    monkeypatch.setattr(bwrap, "build_command", lambda cfg: [*real(cfg)[:-5], "/nonexistent/python"])
    with Sandbox(SandboxConfig(workers=1)) as sb, pytest.raises(BackendUnavailable, match="failed to start"):
        sb.run(probe_job("return True"))
    assert os.path.exists("/proc/self")  # host unaffected
