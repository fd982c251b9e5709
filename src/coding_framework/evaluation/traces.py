"""Finished episodes as MLflow traces a person can browse: one trace per episode, written after it ends.

A trace is built from an episode's final state (plain JSON, ``graphs.state.EpisodeState`` or
``graphs.repository.RepoEpisodeState``), so recording costs a rollout nothing while it runs. Under the
root span (the task in, the outcome out) the spans follow the episode in order:

- repository: per turn one ``generator`` span (what the model read new this turn in, its answer out) and
  one span named after the tool (the tool and its arguments in, the observation out; ``parse_error`` for
  an answer without a call), then ``grade`` (the changed files in, the hidden tests' verdict out) and
  ``reviewer`` when the Reviewer critiqued;
- function: per round one ``generator`` span (the problem or the feedback in, the answer out), one
  ``execute`` span (the code in, the tests' verdict out) and ``reviewer`` when the round was reviewed.

A model span of a training episode carries its call record's counts (``prompt_tokens``,
``response_tokens``, ``logprob_mean``), role, turn, policy version and stop reason; token ids stay in
the rollout. The state holds no timings: spans are laid out in order, a microsecond apart.

The spans are written with the store's own calls on the given tracking URI (``TracingClient``), not
through MLflow's global tracer, whose exporter writes to the process-wide tracking URI and drops a failed
write with a warning: here a failure raises, or, through ``TraceRecorder`` (a background writer for
training), is logged while the run goes on.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from coding_framework.config.policies import GENERATOR_ROLE, REVIEWER_ROLE
from coding_framework.logs import get_logger
from coding_framework.models.registry import fallback_tracking_uri, mlflow_client

if TYPE_CHECKING:
    from mlflow.entities import Span
    from mlflow.tracking import MlflowClient

__all__ = [
    "DEFAULT_EXPERIMENT", "EpisodeKind", "EpisodeMode", "EpisodeTrace", "SpanRecord", "TraceError",
    "TraceRecorder", "build_episode_trace", "record_episode_trace", "sample_for_tracing",
    "write_episode_trace",
]

log = get_logger(__name__)

EpisodeKind = Literal["function", "repository"]
EpisodeMode = Literal["training", "evaluation"]
DEFAULT_EXPERIMENT = "coding-framework"
"""The experiment traces go to without ``experiment`` or ``run_id`` (the training runs' default too)."""

KINDS: tuple[EpisodeKind, ...] = ("function", "repository")
MODES: tuple[EpisodeMode, ...] = ("training", "evaluation")
TICK_NS = 1_000
PREVIEW_CHARS = 1_000  # what MLflow's own exporter keeps of a trace's request and response
TIMING = "recorded after the episode: spans are in order, their durations are not measured"


class TraceError(ValueError):
    """A state that is not a finished episode of the kind asked for, or bad sampling settings."""


@dataclass(frozen=True)
class SpanRecord:
    """One span before it is written: ``error`` sets the span's status to ERROR with that description."""

    name: str
    span_type: str
    inputs: Any
    outputs: Any
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class EpisodeTrace:
    """A trace before it is written: the root span, its children in episode order, the trace's tags."""

    root: SpanRecord
    children: list[SpanRecord]
    tags: dict[str, str]


def _require(state: Mapping[str, Any], key: str, kind: EpisodeKind) -> Any:
    if key not in state:
        raise TraceError(f"a finished {kind} episode's state has `{key}`; this one has only "
                         f"{sorted(state)}")
    return state[key]


def _model_span(record: Mapping[str, Any] | None, inputs: dict[str, Any], text: str, *, role: str,
                turn: int, completion_tokens: int | None = None) -> SpanRecord:
    """A model call: with its call record (training) its token counts, policy version and stop reason."""
    attributes: dict[str, Any] = {"role": role, "turn": turn}
    if record is not None:
        prompt, response = len(record["prompt_ids"]), len(record["response_ids"])
        logprobs = record.get("logprobs") or []
        attributes.update(role=record["role"], policy_version=record["policy_version"],
                          stop_reason=record["stop_reason"], prompt_tokens=prompt, response_tokens=response,
                          **({"logprob_mean": sum(logprobs) / len(logprobs)} if logprobs else {}))
        attributes["mlflow.chat.tokenUsage"] = {"input_tokens": prompt, "output_tokens": response,
                                                "total_tokens": prompt + response}
        inputs = {**inputs, "prompt_tokens": prompt}
    elif completion_tokens is not None:
        attributes["response_tokens"] = completion_tokens
    return SpanRecord(attributes["role"], "LLM", inputs, text, attributes)


def _records(state: Mapping[str, Any], key: str, expected: int, what: str) -> list[Mapping[str, Any] | None]:
    """The call records under ``key``, one per ``what``; all None for an episode that keeps none."""
    records = list(state.get(key) or [])
    if not records:
        return [None] * expected
    if len(records) != expected:
        raise TraceError(f"{len(records)} call records in `{key}` for {expected} {what}: the state is "
                         "not one episode's")
    return records


def _observation(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in messages)


def _repository_trace(state: Mapping[str, Any]) -> EpisodeTrace:
    task = _require(state, "task", "repository")
    exchanges = _require(state, "exchanges", "repository")
    verdict = _require(state, "verdict", "repository")
    records = _records(state, "calls", len(exchanges), "turns")
    children: list[SpanRecord] = []
    for turn, (exchange, record) in enumerate(zip(exchanges, records, strict=True)):
        read = state.get("opening", []) if turn == 0 else exchanges[turn - 1]["observation"]
        children.append(_model_span(record, {"new_messages": list(read)}, exchange["text"],
                                    role=GENERATOR_ROLE, turn=turn))
        tool, ok, parse_error = exchange["tool"], bool(exchange["ok"]), exchange.get("parse_error")
        observation = _observation(exchange["observation"])
        error = None if ok else (parse_error or (observation.splitlines() or ["failed"])[0])
        children.append(SpanRecord(
            tool or "parse_error", "TOOL", {"tool": tool, "arguments": exchange.get("arguments", {})},
            {"observation": observation}, {"turn": turn, "ok": ok, "parse_error": parse_error}, error))
    f2p, p2p = verdict["fail_to_pass"], verdict["pass_to_pass"]
    children.append(SpanRecord(
        "grade", "EVALUATOR", {"changed_files": state.get("changed", {})}, verdict,
        {"resolved": verdict["resolved"], "reward": verdict["reward"], "status": verdict["status"],
         "fail_to_pass": f"{f2p[0]}/{f2p[1]}", "pass_to_pass": f"{p2p[0]}/{p2p[1]}",
         "refused": verdict["refused"], "tier": verdict["tier"],
         "infrastructure_error": verdict["infrastructure_error"]},
        "infrastructure error" if verdict["infrastructure_error"] else None))
    if state.get("review"):
        children.append(SpanRecord(REVIEWER_ROLE, "AGENT", {"changed_files": state.get("changed", {})},
                                   state["review"], {"role": REVIEWER_ROLE}))
    root = SpanRecord(
        "repository_episode", "AGENT",
        {"instance_id": task["instance_id"], "repo": task.get("repo"),
         "problem_statement": task.get("problem_statement")},
        {"resolved": verdict["resolved"], "reward": verdict["reward"],
         "stop_reason": state.get("stop_reason"), "turns": len(exchanges),
         "tokens_used": state.get("tokens_used", 0)})
    passed = str(bool(verdict["resolved"])).lower()
    return EpisodeTrace(root, children, {"task_id": str(task["instance_id"]), "passed": passed,
                                         "resolved": passed})


def _function_trace(state: Mapping[str, Any]) -> EpisodeTrace:
    rounds = _require(state, "rounds", "function")
    problem = state.get("problem") or {}
    if not problem and "text" not in state:
        raise TraceError("a function episode's state has `problem` or `text`; this one has neither")
    records = _records(state, "calls", len(rounds), "rounds")
    reviews = {r["turn"]: r for r in state.get("review_calls") or []}
    prompt = problem.get("prompt", state.get("text"))
    children: list[SpanRecord] = []
    for index, (record_round, record) in enumerate(zip(rounds, records, strict=True)):
        n = record_round["round"]
        read = {"problem": prompt} if index == 0 else {"feedback": rounds[index - 1].get("feedback", "")}
        children.append(_model_span(record, read, record_round.get("answer", ""), role=GENERATOR_ROLE,
                                    turn=n - 1, completion_tokens=record_round.get("completion_tokens")))
        if "status" in record_round:
            verdict = {key: record_round.get(key) for key in
                       ("passed", "status", "tests_passed", "tests_total", "failures")}
            children.append(SpanRecord(
                "execute", "TOOL", {"code": record_round.get("code", "")},
                {**verdict, "feedback": record_round.get("execution", "")},
                {"round": n, "has_tests": record_round.get("has_tests"),
                 **{k: v for k, v in verdict.items() if k != "failures"}}))
        if record_round.get("review"):
            review_inputs = {"code": record_round.get("code", ""),
                             "execution": record_round.get("execution", "")}
            review = reviews.get(n - 1)
            if review is not None:
                children.append(_model_span(review, review_inputs, record_round["review"], role=REVIEWER_ROLE,
                                            turn=n - 1))
            else:
                children.append(SpanRecord(REVIEWER_ROLE, "AGENT", review_inputs, record_round["review"],
                                           {"role": REVIEWER_ROLE, "turn": n - 1}))
    task_id = str(problem.get("task_id", "free-text"))
    passed = bool(state.get("passed", False))
    root = SpanRecord(
        "function_episode", "AGENT", {"task_id": task_id, "prompt": prompt},
        {"passed": passed, "stop_reason": state.get("stop_reason"), "rounds": len(rounds),
         "tokens_used": state.get("tokens_used", 0), "code": state.get("code", "")})
    return EpisodeTrace(root, children, {"task_id": task_id, "passed": str(passed).lower()})


def _span(record: SpanRecord, trace_id: str, otel_trace_id: int, span_id: int, parent_id: int | None,
          start_ns: int, end_ns: int) -> Span:
    from mlflow.entities import Span, SpanStatus, SpanStatusCode
    from mlflow.tracing.constant import SpanAttributeKey
    from mlflow.tracing.utils import build_otel_context, dump_span_attribute_value
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan

    attributes = {
        SpanAttributeKey.REQUEST_ID: json.dumps(trace_id),
        SpanAttributeKey.SPAN_TYPE: json.dumps(record.span_type),
        SpanAttributeKey.INPUTS: dump_span_attribute_value(record.inputs),
        SpanAttributeKey.OUTPUTS: dump_span_attribute_value(record.outputs),
        **{key: dump_span_attribute_value(value) for key, value in record.attributes.items()},
    }
    status = SpanStatus(SpanStatusCode.ERROR, record.error) if record.error else SpanStatus(SpanStatusCode.OK)
    return Span(ReadableSpan(
        name=record.name,
        context=build_otel_context(otel_trace_id, span_id),
        parent=build_otel_context(otel_trace_id, parent_id) if parent_id is not None else None,
        start_time=start_ns, end_time=end_ns, attributes=attributes, status=status.to_otel_status(),
        resource=Resource.get_empty(),
    ))


def _artifact_location(uri: str) -> str | None:
    """Beside a SQLite store, as a training run keeps its artifacts; a server's own default otherwise."""
    if not uri.startswith("sqlite:///"):
        return None
    return (Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts").resolve().as_uri()


def _experiment_id(client: MlflowClient, uri: str, experiment: str | None, run_id: str | None) -> str:
    from mlflow.exceptions import MlflowException

    if experiment is None and run_id is not None:
        return str(client.get_run(run_id).info.experiment_id)
    name = experiment or DEFAULT_EXPERIMENT
    found = client.get_experiment_by_name(name)
    if found is not None:
        return str(found.experiment_id)
    try:
        return str(client.create_experiment(name, artifact_location=_artifact_location(uri)))
    except MlflowException:  # another process created it first
        again = client.get_experiment_by_name(name)
        if again is None:
            raise
        return str(again.experiment_id)


def _preview(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:PREVIEW_CHARS]


def build_episode_trace(
    state: Mapping[str, Any],
    *,
    kind: EpisodeKind,
    mode: EpisodeMode,
    step: int | None = None,
    reward: float | None = None,
    tags: Mapping[str, str] | None = None,
) -> EpisodeTrace:
    """The spans and tags of one finished episode (see ``record_episode_trace``), nothing written yet."""
    if kind not in KINDS:
        raise TraceError(f"unknown episode kind {kind!r}: one of {', '.join(KINDS)}")
    if mode not in MODES:
        raise TraceError(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
    if not isinstance(state, Mapping):
        raise TraceError(f"an episode's state is a mapping, not {type(state).__name__}")
    built = _repository_trace(state) if kind == "repository" else _function_trace(state)
    stepped = {"step": step} if step is not None else {}
    root = replace(
        built.root, outputs={**built.root.outputs, **({"reward": reward} if reward is not None else {})},
        attributes={"kind": kind, "mode": mode, "timing": TIMING, **stepped},
    )
    trace_tags = {
        **built.tags, "kind": kind, "mode": mode,
        **{key: str(value) for key, value in stepped.items()},
        **({"stop_reason": str(state["stop_reason"])} if state.get("stop_reason") else {}),
        **({"reward": f"{reward:g}"} if reward is not None else {}),
        **dict(tags or {}),
    }
    return EpisodeTrace(root, built.children, trace_tags)


def write_episode_trace(built: EpisodeTrace, *, uri: str | None = None, experiment: str | None = None,
                        run_id: str | None = None) -> str:
    """Write ``built`` to the store at ``uri`` (see ``record_episode_trace``); returns the trace id."""
    from mlflow.entities import TraceInfo, TraceLocation, TraceState
    from mlflow.tracing.client import TracingClient
    from mlflow.tracing.constant import TRACE_SCHEMA_VERSION, TRACE_SCHEMA_VERSION_KEY, TraceMetadataKey
    from mlflow.tracing.utils import encode_trace_id

    uri = uri or fallback_tracking_uri()
    experiment_id = _experiment_id(mlflow_client(uri), uri, experiment, run_id)
    otel_trace_id = secrets.randbits(128) | 1
    trace_id = "tr-" + encode_trace_id(otel_trace_id)
    start = time.time_ns()
    root, root_id = built.root, secrets.randbits(64) | 1
    end = start + TICK_NS * max(1, len(built.children))
    spans = [_span(root, trace_id, otel_trace_id, root_id, None, start, end)]
    for i, child in enumerate(built.children):
        spans.append(_span(child, trace_id, otel_trace_id, secrets.randbits(64) | 1, root_id,
                           start + i * TICK_NS, start + (i + 1) * TICK_NS))
    metadata = {TRACE_SCHEMA_VERSION_KEY: str(TRACE_SCHEMA_VERSION)}
    if run_id is not None:
        metadata[TraceMetadataKey.SOURCE_RUN] = run_id
    info = TraceInfo(
        trace_id=trace_id, trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=start // 1_000_000, execution_duration=(end - start) // 1_000_000, state=TraceState.OK,
        request_preview=_preview(root.inputs), response_preview=_preview(root.outputs),
        trace_metadata=metadata, tags={"mlflow.traceName": root.name, **built.tags},
    )
    client = TracingClient(uri)
    # Spans first, as MLflow's exporter does: the store then records that it holds them, and start_trace
    # completes the trace's row (tags, previews) with the token usage the spans carry.
    client.log_spans(experiment_id, spans)
    client.start_trace(info)
    return trace_id


def record_episode_trace(
    state: Mapping[str, Any],
    *,
    kind: EpisodeKind,
    mode: EpisodeMode,
    step: int | None = None,
    experiment: str | None = None,
    uri: str | None = None,
    run_id: str | None = None,
    reward: float | None = None,
    tags: Mapping[str, str] | None = None,
) -> str:
    """Write one finished episode as an MLflow trace; returns the trace id.

    Args:
        state: the episode's final graph state.
        kind: ``repository`` (``graphs.repository``) or ``function`` (``graphs.build``).
        mode: ``training`` or ``evaluation``; a tag, as are ``step`` (when given), ``kind``, the task id,
            ``passed`` (and ``resolved`` for a repository) and the stop reason.
        experiment: the MLflow experiment's name (created when missing); None: ``run_id``'s experiment,
            else ``DEFAULT_EXPERIMENT``.
        uri: the tracking URI; None: ``$MLFLOW_TRACKING_URI``, else the user cache's SQLite store.
        run_id: an MLflow run the trace belongs to (the run's page lists it).
        reward: the episode's training reward, when the caller has one (a repository verdict has its own).
        tags: more tags (strings) for the trace.
    """
    built = build_episode_trace(state, kind=kind, mode=mode, step=step, reward=reward, tags=tags)
    return write_episode_trace(built, uri=uri, experiment=experiment, run_id=run_id)


class TraceRecorder:
    """Writes episode traces on one background thread, so a training step does not wait on the store.

    ``submit`` builds the trace at once (a malformed state raises there) and queues the write; a failed
    write is logged (``episode_trace_not_recorded``) and the run goes on. Leaving the ``with`` block (or
    ``close``) waits for the queued writes.
    """

    def __init__(self, *, uri: str | None = None, experiment: str | None = None,
                 run_id: str | None = None) -> None:
        self.uri, self.experiment, self.run_id = uri, experiment, run_id
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="episode-traces")

    def submit(self, state: Mapping[str, Any], *, kind: EpisodeKind, mode: EpisodeMode,
               step: int | None = None, reward: float | None = None,
               tags: Mapping[str, str] | None = None) -> Future[str | None]:
        """Queue one episode; the future holds its trace id, or None when the write failed."""
        built = build_episode_trace(state, kind=kind, mode=mode, step=step, reward=reward, tags=tags)
        return self._pool.submit(self._write, built)

    def _write(self, built: EpisodeTrace) -> str | None:
        try:
            return write_episode_trace(built, uri=self.uri, experiment=self.experiment, run_id=self.run_id)
        except Exception as exc:  # a trace is for reading later: losing one must not stop a run
            log.warning("episode_trace_not_recorded", task_id=built.tags.get("task_id"),
                        error=f"{type(exc).__name__}: {exc}".splitlines()[0])
            return None

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self) -> TraceRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sample_for_tracing(n_episodes: int, *, step: int, every: int, per_step: int, seed: int) -> list[int]:
    """Which of a training step's ``n_episodes`` episodes to record: ``per_step`` of them, drawn without
    replacement, on every ``every``-th step (``every`` 0 or ``per_step`` 0: none); sorted indices, the
    same for the same ``seed`` and ``step``, so a resumed run traces what it would have."""
    if every < 0 or per_step < 0 or n_episodes < 0:
        raise TraceError(f"tracing needs non-negative settings, got every={every}, per_step={per_step} "
                         f"for {n_episodes} episodes")
    if every == 0 or per_step == 0 or step % every != 0:
        return []
    rng = random.Random(f"traces:{seed}:{step}")
    return sorted(rng.sample(range(n_episodes), min(per_step, n_episodes)))
