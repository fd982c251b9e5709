"""The bridge to verl: our trajectories as verl's `DataProto` and `AgentLoopOutput`, our workflow as a
verl agent loop (`CodingAgentLoop`) that verl's own `AgentLoopWorker` runs, and the CPU preflight that
runs it through verl's `AgentLoopManager` on a local Ray cluster (`run_preflight`); the launcher that
composes, validates and runs verl's trainer (`launcher`, `VerlLaunch`) and the export of its FSDP
checkpoints to Hugging Face and MLflow (`merge_checkpoint`, `register_export`)."""

from __future__ import annotations

from coding_framework.training.verl.agent_loop import (
    CodingAgentLoop,
    ServerManagerEngine,
    verl_dataset_rows,
    write_verl_dataset,
)
from coding_framework.training.verl.export import merge_checkpoint, register_export
from coding_framework.training.verl.interop import (
    from_agent_loop_output,
    from_data_proto,
    to_agent_loop_output,
    to_data_proto,
)
from coding_framework.training.verl.launcher import VerlLaunch
from coding_framework.training.verl.preflight import PreflightConfig, PreflightReport, run_preflight
from coding_framework.training.verl.token_server import TokenServer

__all__ = [
    "CodingAgentLoop", "PreflightConfig", "PreflightReport", "ServerManagerEngine", "TokenServer",
    "VerlLaunch", "from_agent_loop_output", "from_data_proto", "merge_checkpoint", "register_export",
    "run_preflight", "to_agent_loop_output", "to_data_proto", "verl_dataset_rows", "write_verl_dataset",
]
