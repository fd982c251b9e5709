"""/v1/solve: the inference workflow (generate -> execute -> review -> revise) on one version.

The Generator's chat model calls the version's replica pool (``PoolChatModel``), so solve traffic gets the
same retries and ejection as chat traffic. With ``solve.reviewer: llm`` the Reviewer calls the same pool as
role ``reviewer``: on a version with per-role adapters each agent runs through its own adapter. Client
tests are graded by the project's ``Grader`` in judges that each run one job only (``serving.judges``).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph.state import CompiledStateGraph
from pydantic import ConfigDict, Field

from coding_framework.agents.executor import assemble_program
from coding_framework.agents.factory import build_agents
from coding_framework.agents.generator import CodeGenerator
from coding_framework.agents.reviewer import REVIEWER_ROLE
from coding_framework.config.agents import AgentsConfig
from coding_framework.config.graph import GraphConfig
from coding_framework.config.serving import ServingConfig
from coding_framework.grading import Grader
from coding_framework.graphs import build_graph
from coding_framework.llm.chat_model import to_chat_dicts
from coding_framework.problems import Problem
from coding_framework.sandbox import Sandbox
from coding_framework.serving.deployments import Deployments
from coding_framework.serving.errors import APIError, bad_request
from coding_framework.serving.judges import judge_sandbox_config
from coding_framework.serving.rollouts.outcomes import Outcome, classify
from coding_framework.serving.schemas import ChatRequest, SolveRequest

_DEF = re.compile(r"^\s*def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)


class PoolChatModel(BaseChatModel):
    """A chat model whose calls go through the replica pool of one version (async only)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    deployments: Any = Field(description="The server's Deployments.")
    version_id: str
    role: str = Field(CodeGenerator.role, description="The calling agent's role: picks its adapter.")
    max_tokens: int = 256
    temperature: float = 0.2

    @property
    def _llm_type(self) -> str:
        return "coding-framework-pool"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError("PoolChatModel runs on the server's event loop; call it asynchronously")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raw: dict[str, Any] = {
            "messages": to_chat_dicts(messages),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "role": self.role,
        }
        if stop:
            raw["stop"] = stop[:4]
        request = ChatRequest(
            messages=raw["messages"],
            model=self.version_id,
            stream=False,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=None,
            stop=list(stop or [])[:4],
            seed=None,
            session=None,
            include_usage=False,
            raw=raw,
            role=self.role,
        )
        pool = self.deployments.pools.get(self.version_id)
        if pool is None:
            raise APIError(404, f"version {self.version_id} was retired", code="model_not_found")
        answer = await pool.call(lambda r: r.chat(request, self.version_id))
        body = orjson.loads(answer.body)
        choice = body["choices"][0]
        usage = body.get("usage") or {}
        message = AIMessage(
            content=choice["message"].get("content") or "",
            response_metadata={"policy_version": self.version_id, "token_usage": usage},
            usage_metadata={
                "input_tokens": int(usage.get("prompt_tokens", 0)),
                "output_tokens": int(usage.get("completion_tokens", 0)),
                "total_tokens": int(usage.get("total_tokens", 0)),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


@dataclass(frozen=True)
class Solved:
    code: str
    passed: bool | None
    rounds: int
    tokens: int
    outcome: Outcome | None  # of the last draft; None without tests


def problem_for(request: SolveRequest) -> Problem | None:
    """The request as a Problem with the client's asserts; None without tests (free-text workflow)."""
    if request.tests is None:
        return None
    entry = request.entry_point
    if entry is None:
        found = _DEF.search(request.prompt)
        if found is None:
            raise bad_request("tests need an entry_point (or a `def name(` in the prompt)", "entry_point")
        entry = found.group(1)
    return Problem(
        task_id=f"solve-{uuid.uuid4().hex}",
        prompt=request.prompt,
        entry_point=entry,
        test_code=request.tests,
        test_format="asserts",
        prompt_is_code=False,
        source="serving",
    )


class Solver:
    """Runs the workflow per request; graphs are built once per (version, max_rounds)."""

    def __init__(self, config: ServingConfig, deployments: Deployments) -> None:
        self.config, self.deployments = config, deployments
        self.grader = Grader(sandbox=Sandbox(judge_sandbox_config(config.solve)))
        self._graphs: dict[tuple[str, int], CompiledStateGraph] = {}

    def _graph(self, version_id: str, rounds: int) -> CompiledStateGraph:
        key = (version_id, rounds)
        if key not in self._graphs:
            s = self.config.solve

            def chat(role: str) -> PoolChatModel:
                return PoolChatModel(deployments=self.deployments, version_id=version_id, role=role,
                                     max_tokens=s.max_new_tokens, temperature=s.temperature)

            agents = build_agents(
                AgentsConfig.model_validate({"reviewer": {"backend": s.reviewer}}),
                self.grader,
                mode="inference",
                chat_model=chat(CodeGenerator.role),
                reviewer_model=chat(REVIEWER_ROLE) if s.reviewer == "llm" else None,
            )
            self._graphs[key] = build_graph(agents, GraphConfig(max_rounds=rounds), name="serving_solve")
        return self._graphs[key]

    def forget(self, version_id: str) -> None:
        for key in [k for k in self._graphs if k[0] == version_id]:
            del self._graphs[key]

    async def solve(self, version_id: str, request: SolveRequest) -> Solved:
        problem = problem_for(request)
        if problem is None:
            return await self._run(version_id, {"text": request.prompt}, request.max_rounds, None)
        return await self.solve_problem(version_id, problem, request.max_rounds)

    async def solve_problem(self, version_id: str, problem: Problem, max_rounds: int) -> Solved:
        """The workflow on a problem with tests, as /v1/solve runs a client's (probes come this way, so
        their prompts are the clients')."""
        return await self._run(version_id, {"problem": problem.model_dump()}, max_rounds, problem)

    async def _run(self, version_id: str, inputs: dict[str, Any], rounds: int, problem: Problem | None
                   ) -> Solved:
        state = await self._graph(version_id, rounds).ainvoke(inputs)
        code = state.get("code", "")
        outcome = None
        if problem is not None:
            last = (state.get("rounds") or [{}])[-1]
            program = assemble_program(problem, code) if code.strip() else ""
            outcome = classify(program, str(last.get("status", "failed")))
        return Solved(
            code=code,
            passed=bool(state.get("passed")) if problem is not None else None,
            rounds=int(state.get("round", 0)),
            tokens=int(state.get("tokens_used", 0)),
            outcome=outcome,
        )

    def close(self) -> None:
        self.grader.close()
