"""The docker backend: the same judge fork server, one long-lived container per worker.

Talks to the engine through the `docker` SDK. Where no engine answers, creating a worker raises
BackendUnavailable with the SDK's reason.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Callable
from typing import Any, ClassVar

from coding_framework.config.sandbox import SandboxConfig
from coding_framework.sandbox.backends.base import (
    JUDGE_BOOT,
    JUDGE_DIR,
    BackendUnavailable,
    Worker,
    WorkerStartFailed,
    WorkerTimeout,
    register_backend,
)

_HEADER = struct.Struct(">BxxxI")
# Engine API calls (create, start, remove) take seconds on a loaded machine; 10 s timed out at load ~48.
ENGINE_TIMEOUT_S = 120
# The engine always sets PATH (and HOME) in a container; the judge starts with an empty environment,
# as under bwrap's --clearenv, wherever the image keeps its python3.
_CLEAN_ENV_BOOT = 'exec /usr/bin/env -i PYTHONDONTWRITEBYTECODE=1 "$(command -v python3)" -I -S -c "$1"'


def _boot_command() -> list[str]:
    return ["/bin/sh", "-c", _CLEAN_ENV_BOOT, "sh", JUDGE_BOOT]


def docker_client() -> Any:
    try:
        import docker
    except ImportError as exc:
        raise BackendUnavailable("the docker backend needs the `docker` package: pip install docker") from exc
    try:
        client = docker.from_env(timeout=ENGINE_TIMEOUT_S)
        client.ping()
    except Exception as exc:  # the SDK raises several unrelated types when no engine answers
        raise BackendUnavailable(f"the docker backend needs a running Docker engine: {exc}") from None
    return client


@register_backend("docker")
class DockerWorker(Worker[SandboxConfig]):
    isolation: ClassVar[dict[str, Any]] = {
        "backend": "docker",
        "network": False,
        "pid_namespace": True,
        "readonly_root": True,
    }

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self._client = docker_client()
        self._container: Any = None
        self._sock: socket.socket | None = None
        self._pending = b""

    def start(self, timeout_s: float) -> None:
        """Create, attach, then start: the judge's hello is sent once, the moment it is up.

        Attaching after the start (``containers.run`` then ``attach_socket``) loses the hello whenever
        the judge boots before the attach lands, which happens when the host's threads are slow (a
        loaded machine, many workers starting at once); the worker then waited out the whole deadline.
        """
        import docker.errors
        import requests

        # A failed or timed-out engine call is one worker not coming up (the pool retries it); only a
        # missing image means the backend cannot run here.
        engine_failures = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
        try:
            self._container = self._client.containers.create(
                self.config.docker_image, _boot_command(), **self._container_options()
            )
        except docker.errors.ImageNotFound:
            raise BackendUnavailable(
                f"the docker image {self.config.docker_image!r} is not in the engine: pull it, or build "
                "it offline with scripts/docker_engine.sh start"
            ) from None
        except engine_failures as exc:
            raise WorkerStartFailed(f"the engine could not create a container: {exc}") from None
        try:
            attached = self._container.attach_socket(params={"stdin": 1, "stdout": 1, "stream": 1})
            self._sock = getattr(attached, "_sock", attached)
            self._container.start()
        except engine_failures as exc:
            self.kill()
            raise WorkerStartFailed(f"the engine could not start the container: {exc}") from None
        self._expect_ready(timeout_s)

    def _container_options(self) -> dict[str, Any]:
        limits = self.config.limits
        return {
            "stdin_open": True,
            "auto_remove": True,
            "network_disabled": True,
            "read_only": True,
            "user": "65534:65534",
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": 64,
            "mem_limit": f"{limits.memory_mb + 256}m",
            "tmpfs": {"/tmp": f"size={limits.tmp_size_mb}m,mode=1777"},
            "volumes": {str(JUDGE_DIR): {"bind": "/sandbox/judge", "mode": "ro"}},
            "working_dir": "/tmp",
        }

    def diagnostics(self) -> str:
        try:
            return self._container.logs(stdout=False, stderr=True).decode("utf-8", "replace")[-4000:]
        except Exception:
            return ""

    def _write(self, data: bytes) -> None:
        assert self._sock is not None
        self._sock.sendall(data)

    def _reader(self, deadline: float) -> Callable[[int], bytes | None]:
        """Reads stdout out of docker's multiplexed stream (8-byte headers; stream 1 = stdout)."""
        assert self._sock is not None
        sock = self._sock

        def raw(n: int) -> bytes | None:
            buf = b""
            while len(buf) < n:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                try:
                    chunk = sock.recv(n - len(buf))
                except TimeoutError:
                    raise WorkerTimeout("no answer from the docker worker before the deadline") from None
                if not chunk:
                    return None
                buf += chunk
            return buf

        def read_exact(n: int) -> bytes | None:
            while len(self._pending) < n:
                head = raw(_HEADER.size)
                if head is None:
                    return None
                stream, size = _HEADER.unpack(head)
                body = raw(size)
                if body is None:
                    return None
                if stream == 1:
                    self._pending += body
            data, self._pending = self._pending[:n], self._pending[n:]
            return data

        return read_exact

    def kill(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._container is not None:
            with contextlib.suppress(Exception):  # already gone: nothing left to remove
                self._container.remove(force=True)
            self._container = None
