"""The CPU rollout of a verl run: our ``TokenServer`` as verl's rollout replica, fed each step's weights.

verl's hybrid engine keeps, in each FSDP worker, a rollout object (``BaseRollout``) that receives the new
weights after every update, and launches one server per replica that the agent loops call over Ray
(``LLMServerClient`` -> ``server.generate.remote``). On a GPU these are vLLM's ``ServerAdapter`` and
``vLLMHttpServer``; here:

* ``TokenServerReplica`` (a ``RolloutReplica``) starts a named ``TokenServer`` actor over the local engine
  (float32, the model directory's adapters attached), on the node of the replica's first worker;
* ``TokenServerAdapter`` (a ``BaseRollout``, inside the FSDP worker) sends the weights verl's engine
  exports (``get_per_tensor_param``: full tensors, Hugging Face names; with a LoRA policy, the base once
  and then the adapter alone) to that server, which loads them (``TokenServer.load_weights``; an adapter
  merged into its base, ``TokenServer.load_lora``) and tags its generations with the step (``global_steps``).

Sleeping, waking and the KV cache are no-ops: the server keeps no cache between calls and shares no memory
with the trainer. verl's "naive" sync calls ``update_weights`` on every rank; only each replica's first
rank sends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import ray
import torch
from verl.experimental.agent_loop.agent_loop import AgentLoopManager
from verl.utils.ray_utils import auto_await
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica

__all__ = ["AuditingAgentLoopManager", "TokenServerAdapter", "TokenServerReplica", "server_name"]


def server_name(replica_rank: int) -> str:
    """The Ray actor name of replica ``replica_rank``'s token server (the adapter finds it by name)."""
    return f"coding_framework_token_server_{replica_rank}"


class TokenServerReplica(RolloutReplica):
    """One ``TokenServer`` per replica, named ``server_name(replica_rank)``."""

    async def launch_servers(self) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from coding_framework.training.verl.token_server import TokenServer, local_config

        if self.rollout_mode is None or self.rollout_mode.value != "hybrid":
            raise ValueError(f"the token-server rollout runs colocated with the trainer (hybrid); "
                             f"got {self.rollout_mode}")
        node = await self.workers[0].__ray_call__.remote(lambda self: ray.get_runtime_context().get_node_id())
        actor: Any = ray.remote(TokenServer)
        server = actor.options(
            name=server_name(self.replica_rank), num_cpus=0, max_concurrency=self.max_concurrency,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
        ).remote(local_config(_model_dir(self.model_config)))
        await server.__ray_ready__.remote()
        self.servers = [server]
        self._server_handle = server
        self._server_address = server_name(self.replica_rank)


def _model_dir(model_config: Any) -> str:
    """The model directory verl loaded (``local_path`` once resolved, else ``path``)."""
    return str(getattr(model_config, "local_path", None) or model_config.path)


class TokenServerAdapter(BaseRollout):
    """The rollout inside an FSDP worker: forwards each weight update to its replica's token server."""

    def __init__(self, config: Any, model_config: Any, device_mesh: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, model_config, device_mesh, *args, **kwargs)
        rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
        width = self.config.tensor_model_parallel_size * self.config.data_parallel_size * \
            self.config.pipeline_model_parallel_size
        self.replica_rank, self.sender = divmod(rank, width)
        self.sleep_level = 2

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    async def update_weights(self, weights: Any, wire_format: str = "named_tensors", **kwargs: Any) -> None:
        """Send ``weights`` (``(name, tensor)`` pairs) to the token server as float32 CPU tensors, tagged
        with ``global_steps``: full weights, or verl's LoRA sync (``peft_config`` set: the base while
        ``base_sync_done`` is false, then the adapter), which the server merges
        (``TokenServer.load_lora``)."""
        if wire_format != "named_tensors":
            raise ValueError(f"the token server takes full tensors, not {wire_format!r}")
        state = {name: tensor.detach().to("cpu", torch.float32).clone()
                 async for name, tensor in _items(weights)}
        if self.sender != 0:
            return
        server = ray.get_actor(server_name(self.replica_rank))
        peft_config = kwargs.get("peft_config")
        if peft_config is None:
            await server.load_weights.remote(state, kwargs.get("global_steps"))
        else:
            await server.load_lora.remote(state, dict(peft_config), bool(kwargs.get("base_sync_done", True)),
                                          kwargs.get("global_steps"))


async def _items(weights: Iterable[tuple[str, torch.Tensor]] | Any,
                 ) -> AsyncIterator[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` pairs from verl's generator, sync or async."""
    if hasattr(weights, "__aiter__"):
        async for item in weights:
            yield item
    else:
        for item in weights:
            yield item


class AuditingAgentLoopManager(AgentLoopManager):
    """verl's ``AgentLoopManager`` that audits every training batch it generates through the weights that
    generated it: replica 0's token server teacher-forces each row (``TokenServer.audit``: ``audit.drift``)
    and the step's counts are appended to the run's ``coding_framework.audit_file`` (JSON lines), with, for
    repository episodes, the step's ``rollout`` figures (``repository.repository_step_metrics``), which
    verl's own metrics do not have. Validation batches are not audited."""

    @auto_await
    async def generate_sequences(self, prompts: Any) -> Any:
        output = await super().generate_sequences(prompts)
        section = self.config.get("coding_framework") or {}
        path = section.get("audit_file")
        if prompts.meta_info.get("validate", False) or path is None:
            return output
        server = ray.get_actor(server_name(0))
        line, offending, checked = await server.audit.remote(output, float(section.get("audit_tolerance")))
        record: dict[str, Any] = {"step": int(prompts.meta_info.get("global_steps", 0)), "rows": len(output),
                                  "checked_tokens": checked, "offending_tokens": offending, "summary": line}
        if "tool_calls" in output.non_tensor_batch:  # rows of RepositoryAgentLoop
            from coding_framework.training.verl.repository import repository_step_metrics

            record["rollout"] = repository_step_metrics(output.non_tensor_batch)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        return output
