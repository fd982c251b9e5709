"""`make quickstart` as a newcomer runs it: a fresh clone, a new venv, an empty model cache, no pip cache.

Reproduce (from the repository root; it clones HEAD into a temporary folder and leaves this checkout alone):

    .venv/bin/python -m benchmarks.training.fresh_clone_quickstart

Times the whole `make quickstart` (venv, torch and the package installed, the shipped embedded build
installed into an empty ``CODING_FRAMEWORK_CACHE``, the quickstart job), and checks its held-out figures
against the ones filed for the shipped build (``results/quickstart/<build>/seed0.json``). Writes
``results/fresh_clone_quickstart.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.embedded.reference import manifest

FIGURES = ("baseline_pass@1", "trained_pass@1", "improvement", "heldout_problems")


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    argparse.ArgumentParser(description=__doc__, formatter_class=formatter).parse_args()  # --help only
    build = (manifest() or {})["name"]
    filed = json.loads((RESULTS / "quickstart" / build / "seed0.json").read_text())
    with tempfile.TemporaryDirectory(prefix="fresh-clone-") as tmp:
        clone, cache = Path(tmp) / "coding-framework", Path(tmp) / "cache"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        env = {**os.environ, "CODING_FRAMEWORK_CACHE": str(cache), "PIP_NO_CACHE_DIR": "1"}
        env.pop("VIRTUAL_ENV", None)
        print(f"make quickstart in {clone} ...", flush=True)
        with LoadMonitor() as load:
            start = time.perf_counter()
            done = subprocess.run(["make", "quickstart"], cwd=clone, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"make quickstart failed ({done.returncode}):\n{done.stderr[-3000:]}")
        line = json.loads(done.stdout.strip().splitlines()[-1])
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout
    figures = {
        "commit": head.strip(),
        "build": build,
        "make_quickstart_wall_s": round(wall, 1),
        "job_seconds": line["seconds"],
        "budget_s": 12 * 60,
        "within_budget": wall <= 12 * 60,
        "result": {k: line[k] for k in FIGURES},
        "filed": {k: filed[k] for k in FIGURES},
        "equals_filed": all(line[k] == filed[k] for k in FIGURES),
    }
    print(json.dumps(figures, indent=2))
    write_result(RESULTS / "fresh_clone_quickstart.json", figures, load)


if __name__ == "__main__":
    main()
