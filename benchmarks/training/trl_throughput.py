"""GRPO training throughput: our trainer step against TRL's ``GRPOTrainer``, same model, prompts and budget.

Reproduce:
    bash scripts/setup_trl.sh
    .venv/bin/python -m benchmarks.training.trl_throughput --steps 8 --seeds 0 1 2

Both sides start from the same model directory (default: the embedded model) in fp32 on CPU with the
same torch thread count, train on the same synthetic problems in the same order (``problems`` per step,
``group`` samples each, at most ``max-tokens`` new tokens, the same temperature), with the same optimizer
(AdamW with the same epsilon, constant LR, gradient clipping 1.0, no KL term) and the same reward:
correctness of the answer's program, graded in our sandbox. Our side is one training step of ``Trainer``
(single-draft episodes of the LangGraph training graph, lockstep batched decoding, grading, the GRPO
update); TRL's is its own generate-score-update loop, run in ``.venv-trl`` (TRL layered on the main venv:
same torch and transformers).

Reported per seed and averaged over the seeds: samples (completions trained on) per second of
training-loop wall time, the ratio ours / TRL (TRL is the anchor, measured in the same run), the mean
training reward over all steps and over the last two, and held-out pass@1 of both trained models under our
evaluator (greedy, single draft). Both sides see the same prompts step by step, so per-step rewards are
comparable; a single seed's last steps are noisy (8 prompts each), hence several seeds. Results go to
benchmarks/results/trl_throughput.json with the machine record (TRL's version as .venv-trl has it) and the
model's sha256.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, anchor_versions, write_result

OUT = RESULTS / "trl_throughput.json"
TRL_PYTHON = ROOT / ".venv-trl" / "bin" / "python"


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", choices=["both", "ours", "trl"], default="both")
    ap.add_argument("--model", default="embedded", help="`embedded` or a Hugging Face model directory")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--problems", type=int, default=8, help="distinct prompts per step")
    ap.add_argument("--group", type=int, default=8, help="samples per prompt (GRPO group)")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--temperature", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--eps", type=float, default=1e-4, help="AdamW epsilon (quickstart.yaml's optim.eps)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run of both sides per seed")
    ap.add_argument("--heldout-per-family", type=int, default=20, help="synthetic_split n_per_family")
    ap.add_argument("--out", type=Path, default=None, help="(internal) where a side writes its JSON")
    return ap.parse_args(argv)


def _training_config(args: argparse.Namespace, model_dir: Path) -> Any:
    from coding_framework.config.training import TrainingConfig

    return TrainingConfig.model_validate(
        {
            "algorithm": "grpo",
            "seed": args.seeds[0],
            "steps": args.steps,
            "threads": args.threads,
            "model": str(model_dir),
            "data": {"synthetic_per_family": args.heldout_per_family},
            "rollout": {
                "problems_per_step": args.problems,
                "group_size": args.group,
                "max_new_tokens": args.max_tokens,
                "temperature": args.temperature,
                "max_batch_size": args.problems * args.group,
            },
            "workflow": {"graph": {"max_rounds": 1, "review": "never"}},
            "reward": {"function": {"weights": {"correctness": 1.0, "style": 0.0, "efficiency": 0.0}}},
            "optim": {
                "lr": args.lr,
                "eps": args.eps,
                "micro_batch_size": min(32, args.problems * args.group),
                "grad_clip": 1.0,
            },
            "kl": {"mode": "none"},
            "audit": {"every": 0},
            "eval": {"max_new_tokens": args.max_tokens},
        }
    )


def _model_dir(spec: str) -> Path:
    if spec != "embedded":
        return Path(spec)
    from coding_framework.embedded import ensure_embedded_model

    return ensure_embedded_model()


def _heldout(model_dir: Path, args: argparse.Namespace) -> float:
    """Greedy single-draft held-out pass@1 of a model directory under our evaluator."""
    from coding_framework.config.graph import WorkflowConfig
    from coding_framework.grading import Grader
    from coding_framework.llm.local import LocalEngine
    from coding_framework.problems import synthetic_split
    from coding_framework.training.run.heldout import evaluate_heldout

    engine = LocalEngine.from_pretrained(model_dir, device="cpu", max_batch_size=64)
    _, heldout = synthetic_split(args.heldout_per_family, 0.25, 0)
    with Grader() as grader:
        result = asyncio.run(
            evaluate_heldout(
                engine,
                WorkflowConfig(),
                grader,
                heldout,
                max_new_tokens=args.max_tokens,
                temperature=0.0,
                max_rounds=1,
                seed=0,
            )
        )
    return result.pass_at_1


def run_ours(args: argparse.Namespace, model_dir: Path, work: Path) -> dict[str, Any]:
    from coding_framework.grading import Grader
    from coding_framework.rewards import CompositeReward
    from coding_framework.training.trainer import Trainer

    cfg = _training_config(args, model_dir)
    rewards = []
    final = work / "ours-final"
    with Trainer(cfg, work / "ours", progress=False) as trainer, Grader(cfg.workflow.sandbox) as grader:
        reward_fn = CompositeReward(cfg.reward.function, grader=grader)
        start = time.perf_counter()
        trainer.source.start(grader, reward_fn, trainer.step)
        try:
            for _ in range(args.steps):
                rewards.append(trainer.train_step()["reward_mean"])
                trainer.step += 1
        finally:
            trainer.source.close()
        seconds = time.perf_counter() - start
        trainer.model.save_pretrained(final)
        trainer.tokenizer.save_pretrained(final)
    return _side("ours", args, seconds, rewards, final)


def _side(
    name: str, args: argparse.Namespace, seconds: float, rewards: list[float], final: Path
) -> dict[str, Any]:
    samples = args.steps * args.problems * args.group
    tail = rewards[-2:]
    return {
        "side": name,
        "samples": samples,
        "seconds": round(seconds, 2),
        "samples_per_s": samples / seconds,
        "rewards": rewards,
        "reward_mean": sum(rewards) / len(rewards),
        "reward_last_steps": sum(tail) / len(tail),
        "heldout_pass@1": _heldout(final, args),
    }


def _step_problems(args: argparse.Namespace, model_dir: Path) -> list[Any]:
    """The problems our trainer draws, step by step, so TRL sees the same prompts in the same order."""
    from coding_framework.training.algos.schedule import ProblemSampler
    from coding_framework.training.run.setup import split_problems

    cfg = _training_config(args, model_dir)
    sampler = ProblemSampler(split_problems(cfg)[0], cfg.seed, cfg.curriculum)
    return [p for step in range(args.steps) for p in sampler.draw(step, args.problems)]


def run_trl(args: argparse.Namespace, model_dir: Path, work: Path) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from coding_framework.agents.executor import assemble_program
    from coding_framework.agents.generator import code_from_answer
    from coding_framework.grading import Grader
    from coding_framework.problems.prompts import generation_messages

    torch.set_num_threads(args.threads)
    problems = _step_problems(args, model_dir)
    by_id = {p.task_id: p for p in problems}
    data = Dataset.from_list([{"prompt": generation_messages(p), "task_id": p.task_id} for p in problems])
    grader = Grader()

    def correctness(completions: list[Any], task_id: list[str], **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        items = [
            (by_id[t], assemble_program(by_id[t], code_from_answer(by_id[t], x)))
            for t, x in zip(task_id, texts, strict=True)
        ]
        return [float(r.passed) for r in grader.grade_many(items)]

    batch = args.problems * args.group
    micro = min(32, batch)  # our trainer's micro_batch_size: one optimizer step per generation batch
    config = GRPOConfig(
        output_dir=str(work / "trl"),
        use_cpu=True,
        seed=args.seeds[0],
        max_steps=args.steps,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        adam_beta2=0.99,
        adam_epsilon=args.eps,
        weight_decay=0.0,
        max_grad_norm=1.0,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=batch // micro,
        num_generations=args.group,
        max_completion_length=args.max_tokens,
        temperature=args.temperature,
        top_p=1.0,
        beta=0.0,
        loss_type="grpo",
        scale_rewards="group",
        num_iterations=1,
        shuffle_dataset=False,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        bf16=False,
        disable_dropout=True,
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    trainer = GRPOTrainer(
        model=model, reward_funcs=correctness, args=config, train_dataset=data, processing_class=tokenizer
    )
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    grader.close()
    rewards = [row["reward"] for row in trainer.state.log_history if "reward" in row]
    final = work / "trl-final"
    trainer.model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    return _side("trl", args, seconds, rewards, final)


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    model_dir = _model_dir(args.model)
    with tempfile.TemporaryDirectory(prefix="trl-bench-") as tmp:
        work = Path(tmp)
        if args.side != "both":
            runner = run_ours if args.side == "ours" else run_trl
            args.out.write_text(json.dumps(runner(args, model_dir, work)))
            return
        if not TRL_PYTHON.is_file():
            sys.exit("error: .venv-trl is missing; run `bash scripts/setup_trl.sh` first")
        with LoadMonitor() as load:
            runs = [_both_sides(args, model_dir, work, seed) for seed in args.seeds]
    summary = {side: {k: _mean([r[side][k] for r in runs]) for k in SUMMARY_KEYS} for side in ("ours", "trl")}
    report = {
        "model": str(model_dir),
        "settings": {k: v for k, v in vars(args).items() if k not in ("side", "out")},
        "runs": runs,
        "mean_over_seeds": summary,
        "throughput_ratio_ours_over_trl": _mean([r["throughput_ratio_ours_over_trl"] for r in runs]),
    }
    write_result(OUT, report, load, model_dir=model_dir,
                 extra_packages=anchor_versions(TRL_PYTHON, "trl"))
    print(json.dumps({"throughput_ratio_ours_over_trl": report["throughput_ratio_ours_over_trl"]} | summary))


SUMMARY_KEYS = ("samples_per_s", "reward_mean", "reward_last_steps", "heldout_pass@1")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _both_sides(args: argparse.Namespace, model_dir: Path, work: Path, seed: int) -> dict[str, Any]:
    """Both sides for one seed, each in its own interpreter (TRL's lives in .venv-trl)."""
    sides = {}
    for side, python in (("ours", sys.executable), ("trl", str(TRL_PYTHON))):
        out = work / f"{side}-{seed}.json"
        passed = {k: v for k, v in vars(args).items() if k not in ("side", "out", "model", "seeds")}
        cmd = [
            python,
            "-m",
            "benchmarks.training.trl_throughput",
            "--side",
            side,
            "--out",
            str(out),
            "--model",
            str(model_dir),
            "--seeds",
            str(seed),
            *(f"--{k.replace('_', '-')}={v}" for k, v in passed.items()),
        ]
        subprocess.run(cmd, check=True, cwd=ROOT)
        sides[side] = json.loads(out.read_text())
    ratio = sides["ours"]["samples_per_s"] / sides["trl"]["samples_per_s"]
    return {"seed": seed, **sides, "throughput_ratio_ours_over_trl": ratio}


if __name__ == "__main__":
    main()
