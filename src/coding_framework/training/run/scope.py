"""The process-wide state a training run changes, recorded when the run starts and put back when it ends.

A run seeds Python's, NumPy's and torch's global RNGs, fixes torch's CPU thread count, turns transformers'
progress bars off and freezes the garbage collector's long-lived objects. Those are settings of the whole
process: without ``RunScope`` they outlive the run, and a notebook that trained an agent
(``CodingSupervisor.train_agents``) would carry on with reseeded RNGs, two threads and a frozen heap.
"""

from __future__ import annotations

import gc
import random
from typing import Any

import numpy as np
import torch
from transformers.utils import logging as transformers_logging

__all__ = ["RunScope", "rng_state", "set_rng_state"]


def rng_state() -> dict[str, Any]:
    """Python's, NumPy's and torch's (CPU) global RNG states, as a checkpoint saves them."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    """Put back what ``rng_state`` returned."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


class RunScope:
    """Records the global state on creation; ``close()`` (or leaving a ``with`` block) restores it.

    The methods make the run's changes; ``close`` undoes them and is safe to call twice. CUDA's RNG
    states are restored when CUDA was already initialised at the start (reading them earlier would
    initialise it).
    """

    def __init__(self) -> None:
        self._python = random.getstate()
        self._numpy = np.random.get_state()
        self._torch = torch.get_rng_state()
        self._cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        self._threads = torch.get_num_threads()
        self._progress_bars = transformers_logging.is_progress_bar_enabled()
        self._froze_gc = False
        self.closed = False

    def seed(self, seed: int, threads: int | None) -> None:
        """Seed the global RNGs (torch's CUDA ones included) and, when given, fix torch's thread count."""
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        if threads:
            torch.set_num_threads(threads)

    def quiet_progress_bars(self) -> None:
        transformers_logging.disable_progress_bar()

    def freeze_gc(self) -> None:
        """Move every object alive now out of the collector's reach (``gc.freeze``), so the many short-lived
        episode states of a rollout do not trigger full collections over the model and problems. A heap
        someone else froze is left as it is: ``gc.unfreeze`` could not tell their objects from ours."""
        if gc.get_freeze_count() == 0:
            gc.collect()
            gc.freeze()
            self._froze_gc = True

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._froze_gc:
            gc.unfreeze()
        random.setstate(self._python)
        np.random.set_state(self._numpy)
        torch.set_rng_state(self._torch)
        if self._cuda is not None:
            torch.cuda.set_rng_state_all(self._cuda)
        torch.set_num_threads(self._threads)
        if self._progress_bars:
            transformers_logging.enable_progress_bar()
        else:
            transformers_logging.disable_progress_bar()

    def __enter__(self) -> RunScope:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
