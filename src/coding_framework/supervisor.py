"""`CodingSupervisor`: solve problems with the workflow graph, and evaluate it on a benchmark (pass@k)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar, cast, overload

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ConfigDict, Field

from coding_framework.agents.executor import completion_for, defines
from coding_framework.agents.factory import Agents, EngineCache, build_agents
from coding_framework.agents.freeform import problem_from_text
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.model_ref import ModelRef
from coding_framework.evaluation.episodes import grade, repeat, score
from coding_framework.evaluation.report import SampleReport
from coding_framework.evaluation.repository import (
    RepoEvaluationReport,
    check_gradable,
    episode_progress,
    is_repository_benchmark,
    jobs_for,
    load_repo_tasks,
    report_for,
    run_episodes,
)
from coding_framework.evaluation.traces import TraceRecorder
from coding_framework.grading import Grader
from coding_framework.graphs import build_graph
from coding_framework.graphs.checkpoint import history, resume, sqlite_checkpointer, thread
from coding_framework.graphs.repository import repository_graph_for
from coding_framework.llm.base import REQUEST_FAILED, EngineError, RequestFailed
from coding_framework.llm.sampling import row_seed
from coding_framework.logs import get_logger
from coding_framework.problems import Problem, load_benchmark, with_few_shot_prompt
from coding_framework.problems.sources import resolve_source
from coding_framework.repotasks.task import RepoTask

if TYPE_CHECKING:
    from coding_framework.config.training import TrainingConfig
    from coding_framework.config.verl import VerlConfig
    from coding_framework.models import ResolvedModel
    from coding_framework.training.run.results import TrainingResults

log = get_logger(__name__)
T = TypeVar("T")


class SolveResult(BaseModel):
    """The outcome of one episode. ``feedback`` has one entry per round (what the Generator was told)."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    code: str
    passed: bool = Field(description="Every test passed. Always False for a free-text problem (no tests).")
    rounds: int
    stop_reason: str
    feedback: list[str]
    tokens_used: int
    thread_id: str | None = Field(None, description="Checkpoint thread, when `graph.checkpoint_db` is set.")
    history: list[dict[str, Any]] = Field(default_factory=list, description="The per-round records.")

    @classmethod
    def from_state(cls, state: dict[str, Any], thread_id: str | None = None) -> SolveResult:
        rounds = state.get("rounds", [])
        return cls(
            task_id=state["problem"]["task_id"],
            code=state.get("code", ""),
            passed=bool(state.get("passed")),
            rounds=state.get("round", 0),
            stop_reason=state.get("stop_reason") or "interrupted",
            feedback=[r.get("feedback", "") for r in rounds],
            tokens_used=state.get("tokens_used", 0),
            thread_id=thread_id,
            history=rounds,
        )


class EvaluationReport(SampleReport):
    """pass@k of the workflow on a benchmark, graded by the Grader after generation.

    With ``max_rounds > 1`` the Generator revised from the benchmark's own test results, so
    ``feedback_from_tests`` is True and the figures are not comparable with single-draft pass@k.
    """

    benchmark: str
    problems: int
    n_samples: int
    max_rounds: int
    feedback_from_tests: bool
    pass_at_k: dict[str, float]
    by_family: dict[str, float] = Field(
        description="Share of passing samples per family: a problem's first tag, else its source."
    )
    mean_rounds: float
    agreement: float = Field(
        description="Share of samples where the graph's verdict matches the final grading."
    )
    samples: list[dict[str, Any]] = Field(description="task_id, completion, passed, rounds, stop_reason.")
    extracted_share: float = Field(
        0.0, description="Share of samples whose final answer held a program defining the entry point."
    )
    truncated_share: float = Field(
        0.0, description="Share of samples whose last model answer stopped at the Generator's max_new_tokens."
    )
    request_failures: int = Field(
        0, description="Samples whose model request failed alone (timed out, or rejected, e.g. a prompt "
        "past the context): graded as failed, with stop_reason `request_failed`."
    )


class EvaluationIncomplete(EngineError):
    """Generation stopped before every episode ended. ``report`` grades and scores the episodes that did
    (``len(report.samples)`` of ``total``), so a long run that fails keeps what it made."""

    def __init__(self, message: str, report: EvaluationReport | RepoEvaluationReport, total: int) -> None:
        super().__init__(message)
        self.report = report
        self.total = total


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from sync code, also inside a running loop (a notebook), via a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=target, name="coding-supervisor")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _request_failed(problem: Problem | str, exc: RequestFailed) -> SolveResult:
    task_id = (problem if isinstance(problem, Problem) else problem_from_text(problem)).task_id
    log.warning("episode_request_failed", task_id=task_id, error=str(exc))
    return SolveResult(task_id=task_id, code="", passed=False, rounds=0, stop_reason=REQUEST_FAILED,
                       feedback=[str(exc)], tokens_used=0)


def episode_input(problem: Problem | str, seed: int | None = None) -> dict[str, Any]:
    """The graph's input for one episode; ``seed`` seeds its LLM calls (None: the agents' own seeds)."""
    extra = {} if seed is None else {"seed": seed}
    if isinstance(problem, Problem):
        return {"problem": problem.model_dump(), **extra}
    if isinstance(problem, str):
        return {"text": problem, **extra}
    raise TypeError(f"solve() takes a Problem or a problem statement (str), not {type(problem).__name__}")


class CodingSupervisor:
    """Runs the inference workflow: ``solve`` one problem, ``evaluate`` a benchmark.

    Backends come from ``config`` (built on first use) unless given; ``resolved`` holds models the caller
    already resolved, used for the specs they came from. A Grader built here is closed by ``close()`` (or
    leaving the ``with`` block).
    """

    def __init__(
        self,
        config: WorkflowConfig | None = None,
        *,
        chat_model: BaseChatModel | None = None,
        reviewer_model: BaseChatModel | None = None,
        grader: Grader | None = None,
        resolved: Sequence[ResolvedModel] = (),
    ) -> None:
        self.config = config or WorkflowConfig()
        self._chat_model, self._reviewer_model = chat_model, reviewer_model
        self._resolved = tuple(resolved)
        self._grader = grader
        self._owned_grader: Grader | None = None
        self._agents: Agents | None = None
        self._traces: TraceRecorder | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._release_agents()
        if self._owned_grader is not None:
            self._owned_grader.close()
            self._owned_grader = None

    @property
    def grader(self) -> Grader:
        if self._grader is None:
            self._owned_grader = self._grader = Grader(self.config.sandbox)
        return self._grader

    @property
    def agents(self) -> Agents:
        if self._agents is None:
            self._agents = build_agents(
                self.config.agents,
                self.grader,
                chat_model=self._chat_model,
                reviewer_model=self._reviewer_model,
                engines=EngineCache(self.config.agents.vllm, self._resolved, self.config.agents.timeout_s),
            )
        return self._agents

    @asynccontextmanager
    async def graph(self) -> AsyncIterator[CompiledStateGraph]:
        """The compiled workflow, checkpointing to ``graph.checkpoint_db`` when one is configured."""
        db = self.config.graph.checkpoint_db
        if db is None:
            yield build_graph(self.agents, self.config.graph)
            return
        async with sqlite_checkpointer(db) as saver:
            yield build_graph(self.agents, self.config.graph, checkpointer=saver)

    def _release_agents(self) -> None:
        """Drop the agents, closing the engines built for them (a vLLM server one started stops)."""
        agents, self._agents = self._agents, None
        if agents is not None and agents.engines is not None:
            agents.engines.close()

    async def asolve(
        self, problem: Problem | str, *, thread_id: str | None = None, seed: int | None = None
    ) -> SolveResult:
        async with self.graph() as graph:
            return await self._episode(graph, episode_input(problem, seed), thread_id)

    def solve(
        self, problem: Problem | str, *, thread_id: str | None = None, seed: int | None = None
    ) -> SolveResult:
        """Solve a ``Problem`` (with tests) or a free-text statement (no tests, so never ``passed``).
        With ``seed``, the same model, config and seed write the same code."""
        return run_sync(lambda: self.asolve(problem, thread_id=thread_id, seed=seed))

    async def _episode(
        self, graph: CompiledStateGraph, inputs: dict[str, Any], thread_id: str | None
    ) -> SolveResult:
        if self.config.graph.checkpoint_db is None:
            state, tid = await graph.ainvoke(inputs), None
        else:
            tid = thread_id or uuid.uuid4().hex
            state = await graph.ainvoke(inputs, thread(tid))
        if self._traces is not None:
            self._traces.submit(state, kind="function", mode="evaluation")
        return SolveResult.from_state(state, tid)

    def resume(self, thread_id: str) -> SolveResult:
        """Finish an interrupted checkpointed episode (needs ``graph.checkpoint_db``)."""
        self._need_checkpoints()

        async def go() -> SolveResult:
            async with self.graph() as graph:
                return SolveResult.from_state(await resume(graph, thread_id), thread_id)

        return run_sync(go)

    def inspect(self, thread_id: str) -> list[dict[str, Any]]:
        """Every checkpoint of an episode, oldest first (needs ``graph.checkpoint_db``)."""
        self._need_checkpoints()

        async def go() -> list[dict[str, Any]]:
            async with self.graph() as graph:
                return await history(graph, thread_id)

        return run_sync(go)

    def _need_checkpoints(self) -> None:
        if self.config.graph.checkpoint_db is None:
            raise ValueError(
                "no checkpoints are kept: set graph.checkpoint_db (e.g. runs/checkpoints.sqlite)"
            )

    async def asolve_many(
        self,
        problems: Sequence[Problem | str],
        *,
        on_done: Callable[[SolveResult], None] | None = None,
        seed: int | None = None,
        finished: dict[int, SolveResult] | None = None,
        fail_alone: bool = False,
    ) -> list[SolveResult]:
        """Solve many problems concurrently (``graph.concurrency`` episodes in flight), in input order.
        With ``seed``, episode ``i`` is seeded ``row_seed(seed, i)``: the results do not depend on timing.
        ``on_done`` is called with each result as its episode ends; ``finished`` gets it under its index,
        so a caller keeps the episodes that ended when another one raises. With ``fail_alone`` an episode
        whose model request fails alone (``RequestFailed``) ends as a failed result (stop_reason
        ``request_failed``, the error in ``feedback``) and the others go on."""
        gate = asyncio.Semaphore(self.config.graph.concurrency)

        async def one(graph: CompiledStateGraph, i: int, problem: Problem | str) -> SolveResult:
            own = None if seed is None else row_seed(seed, i)
            async with gate:
                try:
                    result = await self._episode(graph, episode_input(problem, own), None)
                except RequestFailed as exc:
                    if not fail_alone:
                        raise
                    result = _request_failed(problem, exc)
            if finished is not None:
                finished[i] = result
            if on_done is not None:
                on_done(result)
            return result

        async with self.graph() as graph:
            return list(await asyncio.gather(*(one(graph, i, p) for i, p in enumerate(problems))))

    @overload
    def evaluate(self, benchmark: Sequence[Problem], *, n_samples: int = 1, limit: int | None = None,
                 data: str | Path | None = None, split: str = "all", ks: Sequence[int] = (1, 10, 100),
                 progress: bool = True, seed: int | None = None, prompt: str = "zero-shot",
                 repos_dir: str | Path | None = None, traces: TraceRecorder | None = None,
                 ) -> EvaluationReport: ...

    @overload
    def evaluate(self, benchmark: Sequence[RepoTask], *, n_samples: int = 1, limit: int | None = None,
                 data: str | Path | None = None, split: str = "all", ks: Sequence[int] = (1, 10, 100),
                 progress: bool = True, seed: int | None = None, prompt: str = "zero-shot",
                 repos_dir: str | Path | None = None, traces: TraceRecorder | None = None,
                 ) -> RepoEvaluationReport: ...

    @overload
    def evaluate(self, benchmark: str, *, n_samples: int = 1, limit: int | None = None,
                 data: str | Path | None = None, split: str = "all", ks: Sequence[int] = (1, 10, 100),
                 progress: bool = True, seed: int | None = None, prompt: str = "zero-shot",
                 repos_dir: str | Path | None = None, traces: TraceRecorder | None = None,
                 ) -> EvaluationReport | RepoEvaluationReport: ...

    def evaluate(
        self,
        benchmark: str | Sequence[Problem] | Sequence[RepoTask],
        *,
        n_samples: int = 1,
        limit: int | None = None,
        data: str | Path | None = None,
        split: str = "all",
        ks: Sequence[int] = (1, 10, 100),
        progress: bool = True,
        seed: int | None = None,
        prompt: str = "zero-shot",
        repos_dir: str | Path | None = None,
        traces: TraceRecorder | None = None,
    ) -> EvaluationReport | RepoEvaluationReport:
        """Generate ``n_samples`` episodes per problem, grade each final program, and compute pass@k.

        ``benchmark`` is a name for ``problems.load_benchmark`` (with ``data``/``split``) or a list of
        problems; ``limit`` keeps the first problems only. pass@k is reported for each k <= n_samples.
        With ``seed``, two runs with the same model and config give the same samples. ``prompt="few-shot"``
        asks MBPP problems with the MBPP paper's standard 3-shot prompt (tasks 2, 3 and 4).

        A repository benchmark (``minirepo:SPLIT``, ``swebench:FILE`` with ``repos_dir``, or a list of
        RepoTasks) goes to :meth:`evaluate_repository` and gives its report. ``traces`` records every
        episode as an MLflow trace (``evaluation.traces``).
        """
        repository = _repository_benchmark(benchmark)
        if repository is not None:
            if prompt != "zero-shot":
                raise ValueError(f"repository tasks have one prompt (the issue), not {prompt!r}")
            return self.evaluate_repository(
                repository, n_samples=n_samples, limit=limit, data=data, split=split, repos_dir=repos_dir,
                ks=ks, progress=progress, seed=seed, traces=traces,
            )
        if n_samples < 1:
            raise ValueError(f"n_samples must be at least 1, got {n_samples}")
        name, problems = _problems(cast("str | Sequence[Problem]", benchmark), data, split, limit)
        if prompt == "few-shot":
            if not name.startswith("mbpp"):
                raise ValueError(f"the few-shot prompt is MBPP's (tasks 2, 3 and 4); {name!r} has none")
            problems = [with_few_shot_prompt(p) for p in problems]
        elif prompt != "zero-shot":
            raise ValueError(f"prompt must be zero-shot or few-shot, not {prompt!r}")
        jobs = repeat(problems, n_samples)
        finished: dict[int, SolveResult] = {}
        self._traces = traces
        try:
            results = run_sync(lambda: self._generate(jobs, progress, seed, finished))
        except EngineError as exc:
            if not finished:
                raise
            done = sorted(finished)
            kept = [jobs[i] for i in done]
            partial = self._graded(name, len({p.task_id for p in kept}), n_samples, kept,
                                   [finished[i] for i in done], ks, progress)
            raise EvaluationIncomplete(str(exc), partial, len(jobs)) from exc
        finally:
            self._traces = None
        failed = [r for r in results if r.stop_reason == REQUEST_FAILED]
        if len(failed) == len(results):
            raise EngineError(f"every model request failed, e.g.: {failed[0].feedback[0]}")
        return self._graded(name, len(problems), n_samples, jobs, results, ks, progress)

    def _graded(self, name: str, problems: int, n_samples: int, jobs: Sequence[Problem],
                results: Sequence[SolveResult], ks: Sequence[int], progress: bool) -> EvaluationReport:
        """Grade the final program of ``results[i]`` (an episode of ``jobs[i]``) and score them."""
        completions = [completion_for(p, r.code) for p, r in zip(jobs, results, strict=True)]
        programs = [p.completion_program(c) for p, c in zip(jobs, completions, strict=True)]
        graded = grade(self.grader, jobs, programs, progress=progress)
        scores = score(jobs, graded, ks)
        cap = self.config.agents.generator.sampling.max_new_tokens
        samples = [
            {
                "task_id": problem.task_id,
                "completion": completion,
                "passed": verdict.passed,
                "rounds": result.rounds,
                "stop_reason": result.stop_reason,
                "extracted": defines(result.code, problem.entry_point) if problem.entry_point
                else bool(result.code.strip()),
                "truncated": bool(result.history) and result.history[-1].get("completion_tokens", 0) >= cap,
            }
            for problem, result, completion, verdict in zip(jobs, results, completions, graded, strict=True)
        ]
        agree = sum(r.passed == g.passed for r, g in zip(results, graded, strict=True))
        return EvaluationReport(
            benchmark=name,
            problems=problems,
            n_samples=n_samples,
            max_rounds=self.config.graph.max_rounds,
            feedback_from_tests=self.config.graph.max_rounds > 1,
            pass_at_k=scores.pass_at_k,
            by_family=scores.by_family,
            mean_rounds=sum(r.rounds for r in results) / len(results),
            agreement=agree / len(results),
            samples=samples,
            extracted_share=sum(bool(s["extracted"]) for s in samples) / len(samples),
            truncated_share=sum(bool(s["truncated"]) for s in samples) / len(samples),
            request_failures=sum(r.stop_reason == REQUEST_FAILED for r in results),
        )

    def evaluate_repository(
        self,
        benchmark: str | Sequence[RepoTask],
        *,
        n_samples: int = 1,
        limit: int | None = None,
        data: str | Path | None = None,
        split: str = "all",
        repos_dir: str | Path | None = None,
        ks: Sequence[int] = (1, 10, 100),
        progress: bool = True,
        seed: int | None = None,
        traces: TraceRecorder | None = None,
    ) -> RepoEvaluationReport:
        """Run ``n_samples`` repository-graph episodes per task (``config.repository``'s budget, the
        Generator's model) and report them (``evaluation.repository``). ``benchmark`` is ``minirepo:SPLIT``
        (or ``minirepo`` with ``split``; ``data``: another set file), ``swebench:FILE`` (snapshots under
        ``repos_dir``) or a list of RepoTasks. With ``seed``, episode ``i`` is seeded ``row_seed(seed, i)``.
        ``traces`` records every episode as an MLflow trace (``evaluation.traces``).
        """
        if isinstance(benchmark, str):
            name, tasks = load_repo_tasks(benchmark, split=split, data=data, repos_dir=repos_dir, limit=limit)
        else:
            name, tasks = "custom", list(benchmark)[:limit]
            if not tasks:
                raise ValueError("no repository tasks to evaluate")
            check_gradable(tasks)
        jobs = jobs_for(tasks, n_samples)
        finished: dict[int, dict[str, Any]] = {}
        start = time.perf_counter()
        try:
            records = run_sync(lambda: self._repository_episodes(jobs, progress, seed, finished, traces))
        except EngineError as exc:
            if not finished:
                raise
            done = sorted(finished)
            partial = report_for(name, len({jobs[i][0].instance_id for i in done}), n_samples,
                                 [finished[i] for i in done], time.perf_counter() - start, ks)
            raise EvaluationIncomplete(str(exc), partial, len(jobs)) from exc
        failed = [r for r in records if r["stop_reason"] == REQUEST_FAILED]
        if len(failed) == len(records):
            raise EngineError(f"every model request failed, e.g.: {failed[0]['error']}")
        return report_for(name, len(tasks), n_samples, records, time.perf_counter() - start, ks)

    async def _repository_episodes(
        self, jobs: Sequence[tuple[RepoTask, int]], progress: bool, seed: int | None,
        finished: dict[int, dict[str, Any]], traces: TraceRecorder | None,
    ) -> list[dict[str, Any]]:
        # Engines the agents already hold are shared (one copy of the weights); others close afterwards.
        shared = self._agents.engines if self._agents is not None else None
        engines = shared or EngineCache(self.config.agents.vllm, self._resolved, self.config.agents.timeout_s)
        try:
            graph = repository_graph_for(self.config, self.grader, chat_model=self._chat_model,
                                         engines=engines)
            concurrency = self.config.graph.concurrency
            if not progress:
                return await run_episodes(graph, jobs, concurrency=concurrency, seed=seed, finished=finished,
                                          traces=traces)
            with episode_progress(len(jobs)) as on_done:
                return await run_episodes(graph, jobs, concurrency=concurrency, seed=seed, on_done=on_done,
                                          finished=finished, traces=traces)
        finally:
            if shared is None:
                engines.close()

    async def _generate(self, jobs: Sequence[Problem], progress: bool, seed: int | None,
                        finished: dict[int, SolveResult]) -> list[SolveResult]:
        if not progress:
            return await self.asolve_many(jobs, seed=seed, finished=finished, fail_alone=True)
        from rich.console import Console
        from rich.progress import Progress

        console = Console(stderr=True)
        if not console.is_terminal:  # a log file or pipe: a bar would only appear at the end
            return await self.asolve_many(jobs, on_done=_progress_lines(len(jobs), console), seed=seed,
                                          finished=finished, fail_alone=True)
        with Progress(console=console, transient=False) as bar:
            task = bar.add_task("generating", total=len(jobs))
            return await self.asolve_many(jobs, on_done=lambda _: bar.advance(task), seed=seed,
                                          finished=finished, fail_alone=True)

    def train_agents(
        self,
        algorithm: str | None = None,
        episodes: int | None = None,
        *,
        config: TrainingConfig | str | Path | None = None,
        run_dir: str | Path | None = None,
        seed: int | None = None,
        device: str | None = None,
        resume: bool = False,
        progress: bool = True,
        backend: Literal["local", "verl"] = "local",
        verl_config: VerlConfig | str | Path | None = None,
    ) -> TrainingResults:
        """RL-train the Generator through this workflow (see ``coding_framework.training.trainer``).

        ``config`` is a ``TrainingConfig``, a YAML path or a shipped config's name (e.g. ``ppo_basic``;
        default: this supervisor's workflow with the training defaults). ``algorithm``, ``seed`` and
        ``device`` (auto|cpu|cuda) replace the config's when given; ``episodes`` sets the steps to
        ``ceil(episodes / (problems_per_step * group_size))``. Afterwards ``solve``/``evaluate`` use the
        trained model, its role adapters included. Seeds, thread count and other process-wide state are
        restored when it returns.

        ``backend="verl"`` trains through verl's trainer instead (``training.verl.run.run_verl``: a config
        with ``device: cpu``, e.g. ``verl_cpu``, on this machine's CPU), with ``verl_config`` (a
        ``VerlConfig``, YAML path or shipped name; default ``verl_fsdp_cpu`` for ``device: cpu``, else
        ``verl_fsdp``); its final model is used afterwards the same way.
        """
        from coding_framework.config import load_config
        from coding_framework.config.training import TrainingConfig
        from coding_framework.training.run.setup import configure
        from coding_framework.training.trainer import Trainer

        if isinstance(config, TrainingConfig):
            base = config
        elif config is not None:
            base = load_config(TrainingConfig, config)
        else:
            base = TrainingConfig(workflow=self.config)
        cfg = configure(base, algorithm=algorithm, episodes=episodes, seed=seed, device=device)
        out = Path(run_dir) if run_dir is not None else Path("runs") / f"{cfg.algorithm}-seed{cfg.seed}"
        if backend == "verl":
            verl = _verl_config(cfg, verl_config)
            from coding_framework.training.verl.run import run_verl

            results = run_sync(lambda: asyncio.to_thread(lambda: run_verl(cfg, verl, out, resume=resume)))
        elif backend == "local":
            results = run_sync(
                lambda: asyncio.to_thread(lambda: Trainer(cfg, out, resume=resume, progress=progress).run())
            )
        else:
            raise ValueError(f"backend {backend!r} is not one of local, verl")
        assert results.final_model_dir is not None  # both backends save the final model
        trained = ModelRef.directory(results.final_model_dir, engine="local")
        agents = self.config.agents.model_copy(update={"model": trained})
        agents.generator = agents.generator.model_copy(update={"model": None})
        agents.reviewer = agents.reviewer.model_copy(update={"model": None})
        self.config = self.config.model_copy(update={"agents": agents})
        self._release_agents()
        return results


def _verl_config(cfg: TrainingConfig, given: VerlConfig | str | Path | None) -> VerlConfig:
    """The verl settings of a ``backend="verl"`` run: ``given``, or the shipped default for the device."""
    from coding_framework.config import load_config
    from coding_framework.config.verl import VerlConfig

    if isinstance(given, VerlConfig):
        return given
    default = "verl_fsdp_cpu" if cfg.device == "cpu" else "verl_fsdp"
    return load_config(VerlConfig, given or default)


def _progress_lines(total: int, console: Any) -> Callable[[SolveResult], None]:
    """One line per finished episode: how many are done, which task, its verdict and the time so far."""
    start = time.perf_counter()
    done = passed = 0

    def line(result: SolveResult) -> None:
        nonlocal done, passed
        done += 1
        passed += result.passed
        console.print(
            f"generated {done}/{total}: {result.task_id} {'passed' if result.passed else 'failed'} "
            f"in {result.rounds} round(s); {passed} passed so far, {time.perf_counter() - start:.0f} s",
            highlight=False, soft_wrap=True,
        )

    return line


def _repository_benchmark(
    benchmark: str | Sequence[Problem] | Sequence[RepoTask],
) -> str | list[RepoTask] | None:
    """``benchmark`` when it names repository tasks or lists them; None for problems."""
    if isinstance(benchmark, str):
        return benchmark if is_repository_benchmark(benchmark) else None
    tasks = list(benchmark)
    if tasks and all(isinstance(t, RepoTask) for t in tasks):
        return cast(list[RepoTask], tasks)
    return None


def _problems(
    benchmark: str | Sequence[Problem], data: str | Path | None, split: str, limit: int | None
) -> tuple[str, list[Problem]]:
    if isinstance(benchmark, str):
        name, problems = benchmark, load_benchmark(benchmark, resolve_source(benchmark, data), split)
    else:
        name, problems = "custom", list(benchmark)
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        problems = problems[:limit]
    if not problems:
        raise ValueError(f"benchmark {name!r} has no problems to evaluate")
    return name, problems


__all__ = ["CodingSupervisor", "EvaluationIncomplete", "EvaluationReport", "SolveResult", "run_sync"]
