"""Held-out synthetic pass@k of the embedded model: random init (the anchor) vs after the SFT bootstrap.

Reproduce (from the repo root):

    .venv/bin/python -m benchmarks.training.embedded_model_passk            # uses the cached model if any
    .venv/bin/python -m benchmarks.training.embedded_model_passk --rebuild  # also times a fresh bootstrap

The evaluation alone takes about 20 minutes on 2 cores (the filed run, loaded: 1179 s random init, 95 s SFT).

Held-out problems come from ``synthetic_split`` with the bootstrap's fraction and seed, so their primary
constants never occur in SFT. Both models answer the Generator's exact prompt (``generation_messages``);
answers are graded by the real grader. Reported per model: greedy pass@1, sampled pass@1 and pass@k
(temperature 1, unbiased estimator), and pass within two turns (greedy first attempt, then one revision
with ``revision_messages`` and the grader's summary). The SFT model's numbers are also given as a
difference and ratio against the random-init anchor, and the bootstrap's wall and CPU time against the
5-minute budget. Results go to benchmarks/results/embedded_model_passk.json with the machine record and
the SFT model's sha256.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from coding_framework.config import load_config
from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.embedded import ensure_embedded_model
from coding_framework.embedded.architecture import init_model
from coding_framework.embedded.bootstrap import REPORT_FILE
from coding_framework.evaluation.passk import pass_at_k
from coding_framework.grading import Grader
from coding_framework.llm.base import SamplingParams
from coding_framework.llm.local import LocalEngine
from coding_framework.llm.session import TokenSession
from coding_framework.problems import Problem, synthetic_split
from coding_framework.problems.prompts import extract_code, generation_messages, revision_messages

BUDGET_S = 300.0


def _grade(grader: Grader, problems: list[Problem], texts: list[str]) -> list[bool]:
    programs = [extract_code(t, p.entry_point) or "" for p, t in zip(problems, texts, strict=True)]
    return [r.passed for r in grader.grade_many(list(zip(problems, programs, strict=True)))]


def _prompt_ids(engine: LocalEngine, problem: Problem) -> list[int]:
    session = TokenSession(engine.tokenizer)
    session.add_messages(generation_messages(problem))
    session.add_generation_prompt()
    return session.ids


def _two_turns(engine: LocalEngine, grader: Grader, problems: list[Problem], max_new: int) -> list[bool]:
    """Greedy first attempt; on failure one greedy revision with the grader's summary as feedback."""
    greedy = SamplingParams(max_new_tokens=max_new, temperature=0.0)
    sessions = [TokenSession(engine.tokenizer) for _ in problems]
    for s, p in zip(sessions, problems, strict=True):
        s.add_messages(generation_messages(p))
    first = [s.generate(engine, greedy) for s in sessions]
    programs = [extract_code(g.text, p.entry_point) or "" for g, p in zip(first, problems, strict=True)]
    results = grader.grade_many(list(zip(problems, programs, strict=True)))
    passed = [r.passed for r in results]
    retry = [i for i, ok in enumerate(passed) if not ok]
    for i in retry:
        sessions[i].add_messages(revision_messages(problems[i], programs[i], results[i].summary))
    prompts = [_session_prompt(sessions[i]) for i in retry]
    second = engine.generate_batch(prompts, greedy)
    again = _grade(grader, [problems[i] for i in retry], [g.text for g in second])
    for i, ok in zip(retry, again, strict=True):
        passed[i] = ok
    return passed


def _session_prompt(session: TokenSession) -> list[int]:
    session.add_generation_prompt()
    return session.ids


def evaluate(
    engine: LocalEngine, grader: Grader, problems: list[Problem], samples: int, max_new: int, k: int
) -> dict[str, Any]:
    prompts = [_prompt_ids(engine, p) for p in problems]
    start = time.perf_counter()
    greedy = engine.generate_batch(prompts, SamplingParams(max_new_tokens=max_new, temperature=0.0))
    greedy_ok = _grade(grader, problems, [g.text for g in greedy])
    sampled = engine.generate_batch(
        [p for p in prompts for _ in range(samples)],
        SamplingParams(max_new_tokens=max_new, temperature=1.0, seed=0),
    )
    sampled_ok = _grade(grader, [p for p in problems for _ in range(samples)], [g.text for g in sampled])
    correct = [sum(sampled_ok[i * samples : (i + 1) * samples]) for i in range(len(problems))]
    two_turn_ok = _two_turns(engine, grader, problems, max_new)
    by_family: dict[str, list[bool]] = defaultdict(list)
    for p, ok in zip(problems, greedy_ok, strict=True):
        by_family[p.source.removeprefix("synthetic:")].append(ok)
    return {
        "greedy_pass@1": sum(greedy_ok) / len(problems),
        "sampled_pass@1": float(pass_at_k(samples, correct, 1).mean()),
        f"sampled_pass@{k}": float(pass_at_k(samples, correct, k).mean()),
        "two_turn_greedy_pass": sum(two_turn_ok) / len(problems),
        "mean_answer_tokens": sum(len(g.token_ids) for g in sampled) / len(sampled),
        "greedy_by_family": {f: f"{sum(v)}/{len(v)}" for f, v in sorted(by_family.items())},
        "eval_wall_s": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config", default="embedded_model", help="a model YAML path or a shipped config's name"
    )
    parser.add_argument("--n-per-family", type=int, default=40, help="synthetic_split n_per_family")
    parser.add_argument("--samples", type=int, default=8, help="sampled answers per problem (temperature 1)")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the model and time the bootstrap")
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "embedded_model_passk.json"
    )
    args = parser.parse_args()

    config = load_config(EmbeddedModelConfig, args.config)
    with LoadMonitor() as load:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        path = ensure_embedded_model(config, force=args.rebuild)
        build = json.loads((path / REPORT_FILE).read_text())
        if args.rebuild:
            build["measured_wall_s"] = round(time.perf_counter() - wall0, 1)
            build["measured_cpu_s"] = round(time.process_time() - cpu0, 1)  # excludes sandbox children
        _, heldout = synthetic_split(
            args.n_per_family, config.data.synthetic_heldout_fraction, config.data.synthetic_seed
        )

        tokenizer = AutoTokenizer.from_pretrained(path)
        anchor = LocalEngine(init_model(config.architecture, tokenizer, config.seed), tokenizer, device="cpu")
        sft = LocalEngine.from_pretrained(path, device="cpu")
        with Grader() as grader:
            untrained = evaluate(anchor, grader, heldout, args.samples, args.max_new_tokens, args.k)
            trained = evaluate(sft, grader, heldout, args.samples, args.max_new_tokens, args.k)
    metrics = ("greedy_pass@1", "sampled_pass@1", f"sampled_pass@{args.k}", "two_turn_greedy_pass")
    report = {
        "model_dir": str(path),
        "heldout_problems": len(heldout),
        "bootstrap": {
            "wall_time_s": build["wall_time_s"],
            "wall_vs_5min_budget": round(build["wall_time_s"] / BUDGET_S, 3),
            **{k: build[k] for k in ("measured_wall_s", "measured_cpu_s") if k in build},
            "parameters": build["parameters"],
            "pretrain": build["pretrain"],
            "sft": build["sft"],
            "examples": build["examples"],
        },
        "random_init": untrained,
        "sft": trained,
        "sft_minus_random_init": {m: round(trained[m] - untrained[m], 4) for m in metrics},
        "sft_over_random_init": {
            m: (round(trained[m] / untrained[m], 2) if untrained[m] else None) for m in metrics
        },
    }
    write_result(args.out, report, load, model_dir=path)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
