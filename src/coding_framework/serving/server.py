"""Run the app under uvicorn: in the foreground (``run_server``) or on a thread (``ServerThread``)."""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Sequence
from typing import Any

import uvicorn

from coding_framework.config.serving import ServingConfig
from coding_framework.models import ResolvedModel
from coding_framework.serving.app import create_app


def uvicorn_config(
    config: ServingConfig, api_key: str | None, admin_key: str | None, freeze_heap: bool = False,
    resolved: Sequence[ResolvedModel] = (),
) -> uvicorn.Config:
    """uvloop and httptools when installed (the lean hot path); no access log (it would hold client data)."""
    fast = (
        importlib.util.find_spec("uvloop") is not None and importlib.util.find_spec("httptools") is not None
    )
    return uvicorn.Config(
        create_app(config, api_key=api_key, admin_key=admin_key, freeze_heap=freeze_heap, resolved=resolved),
        host=config.host,
        port=config.port,
        loop="uvloop" if fast else "asyncio",
        http="httptools" if fast else "h11",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=10,
    )


def run_server(config: ServingConfig, api_key: str | None = None, admin_key: str | None = None,
               resolved: Sequence[ResolvedModel] = ()) -> None:
    """Serve in the foreground; the process is the server's own, so its heap is frozen after start-up.
    ``resolved``: models already resolved, deployed as they are when their spec is (``Deployments``)."""
    uvicorn.Server(uvicorn_config(config, api_key, admin_key, freeze_heap=True, resolved=resolved)).run()


class ServerThread:
    """``with ServerThread(config) as s: httpx.get(s.url + "/health")``: the real server on a thread."""

    def __init__(self, config: ServingConfig, **keys: Any) -> None:
        from coding_framework.llm.vllm_server import free_port

        if config.port == 0:
            config = config.model_copy(update={"port": free_port(config.host)})
        self.config = config
        self.server = uvicorn.Server(uvicorn_config(config, keys.get("api_key"), keys.get("admin_key")))
        self.server.config.install_signal_handlers = False  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self.server.run, name="serving", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}"

    @property
    def app(self) -> Any:
        return self.server.config.app

    def start(self, timeout_s: float = 300.0) -> ServerThread:
        self._thread.start()
        began = time.monotonic()
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() - began > timeout_s:
                raise RuntimeError(f"the server did not start within {timeout_s} s")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=60)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
