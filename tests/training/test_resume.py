"""`train --resume` after `kill -9` ends exactly where an uninterrupted run with the same seed ends."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coding_framework.testing.tiny_run import TINY_RUN, comparable, tiny_config

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _train(config: Path, run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "coding_framework.cli", "--log-level", "INFO", "train", "--config",
           str(config), "--run-dir", str(run_dir), "--no-progress", *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}  # this checkout
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> tuple[dict, str]:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), err


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not path.is_file():
        assert proc.poll() is None, f"the run ended before {path} appeared: {proc.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout}s"
        time.sleep(0.05)


def test_kill_9_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    config = tiny_config(tmp_path)
    reference, _ = _finish(_train(config, tmp_path / "straight"))

    run = tmp_path / "killed"
    proc = _train(config, run)
    _wait_for(run / "checkpoints" / "step-000002" / "manifest.json", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not (run / "results.json").exists()  # it really died mid-run

    # A torn newer checkpoint (copied, then one file corrupted) and a killed writer's temp dir: neither loads.
    torn = run / "checkpoints" / "step-000003"
    shutil.copytree(run / "checkpoints" / "step-000002", torn)
    (torn / "trainer.pt").write_bytes(b"torn")
    (run / "checkpoints" / ".tmp-step-000004-x").mkdir()

    resumed, log = _finish(_train(config, run, "--resume"))
    assert "checkpoint_rejected" in log and "step-000003" in log
    # Said on stderr whatever the log level: which checkpoint, which file, and where the run goes on.
    assert f"resume: rejected checkpoint {torn}: trainer.pt: size or checksum does not match" in log
    assert f"resume: continuing from step 2 ({run / 'checkpoints' / 'step-000002'})" in log
    assert "resumed" in log and "step-000002" in log and "checkpoint_saved" in log
    assert "step-000001" not in log.split("resumed", 1)[1]  # steps 1-2 were not trained again

    assert resumed["step"] == reference["step"] == 5
    for key in ("reward_mean", "heldout_pass@1", "baseline_pass@1", "audit_offending_tokens"):
        assert resumed[key] == reference[key], key
    straight = json.loads((tmp_path / "straight" / "results.json").read_text())
    again = json.loads((run / "results.json").read_text())
    assert comparable(again["history"]) == comparable(straight["history"])
    weights = [(d / "final_model" / "model.safetensors").read_bytes() for d in (tmp_path / "straight", run)]
    assert weights[0] == weights[1]
    assert resumed["mlflow_run_id"] == json.loads((run / "tracking.json").read_text())["mlflow_run_id"]


def test_an_asynchronous_run_resumes_its_batches_in_flight(tmp_path: Path) -> None:
    """K = 1: each checkpoint holds the batch already submitted for the next step and the weights that
    sample it; the resumed run regenerates it and ends like the uninterrupted one."""
    rollout = {**TINY_RUN["rollout"], "max_staleness": 1, "refill_zero_variance": True,
               "max_refill_rounds": 1}
    config = tiny_config(tmp_path, steps=4, rollout=rollout,
                         algo={**TINY_RUN["algo"], "off_policy_correction": "tis"})
    reference, _ = _finish(_train(config, tmp_path / "straight"))
    assert reference["max_staleness"] == 1 and reference["samples_per_s"] > 0

    run = tmp_path / "killed"
    proc = _train(config, run)
    _wait_for(run / "checkpoints" / "step-000002" / "manifest.json", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert (run / "checkpoints" / "step-000002" / "inflight.pt").is_file()

    resumed, log = _finish(_train(config, run, "--resume"))
    assert "resumed_batches=1" in log
    straight = json.loads((tmp_path / "straight" / "results.json").read_text())
    again = json.loads((run / "results.json").read_text())
    assert comparable(again["history"]) == comparable(straight["history"])
    assert [r["metrics"]["async/staleness_mean"] for r in straight["history"]] == [0.0, 1.0, 1.0, 1.0]
    # the tiny model's rewards are all 0: every group is flat, its refill round finds only flat ones, and the
    # flat groups keep the batch at its size
    assert {(m["batch/flat_groups"], m["batch/refill_rounds"], m["batch/refill_groups"], m["batch/flat_kept"])
            for m in (r["metrics"] for r in straight["history"])} == {(2.0, 1.0, 0.0, 2.0)}
    for key in ("reward_mean", "heldout_pass@1", "audit_offending_tokens"):
        assert resumed[key] == reference[key], key
    weights = [(d / "final_model" / "model.safetensors").read_bytes() for d in (tmp_path / "straight", run)]
    assert weights[0] == weights[1]


def test_a_finished_run_resumed_with_more_steps_ends_where_a_longer_run_ends(tmp_path: Path) -> None:
    longer, _ = _finish(_train(tiny_config(tmp_path), tmp_path / "straight"))
    run = tmp_path / "extended"
    _finish(_train(tiny_config(tmp_path, steps=3), run))
    extended, log = _finish(_train(tiny_config(tmp_path), run, "--resume"))
    assert "resume: continuing from step 3" in log
    assert extended["step"] == longer["step"] == 5
    history = [json.loads((d / "results.json").read_text())["history"] for d in (tmp_path / "straight", run)]
    assert comparable(history[1]) == comparable(history[0])
    weights = [(d / "final_model" / "model.safetensors").read_bytes() for d in (tmp_path / "straight", run)]
    assert weights[0] == weights[1]
