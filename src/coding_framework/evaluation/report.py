"""What every evaluation report shares: its per-sample records, written as JSON lines, and its summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel


class SampleReport(BaseModel):
    """A report whose ``samples`` are one JSON record each; subclasses say what a record holds."""

    samples: list[dict[str, Any]]

    def write_samples(self, path: str | Path) -> Path:
        """The per-sample records as JSON lines."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(s) + "\n" for s in self.samples), encoding="utf-8")
        return out

    def summary(self) -> dict[str, Any]:
        """Everything but the samples."""
        return self.model_dump(exclude={"samples"})


__all__ = ["SampleReport"]
