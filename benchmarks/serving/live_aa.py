"""A live A/A on the real server: nothing may roll back.

Reproduce (after `coding-framework quickstart --run-dir runs/qs`):
    .venv/bin/python -m benchmarks.serving.live_aa runs/qs/final_model

`coding-framework serve` runs MODEL_DIR as the champion; a copy of it (another name, the same weights and
checksum) is canaried 50 -> 100 through `coding-framework deploy` while two client threads send graded
/v1/solve traffic from the quickstart's held-out problems (`benchmarks/serving/demo.py`'s clients), under the
demo's policy (margin 0.15, 10 graded requests per step). Writes ``results/serving_live_aa.json`` with
the machine record and MODEL_DIR's sha256.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from benchmarks.serving import demo
from coding_framework.llm.processes import wait_healthy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir", type=Path, help="A model directory (a quickstart final_model).")
    ap.add_argument("--port", type=int, default=8766)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="serving-aa-"))
    shutil.copytree(args.model_dir, work / "champion")
    shutil.copytree(args.model_dir, work / "candidate")
    (work / "serving.yaml").write_text(yaml.safe_dump({"model_cache": str(work / "cache"), "rollout": {
        "margin": 0.15, "min_graded": 10, "drain_s": 1.0}}))
    url = f"http://127.0.0.1:{args.port}"
    command = [*demo.CLI, "serve", "--port", str(args.port), "--model", str(work / "champion"),
               "--config", str(work / "serving.yaml")]
    server = subprocess.Popen(command,
                              stdout=(work / "server.log").open("wb"), stderr=subprocess.STDOUT)
    began = time.monotonic()
    try:
        wait_healthy(url, server, 300, "the server", poll_s=0.5)
        with LoadMonitor() as load, demo.Clients(url, 2, 2, seed=1) as clients:
            status = demo._deploy(url, str(work / "candidate"), "50,100", 900)
        answers = {f"{v} passed={p}": n for (v, p), n in sorted(clients.answers.items())}
    finally:
        server.terminate()
        server.wait(timeout=60)
    result = {k: status[k] for k in ("status", "reason", "candidate_version", "champion_version")}
    result["decisions"] = [f"{d['action']}: {d['reason']}" for d in status["decisions"]]
    result["arms"] = {v: {k: a[k] for k in ("requests", "graded", "pass_rate", "errors")}
                      for v, a in status["arms"].items()}
    result["answers"], result["seconds"] = answers, round(time.monotonic() - began, 1)
    print(write_result(RESULTS / "serving_live_aa.json", result, load, model_dir=args.model_dir).read_text())


if __name__ == "__main__":
    main()
