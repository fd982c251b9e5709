"""The sweep's progress on stderr: a Ray Tune callback driving a rich bar of trials done, running and
stopped early, restarts of failed trials, and the best metric so far."""

from __future__ import annotations

from typing import Any

from ray.tune import Callback
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from coding_framework.training.sweep.trial import FINISHED, STEP

__all__ = ["SweepProgress"]


class SweepProgress(Callback):
    """Counts trials as Tune reports them; use it as a context manager around ``Tuner.fit``."""

    def __init__(self, total: int, metric: str, mode: str, enabled: bool = True) -> None:
        self.metric, self.sign = metric, 1.0 if mode == "max" else -1.0
        self.running: set[str] = set()
        self.done = self.stopped = self.failed = 0
        self.restarts: dict[str, int] = {}  # trial id -> times Tune restarted it after a failure
        self.best: float | None = None
        self.bar = Progress(
            TextColumn("[bold]sweep trials"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=Console(stderr=True),
            disable=not enabled,
        )
        self.task = self.bar.add_task("trials", total=total, info="")

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its run config (callbacks included) into the experiment directory; the bar (locks,
        # a console) lives only in this process.
        return {k: v for k, v in self.__dict__.items() if k not in ("bar", "task")}

    def __enter__(self) -> SweepProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def _refresh(self) -> None:
        best = "-" if self.best is None else f"{self.best:.3f}"
        info = (
            f"running {len(self.running)}  stopped early {self.stopped}  restarted "
            f"{sum(self.restarts.values())}  failed {self.failed}  "
            f"best {self.metric} {best}"
        )
        self.bar.update(self.task, completed=self.done, info=info)

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.running.add(trial.trial_id)
        self._refresh()

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        value = result.get(self.metric)
        if isinstance(value, int | float) and (self.best is None or self.sign * (value - self.best) > 0):
            self.best = float(value)
        self._refresh()

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.running.discard(trial.trial_id)
        self.done += 1
        last = trial.last_result or {}
        if STEP in last and not last.get(FINISHED):
            self.stopped += 1
        self._refresh()

    def on_trial_recover(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.restarts[trial.trial_id] = self.restarts.get(trial.trial_id, 0) + 1
        self._refresh()

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.running.discard(trial.trial_id)
        self.done += 1
        self.failed += 1
        self._refresh()
