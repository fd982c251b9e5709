"""`coding-framework serve` as a user runs it: flags, keys from the environment, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from coding_framework.llm.vllm_server import free_port

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    environ = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "coding_framework.cli", "serve", *args], env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_serve_answers_with_the_key_from_the_environment() -> None:
    port = free_port()
    proc = _serve("--port", str(port), "--model", "embedded", env={"CODING_FRAMEWORK_API_KEY": "k-env"})
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.3)
        url = f"http://127.0.0.1:{port}/v1/models"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Authorization": "Bearer k-env"}).status_code == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "k-env" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "tpu"], "engine"),
        (["--config", "/no/such.yaml"], "no.such"),
        (["--port", "99999"], "port"),
    ],
)
def test_bad_flags_are_one_line_errors(args: list[str], message: str) -> None:
    proc = _serve(*args)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "Traceback" not in err and message in err.replace("/", "."), err
