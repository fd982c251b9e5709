"""The sandbox backend registry: `SandboxConfig.backend` names a registered Worker class, checked at build; a
module of the backends package registers without any other edit."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

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


def test_a_module_in_the_package_registers_without_any_other_edit(tmp_path: Path) -> None:
    (tmp_path / "quiet.py").write_text(
        "from coding_framework.sandbox.backends.base import register_backend\n"
        "from coding_framework.sandbox.backends.bwrap import BwrapWorker\n\n\n"
        "@register_backend('quiet')\n"
        "class QuietWorker(BwrapWorker):\n"
        "    pass\n"
    )
    script = (  # a fresh interpreter imports the package with tmp_path as one more of its folders
        "import importlib.util, sys\n"
        "spec = importlib.util.find_spec('coding_framework.sandbox.backends')\n"
        f"spec.submodule_search_locations.append({str(tmp_path)!r})\n"
        "backends = sys.modules[spec.name] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(backends)\n"
        "print(backends.get_backend('quiet').__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "QuietWorker"
