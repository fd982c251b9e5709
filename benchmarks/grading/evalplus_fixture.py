"""Build a HumanEvalPlus-format file from the real HumanEval, with generated plus inputs.

EvalPlus's own release files cannot be downloaded here. This writes records in its official format
(task_id, prompt, entry_point, canonical_solution, base_input, plus_input, atol, contract, test) for the
HumanEval tasks whose ``check`` calls ``candidate`` with literal arguments: ``base_input`` are those
arguments, ``plus_input`` are type-preserving mutations of them (seeded) on which the canonical solution
runs without error in half a second. ``--mbpp`` builds MbppPlus records from sanitized MBPP the same way
(skipping the tasks whose inputs EvalPlus converts to tuples or sets). Used by
``benchmarks/grading/evalplus_agreement.py`` and to write the test fixture.

    python -m benchmarks.grading.evalplus_fixture \\
        --humaneval /work/shared/data/humaneval/HumanEval.jsonl.gz \\
        --out /tmp/HumanEvalPlus.jsonl --tasks 30 --plus 40
"""

from __future__ import annotations

import argparse
import ast
import copy
import gzip
import json
import random
import signal
from pathlib import Path
from typing import Any


def _base_inputs(test: str) -> list[list] | None:
    calls = [n for n in ast.walk(ast.parse(test)) if isinstance(n, ast.Call)]
    calls = [c for c in calls if isinstance(c.func, ast.Name) and c.func.id == "candidate"]
    try:
        return [[ast.literal_eval(a) for a in c.args] for c in calls if not c.keywords] or None
    except ValueError:
        return None


def _mutate(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return rng.random() < 0.5
    if isinstance(value, int):
        return value + rng.choice([-3, -1, 1, 2, 5, 10, value])
    if isinstance(value, float):
        return value * rng.choice([0.5, 1.5, -1.0, 2.0]) + rng.choice([0.0, 0.25])
    if isinstance(value, str):
        chars = list(value)
        if chars and rng.random() < 0.5:
            rng.shuffle(chars)
        return "".join(chars) + rng.choice(["", value[:2], "a", " "])
    if isinstance(value, list):
        items = [_mutate(v, rng) if rng.random() < 0.5 else v for v in value]
        if items and rng.random() < 0.5:
            items.append(copy.deepcopy(rng.choice(items)))
        return items
    return value


class _Slow(Exception):
    pass


def _runs(fn, args: list, seconds: float) -> tuple[bool, Any]:
    def alarm(*_):
        raise _Slow()

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return True, fn(*copy.deepcopy(args))
    except Exception:
        return False, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _json(value: Any) -> Any:
    """What an input becomes in a JSON release file (tuples turn into lists)."""
    return json.loads(json.dumps(value))


def _plus_inputs(
    fn, base: list[list], n_plus: int, rng: random.Random, gt_seconds: float
) -> list[list] | None:
    """Seeded mutations of the base inputs on which the reference runs; None if a base input fails."""
    outputs = [_runs(fn, args, gt_seconds) for args in base]
    if not all(ok for ok, _ in outputs):
        return None
    plus: list[list] = []
    for _ in range(n_plus * 4):
        if len(plus) >= n_plus:
            break
        args = _json([_mutate(a, rng) for a in rng.choice(base)])
        if args not in plus and args not in base and _runs(fn, args, gt_seconds)[0]:
            plus.append(args)
    return plus


def _floats(fn, base: list[list]) -> bool:
    return any(isinstance(_runs(fn, args, 1.0)[1], float) for args in base)


def plus_record(record: dict, n_plus: int, seed: int, gt_seconds: float) -> dict | None:
    base = _base_inputs(record["test"])
    if base is None or record["task_id"] == "HumanEval/32":  # find_zero: the oracle is special
        return None
    base = _json(base)
    ns: dict = {}
    exec(record["prompt"] + record["canonical_solution"], ns)
    fn = ns[record["entry_point"]]
    plus = _plus_inputs(fn, base, n_plus, random.Random(f"{seed}:{record['task_id']}"), gt_seconds)
    if plus is None:
        return None
    return {
        "task_id": record["task_id"],
        "prompt": record["prompt"],
        "entry_point": record["entry_point"],
        "canonical_solution": record["canonical_solution"],
        "base_input": base,
        "plus_input": plus,
        "atol": 1e-6 if _floats(fn, base) else 0,
        "contract": "",
        "test": record["test"],
    }


def mbpp_plus_record(record: dict, n_plus: int, seed: int, gt_seconds: float) -> dict | None:
    """An MbppPlus record from a sanitized-MBPP one; tasks whose inputs EvalPlus converts are skipped."""
    from coding_framework.problems.evalplus import _DESERIALIZE

    n = record["task_id"]
    special = {115, 124, 252, 278, 307, 722}
    if n in special or any(n in ids for ids in _DESERIALIZE.values()) or record.get("test_imports"):
        return None
    tests = "\n".join(record["test_list"])
    calls = [
        c for c in ast.walk(ast.parse(tests)) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
    ]
    ns: dict = {}
    try:
        exec(record["code"], ns)
        entry = next(c.func.id for c in calls if c.func.id in ns and callable(ns[c.func.id]))
        base = _json([[ast.literal_eval(a) for a in c.args] for c in calls if c.func.id == entry])
    except (StopIteration, ValueError, SyntaxError, TypeError, NameError):
        return None
    plus = _plus_inputs(ns[entry], base, n_plus, random.Random(f"{seed}:Mbpp/{n}"), gt_seconds)
    if not base or plus is None:
        return None
    return {
        "task_id": f"Mbpp/{n}",
        "prompt": f'"""\n{record["prompt"]}\n{record["test_list"][0]}\n"""\n',
        "entry_point": entry,
        "canonical_solution": record["code"] + "\n",
        "base_input": base,
        "plus_input": plus,
        "atol": 1e-6 if _floats(ns[entry], base) else 0,
        "contract": "",
        "assertion": tests,
    }


def build(humaneval: Path, tasks: int, n_plus: int, seed: int = 0, gt_seconds: float = 0.5) -> list[dict]:
    raw = gzip.decompress(humaneval.read_bytes()) if humaneval.suffix == ".gz" else humaneval.read_bytes()
    records = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    return _first(records, plus_record, tasks, n_plus, seed, gt_seconds)


def build_mbpp(
    sanitized: Path, tasks: int, n_plus: int, seed: int = 0, gt_seconds: float = 0.5
) -> list[dict]:
    records = json.loads(sanitized.read_text())
    return _first(records, mbpp_plus_record, tasks, n_plus, seed, gt_seconds)


def _first(records: list[dict], make, tasks: int, n_plus: int, seed: int, gt_seconds: float) -> list[dict]:
    out: list[dict] = []
    for record in records:
        if len(out) >= tasks:
            break
        rec = make(record, n_plus, seed, gt_seconds)
        if rec is not None:
            out.append(rec)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path("/work/shared/data/humaneval/HumanEval.jsonl.gz")
    parser.add_argument("--humaneval", type=Path, default=default)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--plus", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mbpp", type=Path, help="Build MbppPlus from this sanitized-mbpp.json instead.")
    args = parser.parse_args()
    if args.mbpp is not None:
        records = build_mbpp(args.mbpp, args.tasks, args.plus, args.seed)
    else:
        records = build(args.humaneval, args.tasks, args.plus, args.seed)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"{len(records)} tasks -> {args.out}")


if __name__ == "__main__":
    main()
