"""A verl FSDP checkpoint as a Hugging Face model directory, registered in MLflow like our trainer's models.

verl saves each rank's shard (``model_world_size_W_rank_R.pt``), ``fsdp_config.json`` and the HF config and
tokenizer (``huggingface/``) under ``<default_local_dir>/global_step_N/actor``; ``verl.model_merger``'s
``FSDPModelMerger`` joins the shards into one HF model. It writes the weights in bfloat16 whatever the
training dtype, so the export equals the trained weights rounded to bfloat16.

Registration reuses ``training.tracking.MLflowTracker.log_model``: the directory becomes the ``hf_model``
artifact of our pyfunc (``training.pyfunc.GeneratorModel``), a new version of the registered model gets
the ``challenger`` alias, and serving deploys it like any model our own trainer registered.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Any

from coding_framework.config.training import TrackingConfig
from coding_framework.training.tracking import MLflowTracker

__all__ = ["actor_dir", "merge_checkpoint", "register_export"]

LATEST = "latest_checkpointed_iteration.txt"  # verl's record of the newest step in default_local_dir
_STEP = re.compile(r"global_step_(\d+)")


def actor_dir(path: Path) -> Path:
    """The actor shard folder ``path`` names: itself, its ``actor/``, or (for verl's checkpoint root, the
    run's ``trainer.default_local_dir``) the newest step's ``actor/``."""
    if (path / LATEST).is_file():
        path = path / f"global_step_{(path / LATEST).read_text().strip()}"
    if (path / "actor").is_dir():
        path = path / "actor"
    if not (path / "fsdp_config.json").is_file():
        raise FileNotFoundError(f"{path} is not a verl FSDP checkpoint (no fsdp_config.json); give "
                                "global_step_N/actor, global_step_N or the run's checkpoint folder")
    return path


def merge_checkpoint(checkpoint: Path, out: Path) -> dict[str, Any]:
    """Merge the FSDP shards under ``checkpoint`` into the Hugging Face directory ``out``."""
    from verl.model_merger.base_model_merger import ModelMergerConfig
    from verl.model_merger.fsdp_model_merger import FSDPModelMerger

    actor = actor_dir(checkpoint)
    out.mkdir(parents=True, exist_ok=True)
    config = ModelMergerConfig(operation="merge", backend="fsdp", local_dir=str(actor), target_dir=str(out),
                               hf_model_config_path=str(actor / "huggingface"))
    with contextlib.redirect_stdout(sys.stderr):  # the merger reports progress on stdout
        merger = FSDPModelMerger(config)
        merger.merge_and_save()
        merger.cleanup()
    step = _STEP.search(str(actor))
    return {"hf_dir": str(out.resolve()), "checkpoint": str(actor.resolve()),
            "global_step": int(step.group(1)) if step else None}


def register_export(merged: dict[str, Any], name: str, mlflow_uri: str | None) -> dict[str, Any]:
    """Log the merged model as our pyfunc in a new MLflow run and register it as ``name`` (alias
    ``challenger``). The run's bookkeeping (and, without ``mlflow_uri``, its SQLite store) goes beside the
    exported directory."""
    out = Path(merged["hf_dir"])
    tracker = MLflowTracker(TrackingConfig(mlflow_uri=mlflow_uri, registered_model=name), out.parent)
    try:
        tracker.log_params({"source": "verl", **merged})
        registered = tracker.log_model(out, name)
    except BaseException:
        tracker.finish("FAILED")
        raise
    tracker.finish()
    return {"mlflow_uri": tracker.uri, "mlflow_run_id": tracker.run_id, **registered}
