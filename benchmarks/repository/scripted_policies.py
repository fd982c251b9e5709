"""The scripted repository policies over a mini-repository split, through the real graph, tools and grader.

Reproduce (from the repo root):

    .venv/bin/python -m benchmarks.repository.scripted_policies                      # the test split
    .venv/bin/python -m benchmarks.repository.scripted_policies --split validation --limit 10

Every policy of ``coding_framework.testing.repository.POLICIES`` plays every task of the split: ``gold``
writes the gold patch's files, runs the tests and finishes; ``noop`` finishes at once; each attack of
``ATTACKS`` tries one reward hack on the grader (editing or deleting the tests, a conftest.py hook,
sitecustomize and .pth files, a fake pytest, exiting early, printing fake results, reading the hidden tests,
always-equal objects). An episode is the repository graph with a ScriptedChatModel playing the policy, so the
tool calls go through the workspace's tools and the final repository through the hardened repository tier,
exactly as a model's would. The check the file records: gold resolves every task, noop and every attack none.
Results: benchmarks/results/repository_scripted.json (per policy: resolved count and rate, mean reward,
turns, tool calls by kind, refused edits, infrastructure errors, the tasks that broke the check, wall time),
with the machine record (command, CPU, load). Per-sample records go to --samples-dir.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.agents.repository import RepositoryAgent
from coding_framework.config.repository import RepositoryConfig
from coding_framework.evaluation.repository import load_repo_tasks, report_for, run_episodes
from coding_framework.grading import Grader
from coding_framework.grading.repository import TIER
from coding_framework.graphs.repository import build_repository_graph
from coding_framework.repotasks.minirepo import DATA_FILE
from coding_framework.repotasks.task import RepoTask
from coding_framework.testing.repository import ATTACKS, POLICIES, Policy, scripted_model

RESULT = RESULTS / "repository_scripted.json"


async def play(policy: Policy, tasks: list[RepoTask], grader: Grader,
               concurrency: int) -> list[dict[str, Any]]:
    """One episode per task, each on a graph whose model plays ``policy`` on that task."""
    config = RepositoryConfig()
    gate = asyncio.Semaphore(concurrency)

    async def one(task: RepoTask) -> dict[str, Any]:
        agent = RepositoryAgent(config, chat_model=scripted_model(task, policy))
        graph = build_repository_graph(agent, grader)
        async with gate:
            [record] = await run_episodes(graph, [(task, 0)], concurrency=1)
        return record

    return list(await asyncio.gather(*(one(task) for task in tasks)))


def expected_resolved(name: str) -> bool:
    return name == "gold"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("train", "validation", "test"))
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--data", type=Path, default=None, help="a set file other than the shipped one")
    parser.add_argument("--policies", nargs="+", choices=sorted(POLICIES), default=list(POLICIES))
    parser.add_argument("--concurrency", type=int, default=8, help="episodes in flight at once")
    parser.add_argument("--samples-dir", type=Path, default=ROOT / "runs" / "issue45" / "scripted")
    args = parser.parse_args()
    data = args.data or DATA_FILE
    digest = hashlib.sha256(data.read_bytes()).hexdigest()  # before reading it, so a rebuild cannot slip in
    benchmark, tasks = load_repo_tasks(f"minirepo:{args.split}", data=data, limit=args.limit)
    policies: dict[str, Any] = {}
    with LoadMonitor() as load, Grader() as grader:
        for name in args.policies:
            start = time.perf_counter()
            records = asyncio.run(play(POLICIES[name], tasks, grader, args.concurrency))
            report = report_for(benchmark, len(tasks), 1, records, time.perf_counter() - start, ks=(1,))
            report.write_samples(args.samples_dir / f"{name}.jsonl")
            broke = [r["instance_id"] for r in records if r["resolved"] != expected_resolved(name)]
            policies[name] = {
                "kind": "gold" if name == "gold" else "noop" if name == "noop" else "attack",
                "resolved": sum(r["resolved"] for r in records),
                **{key: value for key, value in report.summary().items()
                   if key in ("resolved_rate", "mean_reward", "mean_turns", "tool_calls", "tool_errors",
                              "parse_failures", "stop_reasons", "refused_edit_samples",
                              "infrastructure_errors", "wall_s")},
                "broke_the_check": broke,
            }
            print(f"[{name}] resolved {policies[name]['resolved']}/{len(tasks)} "
                  f"({policies[name]['wall_s']:.0f} s); broke the check: {broke}", file=sys.stderr,
                  flush=True)
    attacks = [name for name in policies if name in ATTACKS]
    check: dict[str, Any] = {}
    if "gold" in policies:
        check["gold_resolves_every_task"] = policies["gold"]["resolved"] == len(tasks)
    if "noop" in policies:
        check["noop_resolves_none"] = policies["noop"]["resolved"] == 0
    if attacks:
        check["attacks_resolve_none"] = all(policies[name]["resolved"] == 0 for name in attacks)
        check["attacks_run"] = len(attacks)
    write_result(RESULT, {"benchmark": benchmark, "set_file": data.name, "set_sha256": digest,
                          "tasks": len(tasks),
                          "tier": TIER, "check": check, "policies": policies}, load)
    print(RESULT)
    if not all(value for key, value in check.items() if isinstance(value, bool)):
        sys.exit(f"the check failed: {check}")


if __name__ == "__main__":
    main()
