"""The closed loop on a real pretrained model: serve SmolLM2-135M-Instruct as the champion, canary the RL
run's registered model against it on graded probes from MBPP's validation split, and file the verdict.

Reproduce (after `benchmarks/training/real_model_rl.py`, whose seed-0 run registered its final model in its
own MLflow store; MBPP from ../shared/data):

    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.serving.real_model_canary \
        --run-dir runs/real_model_rl/seed0

Through the real CLI: `coding-framework serve` (the base model on the local engine, the run's MLflow store
as its registry), then `coding-framework deploy models:/NAME/VERSION --strategy canary --probe
mbpp:validation --wait`: probes are sent to both versions off the request path and graded by the grader,
and the rollout is promoted, rolled back or ends inconclusive (then rolled back) by the server's sequential
test. The version deployed is the run's registered version, whether or not its gate gave it the
`challenger` alias (`--force` where it did not). Results: benchmarks/results/real_model_canary.json (the
rollout's status, decisions, per-arm probe counts and the registry's aliases afterwards; `--out` to write
elsewhere).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from benchmarks.serving.served import Served
from coding_framework.models import resolve_model
from coding_framework.problems import write_problem_records
from coding_framework.problems.sources import load_source

CLI = [sys.executable, "-m", "coding_framework.cli"]


def probe_file(run_dir: Path) -> Path:
    """MBPP's validation split as problem records: the server reads a probe file as it is (it does not look
    in $CODING_FRAMEWORK_DATA_DIR for a benchmark's release file)."""
    return write_problem_records(load_source("mbpp:validation"), run_dir / "probe-mbpp-validation.jsonl")


def deploy(url: str, spec: str, args: argparse.Namespace, force: bool, probes: Path) -> dict[str, Any]:
    command = [*CLI, "deploy", spec, "--server", url, "--strategy", "canary", "--steps", args.steps,
               "--probe", str(probes), "--probe-rate", str(args.probe_rate), "--max-duration",
               str(args.max_duration), "--on-inconclusive", "rollback", "--wait", "--timeout",
               str(args.max_duration + 600)]
    if force:
        command.append("--force")
    print(" ".join(command[2:]), file=sys.stderr, flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if not done.stdout.strip():
        raise SystemExit(f"deploy printed nothing (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "real_model_rl" / "seed0")
    parser.add_argument("--port", type=int, default=8781)
    parser.add_argument("--steps", default="50,100", help="canary traffic steps")
    parser.add_argument("--margin", type=float, default=0.03,
                        help="non-inferiority margin: below the champion's probe pass rate")
    parser.add_argument("--min-graded", type=int, default=20)
    parser.add_argument("--probe-rate", type=float, default=1.0, help="probe problems per second")
    parser.add_argument("--max-duration", type=float, default=1200.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "real_model_canary.json")
    args = parser.parse_args()
    run_dir = args.run_dir.resolve()
    results = json.loads((run_dir / "results.json").read_text())
    registered = results["registered_model"]
    name, version = registered["registered_model"], int(registered["registered_version"])
    uri = f"sqlite:///{run_dir / 'mlflow.db'}"
    champion = resolve_model("smollm2-135m")
    config = {"model": "smollm2-135m", "mlflow_uri": uri, "model_cache": str(run_dir / "serving-cache"),
              "rollout": {"margin": args.margin, "min_graded": args.min_graded, "drain_s": 1.0}}
    started = time.perf_counter()
    with LoadMonitor() as load, Served(config, args.port) as served:
        status = deploy(served.url, f"models:/{name}/{version}", args, force=not results["gate"]["passed"],
                        probes=probe_file(run_dir))
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    keys = ("probe_graded", "probe_passed", "probe_pass_rate", "graded", "pass_rate", "requests")
    arms = {role: {k: status["arms"][status[f"{role}_version"]][k] for k in keys}
            for role in ("champion", "candidate")}
    figures = {
        "champion": champion.id,
        "candidate": f"models:/{name}/{version}",
        "gate": {"passed": results["gate"]["passed"], "reason": results["gate"].get("reason")},
        "status": status["status"],
        "reason": status["reason"],
        "arms": arms,
        "decisions": [f"{d['action']}: {d['reason']}" for d in status["decisions"]],
        "aliases_after": dict(client.get_registered_model(name).aliases),
        "policy": {"steps": args.steps, "margin": args.margin, "min_graded": args.min_graded,
                   "probe": "mbpp:validation", "probe_rate_per_s": args.probe_rate,
                   "max_duration_s": args.max_duration, "on_inconclusive": "rollback"},
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(figures, indent=2))
    write_result(args.out, figures, load, model_dir=champion.model_dir)


if __name__ == "__main__":
    main()
