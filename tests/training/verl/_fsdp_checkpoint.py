"""Write a verl FSDP checkpoint on CPU with verl's own code: two gloo ranks, the model sharded with verl's
``apply_fsdp2``, one AdamW step, then ``FSDPCheckpointManager.save_checkpoint``.

Run: ``python _fsdp_checkpoint.py MODEL_DIR OUT_DIR PORT``. Writes ``OUT_DIR/global_step_1/actor`` (verl's
layout) and, from rank 0, ``OUT_DIR/reference.pt``: the trained full state dict and the logits the sharded
model gives for ``PROBE``.

Two of verl's helpers assume an accelerator and are replaced by what they do on one: verl has no CPU
platform (``create_device_mesh`` asks for a ``cuda`` mesh), so the mesh is torch's ``init_device_mesh("cpu")``
with the same shape and dim name; and ``fsdp2_load_full_state_dict`` moves the model to the GPU to broadcast
rank 0's weights, which is not needed here because every rank loads the same weights from disk.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

PROBE = [[1, 5, 9, 33, 100, 7, 12]]
WORLD = 2


def _rank(rank: int, model_dir: str, out: str, port: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from verl.utils.checkpoint.fsdp_checkpoint_manager import FSDPCheckpointManager
    from verl.utils.fsdp_utils import apply_fsdp2

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    mesh = init_device_mesh("cpu", mesh_shape=(WORLD,), mesh_dim_names=["fsdp"])
    policy = MixedPrecisionPolicy(param_dtype=torch.float32, reduce_dtype=torch.float32)
    apply_fsdp2(model, {"mesh": mesh, "mp_policy": policy, "offload_policy": None,
                        "reshard_after_forward": True}, {})
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batch = torch.tensor([[3, 17, 42, 8, 99, 4, 61, 2]])
    model(input_ids=batch, labels=batch).loss.backward()
    optimizer.step()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    manager = FSDPCheckpointManager(model, optimizer, None, processing_class=tokenizer)
    manager.save_checkpoint(str(Path(out) / "global_step_1" / "actor"), global_step=1)
    full = {k: v.full_tensor() for k, v in model.state_dict().items()}  # a collective: every rank joins
    with torch.no_grad():
        logits = model(input_ids=torch.tensor(PROBE)).logits
    if rank == 0:
        torch.save({"state_dict": full, "logits": logits}, Path(out) / "reference.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(_rank, args=tuple(sys.argv[1:4]), nprocs=WORLD)
