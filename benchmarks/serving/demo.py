"""The closed loop, end to end: serve the previous champion, canary the trained `challenger`, see the
verdict in MLflow, then watch a deliberately broken version get rolled back.

Reproduce (after `coding-framework quickstart --run-dir runs/qs`, which registers the trained model with
the alias `challenger` in runs/qs/mlflow.db):
    .venv/bin/python -m benchmarks.serving.demo runs/qs

Steps, all through the real CLI as subprocesses:
1. `coding-framework serve --model embedded` (the model the quickstart started from: the previous
   champion) with the run's MLflow store as its registry;
2. graded /v1/solve traffic from the quickstart's held-out problems (a new session per request);
3. `coding-framework deploy models:/NAME@challenger --strategy canary --steps ... --wait`;
4. the rollout's MLflow run (experiment `coding-framework-rollouts`) and the registry aliases;
5. a copy of the challenger with noise added to every weight, registered as a new version (and the new
   `challenger`, as a bad training run would), deployed the same way: it is rolled back.

The demo's policy (`--margin`, `--min-graded`, `--steps`) is looser than the shipped one so that it ends in
minutes on a CPU: the non-inferiority margin decides how many graded requests a promotion needs (see
`serving.rollouts.stats.samples_to_verdict`). The margin must stay below the champion's pass rate: a candidate
that fails everything IS non-inferior within a margin larger than the champion's whole pass rate. The
trained challenger passes about 0.2-0.3 of the held-out problems in two rounds, hence 0.15. The last
stdout line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import yaml

from coding_framework.llm.base import EngineError
from coding_framework.llm.processes import wait_healthy

CLI = [sys.executable, "-m", "coding_framework.cli"]


def _challenger_name(uri: str) -> str:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    names = [m.name for m in client.search_registered_models() if "challenger" in (m.aliases or {})]
    if not names:
        sys.exit(f"error: no registered model in {uri} has the alias 'challenger'; run the quickstart first")
    return names[0]


def _start_server(config: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    server = subprocess.Popen([*CLI, "serve", "--port", str(port), "--model", "embedded", "--config",
                               str(config)], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server, 300, "the server", poll_s=0.5)
    except EngineError as exc:
        server.kill()
        sys.exit(f"error: {exc}; see {log}")
    return server


class Clients:
    """Threads sending graded /v1/solve requests (held-out problems, one new session per request)."""

    def __init__(self, url: str, concurrency: int, max_rounds: int, seed: int) -> None:
        from coding_framework.problems import reserved_split

        self.problems = reserved_split(40, 0.25, 0)[1]  # the quickstart's held-out instances
        self.url, self.rng, self.stop = url, random.Random(seed), threading.Event()
        self.max_rounds = max_rounds
        self.answers: Counter[tuple[str, str]] = Counter()  # (model_version, passed | HTTP status)
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(concurrency)]

    def __enter__(self) -> Clients:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=300) as client:
            while not self.stop.is_set():
                problem = self.rng.choice(self.problems)
                body = {"prompt": problem.prompt, "entry_point": problem.entry_point,
                        "tests": problem.test_code, "session_id": uuid.uuid4().hex,
                        "max_rounds": self.max_rounds}
                try:
                    r = client.post("/v1/solve", json=body)
                except httpx.HTTPError as exc:
                    self.answers[("-", type(exc).__name__)] += 1
                    continue
                out = r.json() if r.status_code == 200 else {}
                self.answers[(out.get("model_version", "-"), str(out.get("passed", r.status_code)))] += 1


def _deploy(url: str, spec: str, steps: str, timeout: int) -> dict[str, Any]:
    print(f"\n$ coding-framework deploy {spec} --server {url} --strategy canary --steps {steps} --wait",
          flush=True)
    done = subprocess.run([*CLI, "deploy", spec, "--server", url, "--strategy", "canary", "--steps", steps,
                           "--wait", "--timeout", str(timeout)], stdout=subprocess.PIPE, text=True,
                          check=False)
    if done.returncode == 2 or not done.stdout.strip():
        sys.exit("error: deploy failed (see above)")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mlflow_view(uri: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    time.sleep(2)  # the server writes the run's last tags in the background
    run = client.get_run(status["mlflow_run_id"]) if status.get("mlflow_run_id") else None
    tags = run.data.tags if run else {}
    view = {"rollout": status["id"], "status": status["status"], "reason": status["reason"],
            "mlflow_run_id": status.get("mlflow_run_id"),
            "mlflow_tags": {k: v for k, v in tags.items() if k.startswith("rollout.")},
            "aliases": dict(client.get_registered_model(name).aliases),
            "candidate": {k: status["arms"][status["candidate_version"]][k] for k in ("graded", "pass_rate",
                                                                                       "errors", "requests")},
            "champion": {k: status["arms"][status["champion_version"]][k] for k in ("graded", "pass_rate",
                                                                                     "errors", "requests")},
            "decisions": [f"{d['action']}: {d['reason']}" for d in status["decisions"]]}
    print(json.dumps(view, indent=2), flush=True)
    return view


def _register_broken(uri: str, name: str, work: Path) -> int:
    """Copy the challenger's weights with noise on every tensor and register the copy as a new version."""
    import torch
    from safetensors.torch import load_file, save_file

    from coding_framework.config.training import TrackingConfig
    from coding_framework.models import resolve_model
    from coding_framework.training.run.tracking import MLflowTracker

    source = resolve_model(f"models:/{name}@challenger", registry_uri=uri, cache_dir=work / "cache")
    assert source.model_dir is not None
    broken = work / "broken-model"
    shutil.copytree(source.model_dir, broken)
    generator = torch.Generator().manual_seed(0)
    for file in broken.glob("*.safetensors"):
        tensors = load_file(str(file))
        noisy = {k: t + 0.5 * t.float().std() * torch.randn(t.shape, generator=generator).to(t.dtype)
                 if t.is_floating_point() and t.numel() > 1 else t for k, t in tensors.items()}
        save_file(noisy, str(file))
    (work / "broken-run").mkdir()
    tracker = MLflowTracker(TrackingConfig(mlflow_uri=uri, experiment="coding-framework-demo",
                                           registered_model=name), work / "broken-run")
    info = tracker.log_model(broken, name)
    tracker.finish()
    return int(info["registered_version"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path, help="A quickstart run directory (holds mlflow.db).")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--steps", default="50,100", help="Canary steps for both deploys.")
    ap.add_argument("--margin", type=float, default=0.15, help="Non-inferiority margin of the demo policy.")
    ap.add_argument("--min-graded", type=int, default=10, help="Graded candidate requests per step.")
    ap.add_argument("--concurrency", type=int, default=2, help="Client threads sending /v1/solve.")
    ap.add_argument("--max-rounds", type=int, default=2, help="/v1/solve rounds (draft, feedback, revision).")
    ap.add_argument("--timeout", type=int, default=900, help="Seconds each deploy may take.")
    args = ap.parse_args()
    store = args.run_dir.resolve() / "mlflow.db"
    if not store.is_file():
        sys.exit(f"error: {store} does not exist; run `coding-framework quickstart --run-dir {args.run_dir}`")
    uri = f"sqlite:///{store}"
    name = _challenger_name(uri)
    work = Path(tempfile.mkdtemp(prefix="serving-demo-"))
    config = work / "serving.yaml"
    config.write_text(yaml.safe_dump({"mlflow_uri": uri, "model_cache": str(work / "cache"), "rollout": {
        "margin": args.margin, "min_graded": args.min_graded, "drain_s": 1.0}}))
    url = f"http://127.0.0.1:{args.port}"
    began = time.monotonic()
    server = _start_server(config, args.port, work / "server.log")
    try:
        with Clients(url, args.concurrency, args.max_rounds, seed=0) as clients:
            challenger = _mlflow_view(uri, name, _deploy(url, f"models:/{name}@challenger", args.steps,
                                                         args.timeout))
            broken_version = _register_broken(uri, name, work)
            broken = _mlflow_view(uri, name, _deploy(url, f"models:/{name}/{broken_version}", args.steps,
                                                     args.timeout))
        answers = {f"{v} passed={p}": n for (v, p), n in sorted(clients.answers.items())}
    finally:
        server.terminate()
        server.wait(timeout=60)
    summary = {"registered_model": name, "challenger": challenger, "broken_version": broken_version,
               "broken": broken, "answers": answers, "seconds": round(time.monotonic() - began, 1),
               "server_log": str(work / "server.log")}
    print(f"\nchallenger: {challenger['status']}; broken version {broken_version}: {broken['status']} "
          f"({broken['reason'].split(':')[0]}); {sum(answers.values())} /v1/solve answers in "
          f"{summary['seconds']} s")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
