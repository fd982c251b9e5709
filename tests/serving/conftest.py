"""Real servers for the serving tests: uvicorn on a free port with the real local engine (embedded model)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from coding_framework.config.serving import LimitsConfig, PoolConfig, ServingConfig
from coding_framework.serving import ServerThread

API_KEY, ADMIN_KEY = "inference-key-123", "admin-key-456"


@pytest.fixture(scope="session", autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Servers keep their state files (`ServingConfig.state_file`) in a temporary state home, not the
    user's; subprocess servers inherit it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        yield


@pytest.fixture(scope="session")
def mlflow_uri(tmp_path_factory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture(scope="session")
def server(mlflow_uri: str) -> Iterator[ServerThread]:
    """The default server: `embedded` on the local engine, no keys (loopback clients only)."""
    with ServerThread(ServingConfig(port=0, mlflow_uri=mlflow_uri)) as s:
        yield s


@pytest.fixture(scope="session")
def keyed_server(mlflow_uri: str) -> Iterator[ServerThread]:
    config = ServingConfig(port=0, mlflow_uri=mlflow_uri)
    with ServerThread(config, api_key=API_KEY, admin_key=ADMIN_KEY) as s:
        yield s


@pytest.fixture(scope="session")
def tight_server() -> Iterator[ServerThread]:
    """One request at a time, one waiting, and a small rate budget: the limits are reachable."""
    config = ServingConfig(
        port=0,
        limits=LimitsConfig(rate_per_s=0.05, rate_burst=8, max_body_bytes=4096),
        pool=PoolConfig(max_concurrency=1, queue_size=1),
    )
    with ServerThread(config) as s:
        yield s


@pytest.fixture
def client(server: ServerThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=120) as c:
        yield c


def chat_body(content: str = "Write a function add(a, b).", **extra: object) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], "max_tokens": 8, **extra}


def assert_openai_error(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error
