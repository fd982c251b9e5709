"""Backends that start judge workers, by ``SandboxConfig.backend``'s name: `process` (bwrap), `docker`.

A backend is a :class:`Worker` subclass in its own module of this package, registered with
``@register_backend(name)``. Every module of the package is imported below, so a backend's module registers
it just by being here.
"""

import importlib
import pkgutil

from coding_framework.sandbox.backends.base import (
    BACKENDS,
    BackendUnavailable,
    Worker,
    get_backend,
    register_backend,
)
from coding_framework.sandbox.backends.bwrap import BwrapWorker
from coding_framework.sandbox.backends.docker import DockerWorker

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "BACKENDS",
    "BackendUnavailable",
    "BwrapWorker",
    "DockerWorker",
    "Worker",
    "get_backend",
    "register_backend",
]
