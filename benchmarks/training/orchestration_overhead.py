"""Orchestration overhead: the LangGraph workflow vs the same loop written as plain Python.

Reproduce:
    .venv/bin/python -m benchmarks.training.orchestration_overhead --episodes 1000 --repeats 15

Every episode takes two rounds (a wrong draft, a review, a right draft) with a zero-latency deterministic
chat model, an in-process grader that answers instantly and a constant reviewer, so only orchestration
is measured: the agents, prompts, feedback and round records are the same in every variant, and each
variant's final states are checked equal to the plain loop's. Variants:

- ``plain``: the generate/execute/review/revise loop as plain async Python (the anchor);
- ``graph``: one LangGraph invocation per episode (`build_graph`), no checkpointer. This is what the
  trainer runs: `training.rollout.run_lockstep` invokes `build_training_graph` once per episode, all of
  a rollout's episodes concurrently;
- ``batched``: LangGraph invocations over batches of episodes (`benchmarks.training.orchestration`, not
  part of the package), no checkpointer.

Reported: episodes per CPU-second of each (median over ``--repeats``; wall-clock too) and its throughput
ratio to ``plain``: the median of the per-repeat ratios, each between runs made back to back. Everything is
measured twice: with the default garbage collector, then after ``gc.freeze()``, which is how the trainer
runs (it freezes the heap once the model is loaded, so full collections skip the import-time objects).
Results go to benchmarks/results/orchestration_overhead.json (``--out``) with the machine record.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from benchmarks.training.orchestration import build_batched_graph
from coding_framework.agents.executor import CodeExecutor
from coding_framework.agents.factory import Agents
from coding_framework.agents.generator import CodeGenerator
from coding_framework.agents.reviewer import CodeReviewer
from coding_framework.agents.types import Execution, Review
from coding_framework.config.graph import GraphConfig
from coding_framework.grading import ExecutionResult
from coding_framework.graphs import build_graph
from coding_framework.graphs.nodes import compose_feedback, execution_record, history_of
from coding_framework.graphs.routing import stop_reason
from coding_framework.graphs.state import RoundRecord
from coding_framework.problems import Problem
from coding_framework.testing.chat import ScriptedChatModel, fenced

OUT = RESULTS / "orchestration_overhead.json"
PROBLEM = Problem(
    task_id="bench/add",
    prompt="Write add(a, b).",
    entry_point="add",
    prompt_is_code=False,
    test_code="assert add(1, 2) == 3\nassert add(2, 2) == 4\n",
)
WRONG, RIGHT = fenced("def add(a, b):\n    return a - b"), fenced("def add(a, b):\n    return a + b")
PASS = ExecutionResult(passed=True, status="passed", tests_passed=2, tests_total=2)
FAIL = ExecutionResult(passed=False, status="failed", tests_passed=0, tests_total=2)


class InstantGrader:
    """Passes exactly the programs that add: no sandbox, no I/O."""

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        return PASS if "a + b" in program else FAIL


class ConstantReviewer(CodeReviewer):
    async def areview(self, problem: Problem, code: str, execution: Execution) -> Review:
        return Review(source="static", text="Static review: it subtracts.")


def make_agents() -> Agents:
    # The first answer of a conversation (two messages: system + user) is wrong, every revision right.
    model = ScriptedChatModel(respond=lambda messages: WRONG if len(messages) == 2 else RIGHT, record=False)
    return Agents(CodeGenerator(chat_model=model), CodeExecutor(InstantGrader()), ConstantReviewer())


async def plain_episode(agents: Agents, problem: Problem, config: GraphConfig) -> dict[str, Any]:
    """The workflow as a loop; it builds the same final state the graph does."""
    assert agents.reviewer is not None, "every round that goes on is reviewed"
    rounds: list[RoundRecord] = []  # the graph's own record type and feedback rule, so the two cannot drift
    tokens = 0
    while True:
        draft = await agents.generator.adraft(problem, history_of({"rounds": rounds}))
        tokens += draft.tokens
        ex = await agents.executor.aexecute(problem, draft.code)
        record: RoundRecord = {**execution_record(len(rounds) + 1, ex), "answer": draft.text,
                               "code": draft.code}
        rounds.append(record)
        reason = stop_reason(ex.status, len(rounds), tokens, config)
        if reason is not None:
            break
        review = await agents.reviewer.areview(problem, draft.code, ex)
        record["review"] = review.text
        record["feedback"] = compose_feedback(record)
    return {
        "problem": problem.model_dump(),
        "code": draft.code,
        "round": len(rounds),
        "passed": ex.passed,
        "stop_reason": reason,
        "tokens_used": tokens,
        "rounds": rounds,
        "calls": [],
        "review_calls": [],
    }


async def run_episodes(one: Callable[[], Awaitable[Any]], n: int, concurrency: int) -> list[Any]:
    gate = asyncio.Semaphore(concurrency)

    async def guarded() -> Any:
        async with gate:
            return await one()

    return await asyncio.gather(*(guarded() for _ in range(n)))


async def run_batched(graph: Any, n: int, batch: int) -> list[Any]:
    out: list[Any] = []
    for start in range(0, n, batch):
        size = min(batch, n - start)
        state = await graph.ainvoke({"episodes": [{"problem": PROBLEM.model_dump()} for _ in range(size)]})
        out += state["episodes"]
    return out


def measure(
    variants: Mapping[str, Callable[[], Coroutine[Any, Any, list[Any]]]], repeats: int
) -> dict[str, list[tuple[float, float]]]:
    """(CPU seconds, wall seconds) of every variant per repeat, all variants back to back in a rotating order.

    Everything runs on one thread with no I/O, so this process's CPU time is the work each variant does,
    and unlike wall time it does not count the other processes of a shared machine.
    """
    names = list(variants)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    reference: list[Any] | None = None
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()  # every run starts from the same heap
            cpu, wall = time.process_time(), time.perf_counter()
            states = asyncio.run(variants[name]())
            times[name].append((time.process_time() - cpu, time.perf_counter() - wall))
            reference = reference or states
            assert states == reference, f"{name}: final states differ from the other variants'"
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=128,
        help="Episodes in flight (plain and graph); 128 = one quickstart rollout step.",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help="Episodes per batched-graph invocation (default: --concurrency, the same in flight).",
    )
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--variants", default="plain,graph,batched", help="Comma-separated; plain is always run."
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.batch = args.batch or args.concurrency

    config = GraphConfig(max_rounds=3, max_tokens=None)
    agents = make_agents()
    graph = build_graph(agents, config)
    batched = build_batched_graph(agents, config)
    problem_input = {"problem": PROBLEM.model_dump()}
    variants = {
        "plain": lambda: run_episodes(
            lambda: plain_episode(agents, PROBLEM, config), args.episodes, args.concurrency
        ),
        "graph": lambda: run_episodes(lambda: graph.ainvoke(problem_input), args.episodes, args.concurrency),
        "batched": lambda: run_batched(batched, args.episodes, args.batch),
    }
    wanted = {"plain", *args.variants.split(",")}
    variants = {name: make for name, make in variants.items() if name in wanted}
    asyncio.run(run_episodes(lambda: plain_episode(agents, PROBLEM, config), 50, 8))  # warm up
    report: dict[str, Any] = {"episodes": args.episodes, "concurrency": args.concurrency, "batch": args.batch}
    with LoadMonitor() as load:
        for gc_mode in ("default", "frozen"):
            if gc_mode == "frozen":
                gc.collect()
                gc.freeze()
            print(f"gc {gc_mode}:", file=sys.stderr)
            report[f"gc_{gc_mode}"] = summarize(measure(variants, args.repeats), args.episodes)
    write_result(args.out, report, load)
    print(json.dumps(report))


def summarize(times: dict[str, list[tuple[float, float]]], episodes: int) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for name, runs in times.items():
        cpu = statistics.median(c for c, _ in runs)
        ratios = [p[0] / own[0] for p, own in zip(times["plain"], runs, strict=True)]
        results[name] = {
            "episodes_per_cpu_s": round(episodes / cpu, 1),
            "episodes_per_wall_s": round(episodes / statistics.median(w for _, w in runs), 1),
            "ratio_to_plain": round(statistics.median(ratios), 3),
            "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
        }
        print(
            f"  {name:8s} {results[name]['episodes_per_cpu_s']:9.1f} episodes/CPU-s  "
            f"{results[name]['ratio_to_plain']:.3f}x plain (per-repeat {min(ratios):.3f}..{max(ratios):.3f})",
            file=sys.stderr,
        )
    return results


if __name__ == "__main__":
    main()
