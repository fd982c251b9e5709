"""`langgraph dev` serves the graphs of langgraph.json offline; runs are driven through the HTTP API."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).with_name("langgraph")
ADD = {
    "task_id": "t/add",
    "prompt": "Write a function add(a, b) returning a + b.",
    "entry_point": "add",
    "test_code": "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n",
    "prompt_is_code": False,
}

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not os.environ.get("CODING_FRAMEWORK_MODEL"):
        from coding_framework.embedded import ensure_embedded_model

        ensure_embedded_model()  # build it here, not inside the server's first run
    port = _free_port()
    log = tmp_path_factory.mktemp("langgraph") / "server.log"
    env = {**os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--port", str(port), "--no-browser", "--no-reload"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail(f"langgraph dev did not answer within 120 s:\n{log.read_text()[-3000:]}")
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


async def _run(url: str, graph_id: str, inputs: dict) -> dict:
    from langgraph_sdk import get_client

    client = get_client(url=url, timeout=600)
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], graph_id, input=inputs)
    await client.runs.join(thread["thread_id"], run["run_id"])
    finished = await client.runs.get(thread["thread_id"], run["run_id"])
    assert finished["status"] == "success", finished
    state = await client.threads.get_state(thread["thread_id"])
    assert state["next"] == []
    return state["values"]


async def test_every_graph_is_served(server: str) -> None:
    from langgraph_sdk import get_client

    assistants = await get_client(url=server).assistants.search()
    assert {"inference", "training", "repository"} <= {a["graph_id"] for a in assistants}


async def test_inference_run_through_the_http_api(server: str) -> None:
    values = await _run(server, "inference", {"problem": ADD})
    assert isinstance(values["code"], str) and isinstance(values["passed"], bool)
    assert values["stop_reason"] in ("passed", "max_rounds", "token_budget")
    assert 1 <= values["round"] == len(values["rounds"]) <= 3
    assert all(r["tests_total"] == 2 for r in values["rounds"] if r["status"] != "error")


async def test_training_run_keeps_token_records_in_the_served_state(server: str) -> None:
    values = await _run(
        server, "training", {"text": "Write a function fib(n) returning the n-th Fibonacci number."}
    )
    assert values["passed"] is False  # free text has no tests
    calls, trajectory = values["calls"], values["trajectory"]
    assert len(calls) == values["round"] >= 1
    assert len(trajectory["ids"]) == len(trajectory["loss_mask"]) == len(trajectory["logprobs"])
    assert sum(trajectory["loss_mask"]) == sum(len(c["response_ids"]) for c in calls)
    last = calls[-1]
    assert trajectory["ids"][: len(last["prompt_ids"])] == last["prompt_ids"]


async def test_repository_run_through_the_http_api(server: str) -> None:
    from coding_framework.testing.repository import calc_task

    task = calc_task()
    values = await _run(server, "repository", {"task": task.model_dump()})
    verdict = values["verdict"]
    assert verdict["tier"] == "hardened-repository" and verdict["instance_id"] == task.instance_id
    assert values["passed"] is verdict["resolved"]
    assert values["stop_reason"] in ("finished", "max_turns", "token_budget")
    assert 1 <= len(values["exchanges"]) <= 12
    assert all(e["tool"] is None or e["tool"] in ("list_files", "read_file", "replace_in_file", "write_file",
                                                  "run_tests", "finish") for e in values["exchanges"])
