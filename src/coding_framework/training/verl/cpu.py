"""verl on CPU: a "cpu" device platform and the token-server rollout, registered in every verl process.

verl 0.9.1 has no CPU platform, yet its FSDP2 training worker runs real updates on CPU once these are
in place, none of which changes verl's files:

* a ``cpu`` platform in verl's ``PlatformRegistry`` (``PlatformCPU``), picked by ``VERL_PLATFORM=cpu``:
  tensors go to ``"cpu"``, collectives run on gloo, and the memory calls verl makes around its offloads are
  no-ops;
* one pretend GPU per worker: verl places workers in placement groups of ``GPU`` bundles, so the local Ray
  cluster is started with ``num_gpus`` = the trainer's workers (``ray_kwargs.ray_init.num_gpus``);
* its FSDP engine, which verl registers for ``cuda`` only, looked up as ``cuda`` (``VERL_ENGINE_DEVICE``,
  verl's own override);
* the backend string verl builds, ``cpu:gloo,cpu:gloo`` (``cpu:gloo,{device}:{backend}``), becomes ``gloo``:
  torch refuses two backends for one device type (``init_process_group`` is wrapped once per process);
* ``Tensor.pin_memory`` is the identity without an accelerator (the reference policy's FSDP2 offload
  policy pins its parameters whatever the config).

The rollout is ours: ``ROLLOUT`` (``token_server``) is registered both as verl's rollout replica (the server
the agent loop calls, ``cpu_rollout.TokenServerReplica``) and as the rollout inside the hybrid FSDP worker
(``cpu_rollout.TokenServerAdapter``, which pushes each step's weights to that server).

Every verl process imports this module before it builds anything: ``VERL_USE_EXTERNAL_MODULES`` names it,
and ``verl/__init__.py`` imports the modules named there (``device_env``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch
import torch.distributed
from verl.plugin.platform import PlatformBase, PlatformRegistry

__all__ = ["PLATFORM", "ROLLOUT", "PlatformCPU", "device_env", "register"]

PLATFORM = "cpu"
ROLLOUT = "token_server"
_ADAPTER = "coding_framework.training.verl.cpu_rollout.TokenServerAdapter"


class _CPUDevice:
    """What verl calls on ``get_torch_device()`` (``torch.cuda`` on a GPU), for the CPU: the RNG is
    torch's, memory calls are no-ops, everything else is ``torch.cpu``'s."""

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    @staticmethod
    def get_rng_state() -> torch.Tensor:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor) -> None:
        torch.set_rng_state(state)

    @staticmethod
    def manual_seed(seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def ipc_collect() -> None:
        return None

    @staticmethod
    def set_per_process_memory_fraction(*_: Any, **__: Any) -> None:
        return None

    @staticmethod
    def memory_allocated(*_: Any) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    @staticmethod
    def reset_peak_memory_stats(*_: Any) -> None:
        return None

    @staticmethod
    def mem_get_info(*_: Any) -> tuple[int, int]:
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page

    @staticmethod
    def get_device_name(*_: Any) -> str:
        return "cpu"


class PlatformCPU(PlatformBase):
    """verl's platform interface for the CPU: device ``cpu``, gloo collectives, Ray's ``GPU`` resource (one
    pretend GPU per worker), no IPC, no profiler ranges."""

    _device = _CPUDevice()

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return self._device  # type: ignore[return-value]  # module-like

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Never auto-detected: only VERL_PLATFORM=cpu picks it (a CPU-only dry run keeps verl's fallback).
        return False

    def current_device(self) -> Any:
        return "cpu"  # every `.to(get_device_id())` and `torch.device(get_device_id())` lands on the CPU

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str) -> Iterator[None]:
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"]

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def gloo_backend(backend: str | None) -> str | None:
    """``cpu:gloo,cpu:gloo`` (verl's ``cpu:gloo,{device}:{backend}`` on the CPU) -> ``gloo``; any other
    backend string as it is."""
    if backend is None:
        return None
    parts = {p.strip() for p in backend.split(",") if p.strip()}
    return "gloo" if parts and parts <= {"cpu:gloo", "gloo"} else backend


def _wrap_init_process_group() -> None:
    init = torch.distributed.init_process_group
    if getattr(init, "_coding_framework_gloo", False):
        return

    @functools.wraps(init)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        if args:
            args = (gloo_backend(args[0]), *args[1:])
        elif "backend" in kwargs:
            kwargs["backend"] = gloo_backend(kwargs["backend"])
        return init(*args, **kwargs)

    init_process_group._coding_framework_gloo = True  # type: ignore[attr-defined]
    torch.distributed.init_process_group = init_process_group


def _pin_memory_without_accelerator() -> None:
    """``Tensor.pin_memory`` as the identity where there is no accelerator: pinned memory is page-locked
    host memory for faster copies to a device, and with none the tensor is already where it would be. verl
    builds the reference policy's FSDP2 with ``CPUOffloadPolicy(pin_memory=True)`` whatever the config,
    and torch refuses to pin without an accelerator."""
    if torch.accelerator.is_available() or getattr(torch.Tensor.pin_memory, "_coding_framework", False):
        return

    def pin_memory(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self

    pin_memory._coding_framework = True  # type: ignore[attr-defined]
    torch.Tensor.pin_memory = pin_memory  # type: ignore[method-assign, assignment]


def _load_replica() -> type:
    from coding_framework.training.verl.cpu_rollout import TokenServerReplica

    return TokenServerReplica


def register() -> None:
    """Register the ``cpu`` platform and the ``token_server`` rollout in this process (idempotent); on the
    CPU platform, also make verl's two-backend string gloo."""
    from verl.workers.rollout import base
    from verl.workers.rollout.replica import RolloutReplicaRegistry

    if PlatformRegistry.get(PLATFORM) is None:
        PlatformRegistry.register(platform=PLATFORM)(PlatformCPU)
    RolloutReplicaRegistry.register(ROLLOUT, _load_replica)
    base._ROLLOUT_REGISTRY[(ROLLOUT, "async")] = _ADAPTER
    if os.environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM:
        _wrap_init_process_group()
        _pin_memory_without_accelerator()


def device_env() -> dict[str, str]:
    """The environment every process of a CPU run needs (the driver's, and Ray's ``runtime_env``)."""
    # verl registers its FSDP engines for cuda and npu only; VERL_ENGINE_DEVICE is its own override of the
    # device its engine registry looks up (the engine itself then places everything by the platform).
    return {"VERL_PLATFORM": PLATFORM, "VERL_USE_EXTERNAL_MODULES": __name__, "VERL_ENGINE_DEVICE": "cuda",
            "TORCH_COMPILE_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"}


register()
