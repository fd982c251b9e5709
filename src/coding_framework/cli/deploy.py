"""`coding-framework deploy`: start a rollout on a running model server and, with --wait, follow it; or abort
a rollout (--abort ID), or swap the champion back to its previous version (--rollback). The request and
the status it reads are the server's own models (`serving.rollouts.api`), so both validate one way."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any, get_args

import typer

from coding_framework.cli.app import app
from coding_framework.cli.common import ADMIN_KEY_ENV, MODEL_HELP, model_flag
from coding_framework.cli.output import fail, print_result_line
from coding_framework.config.rollout import RolloutStrategy
from coding_framework.models.registry import gate_failure

if TYPE_CHECKING:
    import httpx
    from rich.progress import Progress, TaskID

    from coding_framework.serving.rollouts.api import ArmStatus, RolloutRequest, RolloutStatus

# The flag that sets each field of the request, for errors.
_FLAGS = {
    "candidate": "SPEC", "strategy": "--strategy", "steps": "--steps", "max_duration_s": "--max-duration",
    "max_graded": "--max-graded", "on_inconclusive": "--on-inconclusive", "probe": "--probe",
    "probe.rate_per_s": "--probe-rate", "probe.limit": "--probe-limit",
}


@app.command()
def deploy(
    spec: Annotated[
        str | None,
        typer.Argument(help=f"The candidate (not with --abort / --rollback). {MODEL_HELP}"),
    ] = None,
    server: Annotated[str, typer.Option(help="The model server's base URL.")] = "http://127.0.0.1:8080",
    strategy: Annotated[str, typer.Option(help=" | ".join(get_args(RolloutStrategy)))] = "canary",
    steps: Annotated[
        str | None,
        typer.Option(help="Canary traffic percents, strictly increasing, e.g. 10,50,100 (default: the "
                     "server's rollout policy)."),
    ] = None,
    wait: Annotated[
        bool, typer.Option(help="Follow the rollout (progress on stderr) until promoted or rolled back.")
    ] = False,
    admin_key: Annotated[
        str | None,
        typer.Option(envvar=ADMIN_KEY_ENV, show_envvar=True, help="The server's admin key (Bearer)."),
    ] = None,
    poll_interval: Annotated[
        float | None,
        typer.Option(min=0.05, help="With --wait: seconds between polls (default: the rollout policy's "
                     "poll_interval_s)."),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(min=1, help="With --wait: give up (exit 1) after this many seconds.")
    ] = None,
    probe: Annotated[
        str | None,
        typer.Option(help="Probe set graded on both versions while the rollout runs: a benchmark, NAME:SPLIT "
                     "or a problem-record JSONL on the server (e.g. synthetic:heldout)."),
    ] = None,
    probe_rate: Annotated[
        float | None, typer.Option(min=0.001, max=100, help="Probe problems per second (default: policy).")
    ] = None,
    probe_limit: Annotated[int | None, typer.Option(min=1, help="At most this many probe problems.")] = None,
    max_duration: Annotated[
        float | None, typer.Option(min=0.001, help="Budget: seconds without a verdict before `inconclusive`.")
    ] = None,
    max_graded: Annotated[
        int | None, typer.Option(min=1, help="Budget: graded candidate answers before `inconclusive`.")
    ] = None,
    on_inconclusive: Annotated[
        str | None, typer.Option(help="rollback | hold: what an exhausted budget does (default: policy).")
    ] = None,
    abort: Annotated[
        str | None, typer.Option(help="Abort the rollout with this id (rolls it back at once).")
    ] = None,
    rollback: Annotated[
        bool, typer.Option(help="Swap the champion back to its previous version (the registry's `previous`).")
    ] = False,
    force: Annotated[
        bool, typer.Option(help="Deploy a registry version that failed its training run's regression gate.")
    ] = False,
) -> None:
    """Roll SPEC out on the server by STRATEGY; each step is gated by the server's sequential test.

    The last stdout line is the rollout's status as JSON (with --wait, the final one: see its `status`).

    Exit codes: 0 started (with --wait: ended: promoted, rolled back, inconclusive or aborted), 1 --timeout
    ran out, 2 bad input or an HTTP error.
    """
    import httpx

    if sum((spec is not None, abort is not None, rollback)) != 1:
        fail("give exactly one of SPEC (start a rollout), --abort ID or --rollback")
    headers = {"Authorization": f"Bearer {admin_key}"} if admin_key else {}
    with httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=600) as client:
        if abort is not None or rollback:
            path = f"/v1/rollouts/{abort}/abort" if abort is not None else "/v1/rollback"
            print_result_line(_call(client, "POST", path))
            return
        assert spec is not None
        _check_gate(spec, force)
        request = _rollout_request(spec, strategy, steps, probe, probe_rate, probe_limit, max_duration,
                                   max_graded, on_inconclusive)
        body = request.model_dump(mode="json", exclude_unset=True)
        status = _status("/v1/rollouts", _call(client, "POST", "/v1/rollouts", body))
        if wait:
            from coding_framework.config.rollout import RolloutPolicy

            interval = poll_interval if poll_interval is not None else RolloutPolicy().poll_interval_s
            status = _follow(client, status, interval, timeout)
    print_result_line(status.model_dump(mode="json"))
    if status.status == "running" and wait:
        raise typer.Exit(1)


def _check_gate(spec: str, force: bool) -> None:
    """A registry version that failed its training run's regression gate is deployed only with --force."""
    ref = model_flag(spec)
    gated_out = gate_failure(ref) if ref.kind == "registry" else None
    if gated_out is None:
        return
    if not force:
        fail(f"{spec} failed its regression gate ({gated_out}); deploy it anyway with --force")
    typer.echo(f"warning: {spec} failed its regression gate ({gated_out}); deploying it (--force)", err=True)


def _rollout_request(spec: str, strategy: str, steps: str | None, probe: str | None, probe_rate: float | None,
                     probe_limit: int | None, max_duration: float | None, max_graded: int | None,
                     on_inconclusive: str | None) -> RolloutRequest:
    from pydantic import ValidationError

    from coding_framework.serving.rollouts.api import RolloutRequest, first_error

    if probe is None and (probe_rate is not None or probe_limit is not None):
        fail("--probe-rate and --probe-limit need --probe SRC")
    body: dict[str, Any] = {"candidate": str(model_flag(spec)), "strategy": strategy}
    if steps is not None:
        body["steps"] = _parse_steps(steps)
    if probe is not None:
        body["probe"] = {"source": probe, "limit": probe_limit}
        if probe_rate is not None:
            body["probe"]["rate_per_s"] = probe_rate
    extra = {"max_duration_s": max_duration, "max_graded": max_graded, "on_inconclusive": on_inconclusive}
    try:
        return RolloutRequest.model_validate(body | {k: v for k, v in extra.items() if v is not None})
    except ValidationError as exc:
        field, message = first_error(exc)
        fail(f"{_FLAGS.get(field or '', field)}: {message}")


def _parse_steps(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        fail(f"--steps {text!r}: give comma-separated integer percents, e.g. 10,50,100")


def _status(path: str, payload: dict[str, Any]) -> RolloutStatus:
    from pydantic import ValidationError

    from coding_framework.serving.rollouts.api import RolloutStatus, first_error

    try:
        return RolloutStatus.model_validate(payload)
    except ValidationError as exc:
        field, message = first_error(exc)
        fail(f"{path} answered something that is not a rollout status ({field}: {message})")


def _call(client: httpx.Client, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    import httpx

    try:
        response = client.request(method, path, json=body)
    except httpx.HTTPError as exc:
        fail(f"cannot reach the server at {client.base_url}: {exc or type(exc).__name__}")
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if response.is_success and isinstance(payload, dict):
        return payload
    message = payload.get("error", {}).get("message") if isinstance(payload, dict) else None
    fail(f"{method} {path} answered {response.status_code}: {message or response.text[:200] or 'no body'}")


def _follow(
    client: httpx.Client, status: RolloutStatus, interval: float, timeout: float | None
) -> RolloutStatus:
    """Poll until the rollout ends (or ``timeout``), showing the candidate's traffic share and grades."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    deadline = None if timeout is None else time.monotonic() + timeout
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:>3.0f}% traffic"),
               TimeElapsedColumn(), TextColumn("{task.fields[detail]}"))
    console = Console(stderr=True)
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(f"{status.strategy} {status.candidate_version}", total=100, detail="")
        while True:
            _show(progress, task, status)
            if status.status != "running" or (deadline is not None and time.monotonic() > deadline):
                break
            time.sleep(interval)
            path = f"/v1/rollouts/{status.id}"
            status = _status(path, _call(client, "GET", path))
    if status.status != "running":
        console.print(f"{status.status}: {status.reason}", markup=False, highlight=False, soft_wrap=True)
    return status


def _show(progress: Progress, task: TaskID, status: RolloutStatus) -> None:
    cand, champ = status.candidate, status.champion

    def rate(arm: ArmStatus, probe: bool = False) -> str:
        value, n = (arm.probe_pass_rate, arm.probe_graded) if probe else (arm.pass_rate, arm.graded)
        return f"{value:.2f} of {n}" if value is not None else "ungraded"

    probes = (f", probes {rate(cand, probe=True)} vs {rate(champ, probe=True)} (candidate unparseable "
              f"{cand.probe_unparseable}, crashed {cand.probe_crashed}, timed out {cand.probe_timed_out}, "
              f"no answer {cand.probe_errors})" if cand.probe_graded or champ.probe_graded else "")
    detail = (f"{status.status}: pass {rate(cand)} vs champion {rate(champ)}{probes}, "
              f"errors {cand.errors}/{cand.requests}")
    progress.update(task, completed=status.weights[status.candidate_version], detail=detail)
