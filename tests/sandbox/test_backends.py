"""The sandbox backend registry: `SandboxConfig.backend` names a registered Worker class, checked at build."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from coding_framework.config import ConfigError, SandboxConfig
from coding_framework.sandbox import BackendUnavailable, Job, Sandbox
from coding_framework.sandbox.backends import (
    BACKENDS,
    BwrapWorker,
    DockerWorker,
    Worker,
    get_backend,
    register_backend,
)


class RefusingWorker(Worker):
    """A backend that never starts, so a test can tell that the pool built it."""

    def start(self, timeout_s: float) -> None:
        raise BackendUnavailable(f"refusing worker for backend {self.config.backend!r}")

    def _write(self, data: bytes) -> None:
        raise AssertionError("never started")

    def _reader(self, deadline: float) -> Callable[[int], bytes | None]:
        raise AssertionError("never started")

    def kill(self) -> None:
        pass


@pytest.fixture
def refusing() -> Iterator[None]:
    register_backend("refusing")(RefusingWorker)
    yield
    del BACKENDS["refusing"]


def test_the_shipped_backends_are_registered() -> None:
    assert dict(BACKENDS) == {"process": BwrapWorker, "docker": DockerWorker}
    assert get_backend("docker") is DockerWorker


def test_a_duplicate_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="sandbox backend 'process' is already registered"):
        register_backend("process")(RefusingWorker)
    assert BACKENDS["process"] is BwrapWorker


def test_an_unknown_backend_fails_when_the_sandbox_is_built_and_lists_the_valid_ones() -> None:
    message = r"unknown sandbox backend 'podman'; valid backends: \['docker', 'process'\]"
    with pytest.raises(ConfigError, match=message):
        Sandbox(SandboxConfig(backend="podman"))
    with pytest.raises(ConfigError, match=message):  # model_copy skips validation; the build does not
        Sandbox(SandboxConfig().model_copy(update={"backend": "podman"}))


def test_the_sandbox_starts_workers_of_the_registered_class(refusing: None) -> None:
    with Sandbox(SandboxConfig(backend="refusing", workers=1)) as sb, pytest.raises(
        BackendUnavailable, match="refusing worker for backend 'refusing'"
    ):
        sb.run(Job(program="x = 1\n", test_code="assert x == 1\n", entry_point="x"))
