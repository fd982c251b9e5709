"""A verl FSDP checkpoint as a Hugging Face model directory, registered in MLflow like our trainer's models.

verl saves each rank's shard (``model_world_size_W_rank_R.pt``), ``fsdp_config.json`` and the HF config and
tokenizer (``huggingface/``) under ``<default_local_dir>/global_step_N/actor``; ``verl.model_merger``'s
``FSDPModelMerger`` joins the shards into one HF model. It writes the weights in bfloat16 whatever the
training dtype, so the export equals the trained weights rounded to bfloat16.

Registration reuses ``training.run.tracking.MLflowTracker.log_model``: the directory becomes the ``hf_model``
artifact of our pyfunc (``training.run.pyfunc.GeneratorModel``), a new version of the registered model gets
the ``challenger`` alias, and serving deploys it like any model our own trainer registered.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from coding_framework.config.training import TrackingConfig
from coding_framework.training.run.tracking import MLflowTracker
from coding_framework.training.verl.lora import base_names, merge_lora

__all__ = ["actor_dir", "full_state_dict", "merge_checkpoint", "merged_lora_state", "register_export",
           "save_full_precision"]

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


def full_state_dict(checkpoint: Path) -> dict[str, Any]:
    """The checkpoint's weights joined across ranks in the dtype they were trained in (the merger's own
    mesh and placement helpers; its merge would round them to bfloat16). FSDP only, no tensor parallel."""
    import torch
    from torch.distributed.tensor import DTensor
    from verl.model_merger.base_model_merger import ModelMergerConfig
    from verl.model_merger.fsdp_model_merger import FSDPModelMerger

    actor = actor_dir(checkpoint)
    config = ModelMergerConfig(operation="merge", backend="fsdp", local_dir=str(actor), target_dir=None,
                               hf_model_config_path=str(actor / "huggingface"))
    merger = FSDPModelMerger(config)
    world = merger._get_world_size()
    mesh, names = merger._extract_device_mesh_info(merger._load_rank_zero_state_dict(world), world)
    shards, shape = merger._calculate_shard_configuration(mesh, names)
    if len(shape) != 1:
        raise ValueError(f"{actor}: FSDP + tensor parallel checkpoints are not supported")
    ranks = [torch.load(actor / f"model_world_size_{world}_rank_{r}.pt", map_location="cpu",
                        weights_only=False) for r in range(shards)]
    state: dict[str, Any] = {}
    for key in ranks[0]:
        parts = [rank[key] for rank in ranks]
        if isinstance(parts[0], DTensor):
            placement = parts[0].placements[-1]
            state[key] = merger._merge_by_placement([p._local_tensor for p in parts], placement)
        else:
            state[key] = parts[0]
    return state


LORA_META = "lora_train_meta.json"  # verl's record of a LoRA actor's rank and alpha, beside its shards


def merged_lora_state(state: dict[str, Any], actor: Path) -> dict[str, Any]:
    """A LoRA actor's state (peft names: ``base_model.model.<module>.base_layer.weight``, ``lora_A/B``) as
    the full model's Hugging Face weights, each adapter merged at the rank and alpha verl recorded
    (``LORA_META``); a full fine-tune's state as it is."""
    adapter = {k: v for k, v in state.items() if ".lora_A." in k or ".lora_B." in k}
    if not adapter:
        return state
    meta = json.loads((actor / LORA_META).read_text())
    base = base_names({k.removeprefix("base_model.model."): v for k, v in state.items() if k not in adapter})
    return merge_lora(base, adapter, {"r": meta["r"], "lora_alpha": meta["lora_alpha"]})


def save_full_precision(checkpoint: Path, out: Path) -> Path:
    """The checkpoint as a Hugging Face directory ``out`` at training precision: config and tokenizer from
    verl's ``huggingface/`` folder, the weights from ``full_state_dict`` (a LoRA actor's adapter merged,
    ``merged_lora_state``)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    actor = actor_dir(checkpoint)
    hf = actor / "huggingface"
    state = merged_lora_state(full_state_dict(actor), actor)
    config = AutoConfig.from_pretrained(hf)
    dtype = next(iter(state.values())).dtype
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.load_state_dict(state, strict=True)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(hf).save_pretrained(out)
    return out


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
