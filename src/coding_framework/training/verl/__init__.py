"""The bridge to verl: our trajectories as verl's `DataProto` and `AgentLoopOutput`, our workflow as a
verl agent loop (`CodingAgentLoop`) that verl's own `AgentLoopWorker` runs, and the CPU preflight that
runs it through verl's `AgentLoopManager` on a local Ray cluster (`run_preflight`)."""

from __future__ import annotations

from coding_framework.training.verl.agent_loop import (
    CodingAgentLoop,
    ServerManagerEngine,
    verl_dataset_rows,
    write_verl_dataset,
)
from coding_framework.training.verl.interop import (
    from_agent_loop_output,
    from_data_proto,
    to_agent_loop_output,
    to_data_proto,
)
from coding_framework.training.verl.preflight import PreflightConfig, PreflightReport, run_preflight
from coding_framework.training.verl.token_server import TokenServer

__all__ = [
    "CodingAgentLoop", "PreflightConfig", "PreflightReport", "ServerManagerEngine", "TokenServer",
    "from_agent_loop_output", "from_data_proto", "run_preflight", "to_agent_loop_output", "to_data_proto",
    "verl_dataset_rows", "write_verl_dataset",
]
