"""Backends that start judge workers, by ``SandboxConfig.backend``'s name: `process` (bwrap), `docker`.

A backend is a :class:`Worker` subclass in its own module, registered with ``@register_backend(name)``;
the module is imported here so that the registry holds it.
"""

from coding_framework.sandbox.backends.base import (
    BACKENDS,
    BackendUnavailable,
    Worker,
    get_backend,
    register_backend,
)
from coding_framework.sandbox.backends.bwrap import BwrapWorker
from coding_framework.sandbox.backends.docker import DockerWorker

__all__ = [
    "BACKENDS",
    "BackendUnavailable",
    "BwrapWorker",
    "DockerWorker",
    "Worker",
    "get_backend",
    "register_backend",
]
