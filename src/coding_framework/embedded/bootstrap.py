"""Build the embedded default model with no downloads, and cache it on disk keyed by what determines it.

The default recipe is not built at all: the package ships its reference build (``reference.py``), which
is installed into the cache instead, so every machine starts from the same weights. Other recipes, and
``force``, build here.

Steps: train the tokenizer on local Python source, build SFT examples from the built-in problems and the
synthetic families' training split (with habit and revision examples graded in the sandbox), initialise
a small Qwen2 from the seed, pretrain it briefly on the training problems' reference programs, fine-tune
it in the Generator's chat format, and save a standard Hugging Face model directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platformdirs
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.embedded.data import (
    generation_examples,
    habit_examples,
    pretraining_text,
    revision_examples,
)
from coding_framework.embedded.reference import (
    LOCAL_SUFFIX,
    RECIPE_VERSION,
    install_reference,
    recipe_key,
    reference_mismatches,
    reference_name,
)
from coding_framework.embedded.tokenizer import train_tokenizer
from coding_framework.embedded.train import PhaseStats, StepCallback, pretrain, sft_train
from coding_framework.logs import get_logger
from coding_framework.problems import Problem, builtin_problems, synthetic_split

log = get_logger(__name__)

REPORT_FILE = "bootstrap.json"


def cache_root() -> Path:
    """``$CODING_FRAMEWORK_CACHE`` if set, else the user cache dir (e.g. ~/.cache/coding-framework)."""
    env = os.environ.get("CODING_FRAMEWORK_CACHE")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("coding-framework"))


def training_problems(config: EmbeddedModelConfig) -> list[Problem]:
    """The built-in problems plus the training split of the synthetic families."""
    data = config.data
    synthetic: list[Problem] = []
    if data.synthetic_per_family:
        synthetic, _ = synthetic_split(
            data.synthetic_per_family, data.synthetic_heldout_fraction, data.synthetic_seed
        )
    return [*builtin_problems(), *synthetic]


def model_key(config: EmbeddedModelConfig, problems: list[Problem]) -> str:
    """Hash of everything a build here depends on: the recipe, Python (stdlib corpus) and torch."""
    h = hashlib.sha256(recipe_key(config, problems).encode())
    h.update(f"{platform.python_version()}|{torch.__version__}".encode())
    return h.hexdigest()[:16]


def ensure_embedded_model(
    config: EmbeddedModelConfig | None = None, force: bool = False, progress: bool = True
) -> Path:
    """The directory of the embedded model for ``config``: loaded from the cache, or put there first.

    The shipped reference build is installed when ``config`` is its recipe (and ``config.reference``);
    otherwise, or with ``force``, the recipe is built here, into a directory of its own (``-local``).
    Concurrent callers wait on a file lock instead of building twice; the directory appears atomically.
    """
    config = config or EmbeddedModelConfig()
    problems = training_problems(config)
    reference = None if force or not config.reference else reference_name(config, problems)
    use_reference = reference is not None
    final = cache_root() / "models" / (reference or f"embedded-{model_key(config, problems)}{LOCAL_SUFFIX}")
    final.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(final.with_suffix(".lock")):
        # A reference dir is reused only if it is the shipped build: an older cache may hold a local one.
        stale = use_reference and reference_mismatches(final)
        if (final / REPORT_FILE).is_file() and not force and not stale:
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
        tmp.chmod(0o755)  # mkdtemp makes it private; servers (vLLM) may run as another user
        try:
            if use_reference:
                install_reference(tmp)
            else:
                build_embedded_model(config, problems, tmp, progress=progress)
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("embedded_model_ready", path=str(final), reference=use_reference)
    return final


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing): one writer per cache entry."""
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_embedded_model(
    config: EmbeddedModelConfig, problems: list[Problem], out_dir: Path, progress: bool = True
) -> dict[str, Any]:
    """Run the whole recipe and save the model, tokenizer and a ``bootstrap.json`` report in ``out_dir``."""
    start = time.perf_counter()
    threads_before = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
    )
    try:
        with Progress(*columns, console=console, disable=not progress) as bar:
            report = _recipe(config, problems, out_dir, bar)
    finally:
        torch.set_num_threads(threads_before)
    report["wall_time_s"] = round(time.perf_counter() - start, 1)
    (out_dir / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    return report


def _recipe(
    config: EmbeddedModelConfig, problems: list[Problem], out_dir: Path, bar: Progress
) -> dict[str, Any]:
    task = bar.add_task("tokenizer", total=1, info="byte-level BPE on stdlib source")
    texts = [t for p in problems for t in (p.prompt, *p.solutions)] * config.tokenizer.problem_text_repeats
    tokenizer = train_tokenizer(config.tokenizer, texts)
    bar.update(task, completed=1, info=f"{len(tokenizer)} tokens")

    task = bar.add_task("SFT data", total=1, info="grading habit and revision attempts in the sandbox")
    examples = generation_examples(tokenizer, problems)
    habits = _extra(len(examples), config.data.habit_share)
    examples += habit_examples(tokenizer, problems, habits, config.seed)
    examples += revision_examples(
        tokenizer, problems, _extra(len(examples), config.data.revision_share), config.seed
    )
    bar.update(task, completed=1, info=f"{len(examples)} examples")

    model = init_model(config.architecture, tokenizer, config.seed)
    pre = None
    if config.pretrain.steps:  # a skipped phase gets no documents and no empty progress bar
        docs = [
            tokenizer(pretraining_text(p), add_special_tokens=False)["input_ids"]
            for p in problems
            if p.solutions
        ]
        task = bar.add_task("pretrain", total=config.pretrain.steps, info="")
        pre = pretrain(
            model, docs, config.pretrain, tokenizer.pad_token_id, config.seed, on_step=_ticker(bar, task)
        )
    task = bar.add_task("SFT", total=config.sft.steps, info="")
    sft = sft_train(
        model, examples, config.sft, tokenizer.pad_token_id, config.seed, on_step=_ticker(bar, task)
    )
    model.save_pretrained(out_dir)
    model.generation_config.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return {
        "config": config.model_dump(mode="json"),
        "recipe_version": RECIPE_VERSION,
        "problems": len(problems),
        "examples": {
            "total": len(examples),
            "habit": sum(e.kind == "habit" for e in examples),
            "revision": sum(e.kind == "revision" for e in examples),
        },
        "parameters": sum(p.numel() for p in model.parameters()),
        "pretrain": _phase_report(pre),
        "sft": _phase_report(sft),
        "torch_threads": torch.get_num_threads(),
    }


def _extra(existing: int, share: float) -> int:
    """How many examples to add so that they are ``share`` of the total."""
    return round(existing * share / (1 - share))


def _ticker(bar: Progress, task: TaskID) -> StepCallback:
    return lambda step, loss: bar.update(task, completed=step + 1, info=f"loss {loss:.3f}")


def _phase_report(stats: PhaseStats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {
        "steps": stats.steps,
        "rows": stats.rows,
        "loss_tokens": stats.loss_tokens,
        "first_loss": round(stats.first_loss, 4),
        "final_loss": round(stats.final_loss, 4),
    }
