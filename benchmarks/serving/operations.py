"""Operating rollouts on the embedded default, each scenario against real `coding-framework serve` processes.

Reproduce (about 10-15 minutes on 2 CPUs; traffic goes to 127.0.0.1 only, bounded in count and time):
    .venv/bin/python -m benchmarks.serving.operations [--only guardrails,probes,...]

Versions: the base embedded model (the champion), an identical copy of it (its own name, same weights), and
a candidate with random weights (the embedded architecture, freshly initialized: it writes no code).
1. guardrails: /v1/solve traffic with tests (synthetic:heldout problems) on a 50% canary of the random
   candidate: rolled back, naming the test that fired, after how many graded candidate requests.
2. probes: chat-only traffic (no tests) while a probe set (synthetic:heldout) grades both arms: the random
   candidate is rolled back; the identical copy is promoted, after a `kill -9` of the server in the middle
   of its canary and a restart on the same state directory (same rollout id, counts kept, then finished).
3. inconclusive: the identical copy with `max_duration_s` 6: it ends `inconclusive` and is rolled back.
4. abort and rollback: a registry (SQLite MLflow) with versions 1 and 2 (`champion` 2, `previous` 1),
   chat traffic at concurrency 8 throughout: a canary aborted, then POST /v1/rollback; failed requests.
5. failover: engine `process`, two champion replicas and the copy loaded as `previous`; chat traffic at
   concurrency 4; both champion workers get `kill -9`: who answers, and the status codes, before, during
   and after the replicas are restarted by the pool.
Writes ``benchmarks/results/serving_operations.json`` with the machine record and the embedded model's sha256.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from benchmarks.serving.served import Served
from coding_framework.llm.vllm_server import free_port

POLICY = {"margin": 0.15, "min_graded": 20, "steps": [50, 100], "drain_s": 1.0}
PROBE = {"source": "synthetic:heldout", "rate_per_s": 4.0}


def _models(tmp: Path) -> tuple[Path, Path, Path]:
    """(embedded, an identical copy, random weights), the last two under ``tmp``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from coding_framework.models import resolve_model

    base = resolve_model("embedded").model_dir
    assert base is not None
    copy, rand = tmp / "embedded-copy", tmp / "random-weights"
    shutil.copytree(base, copy)
    shutil.copytree(base, rand)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(base)).save_pretrained(rand)
    return base, copy, rand


def _config(state: Path, **extra: Any) -> dict[str, Any]:
    rollout = {**POLICY, **extra.pop("rollout", {})}
    return {"state_dir": str(state), "rollout": rollout, "solve": {"max_rounds": 1},
            "pool": {"health_interval_s": 0.5}, **extra}


class Load:
    """``n`` threads sending chat completions (a session each per request) until stopped; records
    (status, version) per response."""

    def __init__(self, url: str, n: int, max_tokens: int = 16) -> None:
        self.url, self.n, self.max_tokens = url, n, max_tokens
        self.results: list[tuple[float, int, str]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(n)]

    def _run(self, k: int) -> None:
        body = {"messages": [{"role": "user", "content": "Write a function add(a, b)."}],
                "max_tokens": self.max_tokens}
        with httpx.Client(base_url=self.url, timeout=120) as client:
            i = 0
            while not self._stop.is_set():
                i += 1
                try:
                    r = client.post("/v1/chat/completions", json={**body, "session_id": f"t{k}-{i}"})
                    self.results.append((time.time(), r.status_code, r.headers.get("x-model-version", "")))
                except httpx.HTTPError:
                    self.results.append((time.time(), -1, ""))

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=180)

    def codes(self, since: float = 0.0, until: float = float("inf")) -> dict[str, int]:
        return dict(Counter(str(c) for t, c, _ in self.results if since <= t < until))

    def versions(self, since: float = 0.0, until: float = float("inf")) -> dict[str, int]:
        return dict(Counter(v for t, c, v in self.results if since <= t < until and c == 200))


def _wait(client: httpx.Client, rollout: str, limit_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + limit_s
    while True:
        status: dict[str, Any] = client.get(f"/v1/rollouts/{rollout}").json()
        if status["status"] != "running" or time.monotonic() > deadline:
            return status
        time.sleep(1.0)


def _summary(status: dict[str, Any]) -> dict[str, Any]:
    cand = status["arms"][status["candidate_version"]]
    champ = status["arms"][status["champion_version"]]
    return {"id": status["id"], "status": status["status"], "reason": status["reason"],
            "budget": status["budget"],
            "candidate": {k: cand[k] for k in ("graded", "pass_rate", "probe_graded", "probe_pass_rate",
                                              "outcomes", "requests")},
            "champion": {k: champ[k] for k in ("graded", "pass_rate", "probe_graded", "probe_pass_rate",
                                              "outcomes")},
            "decisions": [d["action"] for d in status["decisions"]]}


def guardrails(tmp: Path, rand: Path) -> dict[str, Any]:
    from coding_framework.problems import load_benchmark

    problems = load_benchmark("synthetic", split="heldout")
    with Served(_config(tmp / "g-state"), free_port()) as s, httpx.Client(base_url=s.url, timeout=300) as c:
        started = c.post("/v1/rollouts", json={"candidate": str(rand), "strategy": "canary"}).json()
        stop, sent = threading.Event(), Counter[int]()

        def client(k: int) -> None:
            with httpx.Client(base_url=s.url, timeout=300) as cl:
                i = k
                while not stop.is_set() and i < 2000:
                    p = problems[i % len(problems)]
                    body = {"prompt": p.prompt, "entry_point": p.entry_point, "tests": p.test_code,
                            "session_id": f"g{i}"}
                    sent[cl.post("/v1/solve", json=body).status_code] += 1
                    i += 4

        threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(4)]
        for t in threads:
            t.start()
        final = _wait(c, started["id"], 900)
        stop.set()
        for t in threads:
            t.join(timeout=300)
    return {**_summary(final), "client_status_codes": dict(sent)}


def probes(tmp: Path, rand: Path, copy: Path) -> dict[str, Any]:
    state, port = tmp / "p-state", free_port()
    out: dict[str, Any] = {}
    with Served(_config(state), port) as s, httpx.Client(base_url=s.url, timeout=300) as c, Load(s.url, 2):
        started = c.post("/v1/rollouts", json={"candidate": str(rand), "probe": PROBE}).json()
        out["random_weights"] = _summary(_wait(c, started["id"], 600))
        started = c.post("/v1/rollouts", json={"candidate": str(copy), "probe": PROBE}).json()
        while True:  # kill -9 in the middle of the canary
            time.sleep(2)
            before = c.get(f"/v1/rollouts/{started['id']}").json()
            if before["status"] != "running" or before["budget"]["graded"] >= 30:
                break
        assert s.proc is not None
        os.killpg(s.proc.pid, signal.SIGKILL)
        s.proc.wait()
    out["killed_at"] = _summary(before)
    with Served(_config(state), port) as s, httpx.Client(base_url=s.url, timeout=300) as c, Load(s.url, 2):
        resumed = c.get(f"/v1/rollouts/{started['id']}").json()
        out["resumed"] = _summary(resumed)
        out["identical_copy"] = _summary(_wait(c, started["id"], 900))
        out["champion_after"] = c.get("/health").json()["champion"]
    return out


def inconclusive(tmp: Path, copy: Path) -> dict[str, Any]:
    with Served(_config(tmp / "i-state"), free_port()) as s, httpx.Client(base_url=s.url, timeout=300) as c:
        body = {"candidate": str(copy), "probe": {**PROBE, "rate_per_s": 0.5}, "max_duration_s": 6}
        started = c.post("/v1/rollouts", json=body).json()
        final = _wait(c, started["id"], 120)
        return {**_summary(final), "champion_after": c.get("/health").json()["champion"]}


def _registry(tmp: Path, base: Path, copy: Path) -> str:
    from mlflow.tracking import MlflowClient

    from coding_framework.config.training import TrackingConfig
    from coding_framework.training.run.tracking import MLflowTracker

    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    for i, model in enumerate((base, copy)):
        (tmp / f"run{i}").mkdir()
        tracker = MLflowTracker(TrackingConfig(mlflow_uri=uri), tmp / f"run{i}",
                                system_metrics_interval_s=None)
        tracker.log_model(model, "ops-gen")
        tracker.finish("FINISHED")
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    client.set_registered_model_alias("ops-gen", "champion", "2")
    client.set_registered_model_alias("ops-gen", "previous", "1")
    return uri


def abort_and_rollback(tmp: Path, base: Path, copy: Path) -> dict[str, Any]:
    uri = _registry(tmp, base, copy)
    config = _config(tmp / "a-state", model="models:/ops-gen@champion", mlflow_uri=uri)
    with (Served(config, free_port()) as s, httpx.Client(base_url=s.url, timeout=300) as c,
          Load(s.url, 8) as load):
        time.sleep(5)
        started = c.post("/v1/rollouts", json={"candidate": str(copy), "strategy": "canary"}).json()
        time.sleep(5)
        aborted = c.post(f"/v1/rollouts/{started['id']}/abort").json()
        time.sleep(5)
        rolled = c.post("/v1/rollback").json()
        time.sleep(8)
        again = c.post("/v1/rollback").json()  # and back: previous is now version 2
        time.sleep(5)
    return {"aborted": {k: aborted[k] for k in ("id", "status", "reason")}, "rollback": rolled,
            "rollback_again": again, "client_status_codes": load.codes(), "answered_by": load.versions(),
            "concurrency": 8}


def _workers(model_dir: Path) -> list[int]:
    out = subprocess.run(["pgrep", "-f", f"serving.worker_main {model_dir} "], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def failover(tmp: Path, base: Path, copy: Path) -> dict[str, Any]:
    config = _config(tmp / "f-state", engine="process", failover={"enabled": True, "previous": str(copy),
                                                                 "after_s": 1.0})
    config["pool"]["replicas"] = 2
    with Served(config, free_port()) as s, Load(s.url, 4) as load:
        time.sleep(5)
        killed_at = time.time()
        pids = _workers(base)
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        deadline, rescued, back = time.time() + 180, False, None
        while time.time() < deadline and back is None:  # until `previous` answered, then the champion again
            time.sleep(0.5)
            after = [v for t, c, v in load.results if t > killed_at and c == 200]
            rescued = rescued or any(not v.startswith("embedded@") for v in after)
            if rescued and len(after) >= 3 and all(v.startswith("embedded@") for v in after[-3:]):
                back = time.time()
        time.sleep(3)
        metrics = httpx.get(f"{s.url}/metrics").text
    return {"killed_champion_workers": len(pids), "seconds_until_champion_answered_again":
            None if back is None else round(back - killed_at, 1),
            "before_kill": {"codes": load.codes(until=killed_at), "versions": load.versions(until=killed_at)},
            "while_down": {"codes": load.codes(killed_at, back or float("inf")),
                           "versions": load.versions(killed_at, back or float("inf"))},
            "after_recovery": {"codes": load.codes(back or float("inf")),
                               "versions": load.versions(back or float("inf"))},
            "failover_metrics": [ln for ln in metrics.splitlines()
                                 if ln.startswith("coding_framework_failover")]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="guardrails,probes,inconclusive,abort,failover")
    args = ap.parse_args()
    chosen = args.only.split(",")
    report: dict[str, Any] = {"policy": POLICY, "probe": PROBE}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        base, copy, rand = _models(tmp)
        runs = {"guardrails": lambda: guardrails(tmp, rand), "probes": lambda: probes(tmp, rand, copy),
                "inconclusive": lambda: inconclusive(tmp, copy),
                "abort": lambda: abort_and_rollback(tmp, base, copy),
                "failover": lambda: failover(tmp, base, copy)}
        with LoadMonitor() as load:
            for key in chosen:
                began = time.perf_counter()
                report[key] = runs[key]()
                report[key]["seconds"] = round(time.perf_counter() - began, 1)
                print(json.dumps({key: report[key]}), flush=True)
    name = "serving_operations" + ("" if len(chosen) == 5 else "_" + "_".join(chosen))
    path = write_result(RESULTS / f"{name}.json", report, load, model_dir=base)
    print(path)


if __name__ == "__main__":
    main()
