"""The bridge to verl: our trajectories as verl's `DataProto` and `AgentLoopOutput`, and our workflow as a
verl agent loop (`CodingAgentLoop`) that verl's own `AgentLoopWorker` runs."""

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

__all__ = [
    "CodingAgentLoop", "ServerManagerEngine", "from_agent_loop_output", "from_data_proto",
    "to_agent_loop_output", "to_data_proto", "verl_dataset_rows", "write_verl_dataset",
]
