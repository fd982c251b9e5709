"""GRPO training throughput: our trainer step against TRL's ``GRPOTrainer``, same model, prompts and budget.

Reproduce:
    bash scripts/setup_trl.sh
    .venv/bin/python -m benchmarks.training.trl_throughput --steps 8 --seeds 0 1 2
    # the real model with smollm2_lora's LoRA recipe (MBPP from $CODING_FRAMEWORK_DATA_DIR), results in
    # benchmarks/results/trl_throughput_smollm2_lora.json; estimated at about 15 minutes on 2 idle cores
    # (--heldout-limit 40, the config's held-out slice, adds the evaluation of both trained models):
    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.training.trl_throughput \\
        --model smollm2-135m --lora --steps 3 --seeds 0 --heldout-limit 0

Both sides start from the same model directory (default: the embedded model; a registered name such as
``smollm2-135m`` resolves through ``coding_framework.models.resolve_model``) in fp32 on CPU with the same
torch thread count, train on the same problems in the same order (``problems`` per step, ``group`` samples
each, at most ``max-tokens`` new tokens, the same temperature), with the same optimizer (AdamW with the same
betas and epsilon, constant LR, gradient clipping 1.0, no KL term) and the same reward: correctness of the
answer's program, graded in our sandbox. Our side is one training step of ``Trainer`` (single-draft
episodes of the LangGraph training graph, lockstep batched decoding on our local HF engine, grading, the
GRPO update); TRL's is its own generate-score-update loop (HF ``generate``), run in ``.venv-trl`` (TRL
layered on the main venv: same torch, transformers and peft).

Prompts: TRL gets conversational prompts, the very messages our generator sends
(``problems.prompts.generation_messages``), and renders them with the model's chat template
(``apply_chat_template(add_generation_prompt=True)``). Before training, the TRL side checks that this
renders every prompt to the same token ids as our ``TokenSession`` (the template rendered once, then the
generation prompt appended) and stops if one differs; the report records the check.

``--lora`` runs the recipe of our shipped config ``smollm2_lora`` (its values are read from the config, so
they cannot drift): our side trains ``policies: {mode: shared_lora, roles: [generator]}`` with its rank
(16), alpha (32) and target modules (every Linear of a decoder block: q/k/v/o_proj, gate/up/down_proj),
TRL gets ``peft_config=LoraConfig`` with the same rank, alpha and modules (dropout 0, no bias, as
``RoleAdapters`` builds it); the base stays frozen on both sides and B starts at zero, so both start from
the base model's outputs (A's random init is drawn by each side's own RNG). The budget and optimizer
default to the config's: lr 2e-4 (constant; the config's one-step warmup is left out on both sides),
AdamW eps 1e-8, 4 problems x 6 samples per step, 160 new tokens, temperature 0.8, micro-batches of 8
(TRL: per-device batch 8, 3 gradient accumulation steps, one optimizer step per generation batch of 24),
the reward the share of tests passed (``correctness_mode: fraction``); its data: MBPP's train split
(decontaminated as the trainer does, against mbpp:test and the public benchmarks found locally), held-out
pass@1 on the first 40 problems of MBPP validation. Every flag below still overrides its value
(``--data synthetic`` trains on the synthetic problems instead). TRL's gradient checkpointing (on by
default in ``GRPOConfig``, and how the embedded default has always run) is off under ``--lora``, as it is
on our side (our CPU trainer refuses it). Without ``--lora`` the defaults are the embedded comparison's:
synthetic problems, full fine-tune, binary correctness.

Reported per seed and averaged over the seeds: samples (completions trained on) per second of
training-loop wall time, the ratio ours / TRL (TRL is the anchor, measured in the same run), the peak
resident memory of each side's process tree (sampled every 0.5 s from before the model loads until the
trained weights are saved; the held-out evaluation after it is not included) and its ratio ours / TRL, the
mean training reward over all steps and over the last two, and held-out pass@1 of both trained models
under our evaluator (greedy, single draft; LoRA adapters merged into the base first; ``--heldout-limit 0``
skips it). Both sides see the same prompts step by step, so per-step rewards are comparable; a single
seed's last steps are noisy, hence several seeds. Results go to benchmarks/results/trl_throughput.json
(the embedded default) or ``trl_throughput_<model>[_lora].json`` (``--result`` to choose), with the machine
record (TRL's and peft's versions as .venv-trl has them) and the model's sha256.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
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
LORA_CONFIG = "smollm2_lora"  # the shipped config whose recipe --lora runs
SYNTHETIC = "synthetic"

# The embedded comparison's budget (no --lora): what these flags defaulted to before --lora existed.
FULL_DEFAULTS: dict[str, Any] = {
    "problems": 8, "group": 8, "max_tokens": 96, "temperature": 0.5, "lr": 5e-4,
    "eps": 1e-4,  # quickstart.yaml's optim.eps
    "micro_batch": None,  # min(32, problems x group)
    "correctness": "binary", "data": SYNTHETIC, "heldout_data": None, "heldout_limit": None,
    "lora_rank": None, "lora_alpha": None, "trl_gradient_checkpointing": True,  # GRPOConfig's default
}


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", choices=["both", "ours", "trl"], default="both")
    ap.add_argument("--model", default="embedded",
                    help="`embedded`, a registered name (`smollm2-135m`) or a Hugging Face model directory")
    ap.add_argument("--lora", action="store_true",
                    help=f"{LORA_CONFIG}'s LoRA recipe: its adapter, budget, optimizer, reward and data")
    ap.add_argument("--lora-rank", type=int, default=None, help=f"LoRA rank (--lora: {LORA_CONFIG}'s, 16)")
    ap.add_argument("--lora-alpha", type=int, default=None, help=f"LoRA alpha (--lora: {LORA_CONFIG}'s, 32)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--problems", type=int, default=None, help="distinct prompts per step (8; --lora: 4)")
    ap.add_argument("--group", type=int, default=None, help="samples per prompt, GRPO's group (8; --lora: 6)")
    ap.add_argument("--max-tokens", type=int, default=None, help="most new tokens (96; --lora: 160)")
    ap.add_argument("--temperature", type=float, default=None, help="0.5; --lora: 0.8")
    ap.add_argument("--lr", type=float, default=None, help="5e-4; --lora: 2e-4")
    ap.add_argument("--eps", type=float, default=None,
                    help="AdamW epsilon (quickstart.yaml's optim.eps, 1e-4; --lora: 1e-8)")
    ap.add_argument("--micro-batch", type=int, default=None,
                    help="trajectories per forward/backward (min(32, problems x group); --lora: 8)")
    ap.add_argument("--correctness", choices=["binary", "fraction"], default=None,
                    help="the reward: all tests passed, or the share passed (binary; --lora: fraction)")
    ap.add_argument("--data", default=None,
                    help="`synthetic` or a training source like `mbpp:train` (synthetic; --lora: mbpp:train)")
    ap.add_argument("--heldout-data", default=None,
                    help="held-out source with --data (none: a seeded share of it; --lora: mbpp:validation)")
    ap.add_argument("--heldout-limit", type=int, default=None,
                    help="evaluate the first N held-out problems (all; --lora: 40); 0 skips the evaluation")
    ap.add_argument("--trl-gradient-checkpointing", action=argparse.BooleanOptionalAction, default=None,
                    help="TRL's gradient checkpointing (on, GRPOConfig's default; --lora: off, like ours)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run of both sides per seed")
    ap.add_argument("--heldout-per-family", type=int, default=20, help="synthetic_split n_per_family")
    ap.add_argument("--result", type=Path, default=None,
                    help="the result file (default: results/trl_throughput.json, or "
                    "trl_throughput_<model>[_lora].json for another model or --lora)")
    ap.add_argument("--out", type=Path, default=None, help="(internal) where a side writes its JSON")
    return fill_defaults(ap.parse_args(argv))


@functools.cache
def _lora_config() -> Any:
    """The shipped config whose recipe ``--lora`` runs."""
    from coding_framework.config.loader import load_config
    from coding_framework.config.training import TrainingConfig

    return load_config(TrainingConfig, LORA_CONFIG)


def lora_recipe() -> dict[str, Any]:
    """The flag values ``--lora`` stands for: smollm2_lora's, read from the shipped config."""
    cfg = _lora_config()
    if cfg.policies.mode != "shared_lora" or len(cfg.data.train) != 1:
        raise ValueError(f"{LORA_CONFIG} is no longer one shared LoRA adapter on one training source")
    return {
        "problems": cfg.rollout.problems_per_step, "group": cfg.rollout.group_size,
        "max_tokens": cfg.rollout.max_new_tokens, "temperature": cfg.rollout.temperature,
        "lr": cfg.optim.lr, "eps": cfg.optim.eps, "micro_batch": cfg.optim.micro_batch_size,
        "correctness": cfg.reward.function.correctness_mode,
        "data": cfg.data.train[0].source, "heldout_data": cfg.data.heldout,
        "heldout_limit": cfg.data.heldout_limit,
        "lora_rank": cfg.policies.rank, "lora_alpha": cfg.policies.alpha,
        "trl_gradient_checkpointing": False,  # ours cannot checkpoint on the CPU
    }


def fill_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Each flag left unset takes the embedded comparison's default, or with ``--lora`` smollm2_lora's."""
    defaults = lora_recipe() if args.lora else FULL_DEFAULTS
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.micro_batch is None:
        args.micro_batch = min(32, args.problems * args.group)
    args.micro_batch = min(args.micro_batch, args.problems * args.group)
    if (args.problems * args.group) % args.micro_batch:
        raise SystemExit(f"error: --micro-batch {args.micro_batch} must divide problems x group "
                         f"({args.problems * args.group}): TRL accumulates whole micro-batches")
    if not args.lora and (args.lora_rank is not None or args.lora_alpha is not None):
        raise SystemExit("error: --lora-rank and --lora-alpha go with --lora")
    return args


def lora_targets() -> list[str]:
    """The Linear modules our adapters target (``PoliciesConfig``'s default, which smollm2_lora keeps)."""
    from coding_framework.config.policies import PoliciesConfig

    return list(PoliciesConfig().target_modules)


def policies_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """Our side's ``policies`` section: one adapter the generator trains, or None (full fine-tune)."""
    if not args.lora:
        return None
    return {"mode": "shared_lora", "roles": ["generator"], "rank": args.lora_rank, "alpha": args.lora_alpha,
            "target_modules": lora_targets()}


def peft_kwargs(args: argparse.Namespace) -> dict[str, Any] | None:
    """TRL's ``LoraConfig(**...)``: the adapter ``RoleAdapters`` builds from ``policies_config``."""
    if not args.lora:
        return None
    return {"r": args.lora_rank, "lora_alpha": args.lora_alpha, "target_modules": lora_targets(),
            "lora_dropout": 0.0, "bias": "none", "task_type": "CAUSAL_LM"}


def _data_config(args: argparse.Namespace) -> dict[str, Any]:
    if args.data == SYNTHETIC:
        return {"synthetic_per_family": args.heldout_per_family,
                "heldout_limit": args.heldout_limit or None}
    data: dict[str, Any] = {"train": [args.data], "heldout": args.heldout_data,
                            "heldout_limit": args.heldout_limit or None}
    if args.lora:  # smollm2_lora's cleaning: against mbpp:test besides the public benchmarks found locally
        data["decontamination"] = _lora_config().data.decontamination.model_dump()
    return data


def _training_config(args: argparse.Namespace, model_dir: Path) -> Any:
    from coding_framework.config.training import TrainingConfig

    config: dict[str, Any] = {
        "algorithm": "grpo",
        "seed": args.seeds[0],
        "steps": args.steps,
        "threads": args.threads,
        "device": "cpu",
        "model": str(model_dir),
        "data": _data_config(args),
        "rollout": {
            "engine": "local",
            "problems_per_step": args.problems,
            "group_size": args.group,
            "max_new_tokens": args.max_tokens,
            "temperature": args.temperature,
            "max_batch_size": args.problems * args.group,
        },
        "workflow": {"graph": {"max_rounds": 1, "review": "never"}},
        "reward": {"function": {"weights": {"correctness": 1.0, "style": 0.0, "efficiency": 0.0},
                                "correctness_mode": args.correctness}},
        "optim": {
            "lr": args.lr,
            "eps": args.eps,
            "micro_batch_size": args.micro_batch,
            "grad_clip": 1.0,
        },
        "kl": {"mode": "none"},
        "audit": {"every": 0},
        "eval": {"max_new_tokens": args.max_tokens},
    }
    policies = policies_config(args)
    if policies is not None:
        config["policies"] = policies
    return TrainingConfig.model_validate(config)


def _model_dir(spec: str) -> Path:
    if spec == "embedded":
        from coding_framework.embedded import ensure_embedded_model

        return ensure_embedded_model()
    if Path(spec).is_dir():
        return Path(spec)
    from coding_framework.models import resolve_model

    return Path(resolve_model(spec).model_dir)


def _problems(args: argparse.Namespace, model_dir: Path) -> Any:
    """The trainer's cleaned sets (``prepare_data``): what it trains on and evaluates."""
    from coding_framework.training.run.data import prepare_data

    return prepare_data(_training_config(args, model_dir))


def _heldout(model_dir: Path, args: argparse.Namespace) -> float | None:
    """Greedy single-draft held-out pass@1 of a model directory under our evaluator."""
    if args.heldout_limit == 0:
        return None
    from coding_framework.config.graph import WorkflowConfig
    from coding_framework.grading import Grader
    from coding_framework.llm.local import LocalEngine
    from coding_framework.training.run.heldout import evaluate_heldout

    heldout = _problems(args, model_dir).heldout
    engine = LocalEngine.from_pretrained(model_dir, device="cpu", max_batch_size=64)
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


def _peak_rss() -> Any:
    from benchmarks.training.real_model_speed import PeakRSS

    return PeakRSS()


def run_ours(args: argparse.Namespace, model_dir: Path, work: Path) -> dict[str, Any]:
    from coding_framework.grading import Grader
    from coding_framework.rewards import CompositeReward
    from coding_framework.training.trainer import Trainer

    cfg = _training_config(args, model_dir)
    rewards = []
    final = work / "ours-final"
    with (
        _peak_rss() as rss,
        Trainer(cfg, work / "ours", progress=False) as trainer,
        Grader(cfg.workflow.sandbox) as grader,
    ):
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
        model = trainer.model
        if trainer.policies.adapters is not None:  # the adapter folded into the base, for the evaluation
            model = trainer.policies.adapters.peft.merge_and_unload()
        model.save_pretrained(final)
        trainer.tokenizer.save_pretrained(final)
    return _side("ours", args, seconds, rewards, final, rss.peak_mb)


def _side(
    name: str, args: argparse.Namespace, seconds: float, rewards: list[float], final: Path, peak_mb: float
) -> dict[str, Any]:
    samples = args.steps * args.problems * args.group
    tail = rewards[-2:]
    return {
        "side": name,
        "samples": samples,
        "seconds": round(seconds, 2),
        "samples_per_s": samples / seconds,
        "peak_rss_mb": round(peak_mb, 1),
        "rewards": rewards,
        "reward_mean": sum(rewards) / len(rewards),
        "reward_last_steps": sum(tail) / len(tail),
        "heldout_pass@1": _heldout(final, args),
    }


def _step_problems(args: argparse.Namespace, model_dir: Path) -> list[Any]:
    """The problems our trainer draws, step by step, so TRL sees the same prompts in the same order."""
    from coding_framework.training.algos.schedule import ProblemSampler

    cfg = _training_config(args, model_dir)
    data = _problems(args, model_dir)
    sampler = ProblemSampler(data.train, cfg.seed, cfg.curriculum, data.weights)
    return [p for step in range(args.steps) for p in sampler.draw(step, data.problems_per_step)]


def check_prompt_ids(tokenizer: Any, conversations: list[list[dict[str, str]]]) -> int:
    """How many prompts were checked: TRL's rendering of each (``apply_chat_template`` with the generation
    prompt, tokenized) must be the token ids our ``TokenSession`` builds; a ValueError names the first that
    is not."""
    from coding_framework.llm.session import TokenSession

    for messages in conversations:
        session = TokenSession(tokenizer)
        session.add_messages(messages)
        session.add_generation_prompt()
        rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                 return_dict=True)["input_ids"]
        if list(rendered) != session.ids:
            raise ValueError(f"TRL's prompt ids differ from ours for {messages[-1]['content'][:60]!r}: "
                             f"{list(rendered)[:12]}... vs {session.ids[:12]}...")
    return len(conversations)


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
    binary = args.correctness == "binary"

    def correctness(completions: list[Any], task_id: list[str], **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        items = [
            (by_id[t], assemble_program(by_id[t], code_from_answer(by_id[t], x)))
            for t, x in zip(task_id, texts, strict=True)
        ]
        return [float(r.passed) if binary else r.pass_fraction for r in grader.grade_many(items)]

    batch = args.problems * args.group
    micro = args.micro_batch  # our trainer's micro_batch_size: one optimizer step per generation batch
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
        gradient_checkpointing=args.trl_gradient_checkpointing,
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
    lora = peft_kwargs(args)
    with _peak_rss() as rss:
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        tokenizer.padding_side = "left"
        checked = check_prompt_ids(tokenizer, [generation_messages(p) for p in by_id.values()])
        peft_config = None
        if lora is not None:
            from peft import LoraConfig

            peft_config = LoraConfig(**lora)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=correctness,
            args=config,
            train_dataset=data,
            processing_class=tokenizer,
            peft_config=peft_config,
        )
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
        grader.close()
        rewards = [row["reward"] for row in trainer.state.log_history if "reward" in row]
        final = work / "trl-final"
        trained = trainer.model.merge_and_unload() if lora is not None else trainer.model
        trained.save_pretrained(final)
        tokenizer.save_pretrained(final)
    return _side("trl", args, seconds, rewards, final, rss.peak_mb) | {"prompts_checked_same_ids": checked}


def default_result(args: argparse.Namespace) -> Path:
    """results/trl_throughput.json for the embedded full fine-tune; ``trl_throughput_smollm2_lora.json`` for
    --lora on smollm2_lora's own model; else ``trl_throughput_<model>[_lora].json``."""
    if args.model == "embedded" and not args.lora:
        return OUT
    if args.lora and args.model == _lora_config().model.spec:
        return RESULTS / f"trl_throughput_{LORA_CONFIG}.json"
    return RESULTS / f"trl_throughput_{Path(args.model).name}{'_lora' if args.lora else ''}.json"


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
        "settings": {k: v for k, v in vars(args).items() if k not in ("side", "out", "result")},
        "runs": runs,
        "mean_over_seeds": summary,
        "throughput_ratio_ours_over_trl": _mean([r["throughput_ratio_ours_over_trl"] for r in runs]),
    }
    if args.lora:
        report["lora"] = {"ours_policies": policies_config(args), "trl_peft_config": peft_kwargs(args)}
        report["peak_rss_ratio_ours_over_trl"] = _mean([r["peak_rss_ratio_ours_over_trl"] for r in runs])
    packages = ("trl", "peft") if args.lora else ("trl",)
    write_result(args.result or default_result(args), report, load, model_dir=model_dir,
                 extra_packages=anchor_versions(TRL_PYTHON, *packages))
    headline = {k: report[k] for k in ("throughput_ratio_ours_over_trl", "peak_rss_ratio_ours_over_trl")
                if k in report}
    print(json.dumps(headline | summary))


SUMMARY_KEYS = ("samples_per_s", "peak_rss_mb", "reward_mean", "reward_last_steps", "heldout_pass@1")


def _mean(values: list[Any]) -> Any:
    """The mean, or None where a value is missing (held-out pass@1 skipped)."""
    if any(v is None for v in values):
        return None
    return sum(values) / len(values)


def side_argv(args: argparse.Namespace) -> list[str]:
    """The flags that hand ``args`` (defaults filled in) to one side's process."""
    flags = []
    for key, value in vars(args).items():
        if key in ("side", "out", "model", "seeds", "result") or value is None:
            continue
        flag = f"--{key.replace('_', '-')}"
        if key == "trl_gradient_checkpointing":  # on or off: the side must not fall back to its default
            flags.append(flag if value else f"--no-{flag[2:]}")
        elif isinstance(value, bool):  # --lora
            flags += [flag] if value else []
        else:
            flags.append(f"{flag}={value}")
    return flags


def _both_sides(args: argparse.Namespace, model_dir: Path, work: Path, seed: int) -> dict[str, Any]:
    """Both sides for one seed, each in its own interpreter (TRL's lives in .venv-trl)."""
    sides = {}
    for side, python in (("ours", sys.executable), ("trl", str(TRL_PYTHON))):
        out = work / f"{side}-{seed}.json"
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
            *side_argv(args),
        ]
        subprocess.run(cmd, check=True, cwd=ROOT)
        sides[side] = json.loads(out.read_text())
    ratio = sides["ours"]["samples_per_s"] / sides["trl"]["samples_per_s"]
    memory = sides["ours"]["peak_rss_mb"] / sides["trl"]["peak_rss_mb"]
    return {"seed": seed, **sides, "throughput_ratio_ours_over_trl": ratio,
            "peak_rss_ratio_ours_over_trl": memory}


if __name__ == "__main__":
    main()
