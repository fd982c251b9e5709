"""HumanEval+ and MBPP+ (EvalPlus, Liu et al. 2023): the original tasks with many more test inputs.

Sources for :func:`load_evalplus`: a local release file (``HumanEvalPlus.jsonl(.gz)``,
``MbppPlus.jsonl(.gz)``, versioned names such as ``HumanEvalPlus-v0.1.10.jsonl.gz`` too) or a folder
holding one, or ``"hf"``/``"hf:<dataset>"`` (rows must carry ``base_input`` and ``plus_input``). A record
has ``task_id``, ``prompt``, ``entry_point``, ``canonical_solution``, ``base_input``, ``plus_input`` and
``atol``.

As in EvalPlus, expected outputs come from running the canonical solution on every input, once, in a
separate trusted process (cached under ``~/.cache/coding-framework/evalplus``), and each input's time
limit is ``max(1.0, 4.0 x the canonical solution's time on it)`` (``evalplus.config``). The problem's
tests are the base inputs, then the plus inputs; ``Problem.base_tests`` says how many are base. A
sample's *base* verdict is its base inputs; its *plus* verdict is all inputs (EvalPlus counts plus
only when base passes too).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

from coding_framework.problems._io import (
    ProblemLoadError,
    Record,
    check_unique,
    hub_records,
    local_path,
    read_records,
)
from coding_framework.problems.humaneval import solution_difficulty
from coding_framework.problems.problem import Problem

Flavor = Literal["humaneval", "mbpp"]
MIN_TIME_LIMIT_S, GT_TIME_LIMIT_FACTOR, TIMEOUT_PER_SET_S = 1.0, 4.0, 60.0
HUB_DATASETS = {"humaneval": "evalplus/humanevalplus", "mbpp": "evalplus/mbppplus"}
_PREFIX = {"humaneval": "HumanEvalPlus", "mbpp": "MbppPlus"}
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "coding-framework" / "evalplus"
_GROUNDTRUTH_TIMEOUT_S = 1800.0

# evalplus/eval/_special_oracle.py: MBPP entry points whose outputs are checked by a special oracle.
MBPP_SET_EQ = {
    "similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly",
    "larg_nnum", "intersection_array", "find_dissimilar", "Diff",
}  # fmt: skip
MBPP_NOT_NONE = {"check_str", "text_match_three", "text_starta_endb"}
_MBPP_ORACLES = {"are_equivalent": "always", "sum_div": "sum_div", "surface_Area": "surface_area"}
_MBPP_ORACLES["digit_distance_nums"] = "digit_distance"

# evalplus/data/mbpp.py mbpp_deserialize_inputs: JSON lists that stand for tuples, sets or complex numbers.
_DESERIALIZE: dict[str, tuple[int, ...]] = {
    "args_tuples": (2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596, 616,
                    630, 726, 740, 744, 809),
    "nested_tuples": (63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780),
    "first_nested": (75, 413, 444, 753),
    "second_tuple": (106, 750),
    "first_tuple": (250, 405, 446, 617, 720, 763, 808),
    "nested_then_tuples": (259, 401, 445),
    "all_tuples": (580, 615, 791),
}  # fmt: skip


def _all_tuple(x: Any) -> Any:
    return tuple(_all_tuple(i) for i in x) if isinstance(x, list) else x


def mbpp_deserialize_inputs(task_id: str, inputs: list) -> list:
    """EvalPlus's per-task conversion of MBPP+ inputs (lists that stand for tuples, sets, complex)."""
    n = int(task_id.split("/")[-1])
    kind = next((k for k, ids in _DESERIALIZE.items() if n in ids), None)
    rules: dict[str | None, Any] = {
        "args_tuples": lambda inp: [tuple(x) for x in inp],
        "nested_tuples": lambda inp: [[tuple(x) for x in xs] for xs in inp],
        "first_nested": lambda inp: [[tuple(x) for x in inp[0]], inp[1]],
        "second_tuple": lambda inp: [inp[0], tuple(inp[1])],
        "first_tuple": lambda inp: [tuple(inp[0]), inp[1]],
        "nested_then_tuples": lambda inp: [tuple(tuple(x) for x in xs) for xs in inp],
        "all_tuples": _all_tuple,
    }
    if n == 115:
        return [[[set(i) if isinstance(i, list) and len(i) else {} for i in inp[0]]] for inp in inputs]
    if n == 124:
        return [(float(inp[0]), complex(inp[1])) for inp in inputs]
    if n == 252:
        return [[complex(inp[0])] for inp in inputs]
    if n == 278:
        return [[tuple(tuple(i) if isinstance(i, list) else i for i in inp[0])] for inp in inputs]
    if n == 307:
        return [[tuple(inp[0]), inp[1], inp[2]] for inp in inputs]
    if n == 722:
        return [[{k: tuple(v) for k, v in inp[0].items()}, *inp[1:]] for inp in inputs]
    rule = rules.get(kind)
    return [rule(inp) for inp in inputs] if rule else inputs


def py_literal(value: Any) -> str:
    """Python source that evaluates to ``value`` (builtin containers, numbers, text, inf and nan)."""
    if value is None or isinstance(value, bool | int | str | bytes):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({repr(value)!r})"
    if isinstance(value, complex):
        return f"complex({py_literal(value.real)}, {py_literal(value.imag)})"
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(py_literal(v) + ", " for v in value) + ")"
    if isinstance(value, set | frozenset):
        inner = "[" + ", ".join(py_literal(v) for v in value) + "]"
        return f"{type(value).__name__}({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write a {type(value).__name__} as a test value")


def _groundtruth_main() -> None:
    """Child process: run each canonical solution on its inputs, as EvalPlus's ``trusted_exec`` does."""
    import copy
    import time

    out = {}
    for task in json.load(sys.stdin):
        ns: dict = {}
        exec(task["code"], ns)
        fn = ns[task["entry_point"]]
        entry: dict = {}
        for part in ("base", "plus"):
            inputs = eval(task[part])  # trusted: written by py_literal from the release file
            values, times = [], []
            for inp in inputs:
                inp = copy.deepcopy(inp)
                start = time.time()
                values.append(fn(*inp))
                times.append(time.time() - start)
            if task["not_none"]:
                values = [v is not None for v in values]
            entry[part], entry[part + "_time"] = py_literal(values), times
        out[task["task_id"]] = entry
    json.dump(out, sys.stdout)


def _groundtruth(tasks: list[dict], where: str) -> dict[str, dict]:
    key = hashlib.sha256(json.dumps(tasks, sort_keys=True).encode()).hexdigest()[:24]
    cache = CACHE_DIR / f"{key}.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")])}
    code = "from coding_framework.problems.evalplus import _groundtruth_main; _groundtruth_main()"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], input=json.dumps(tasks), capture_output=True, text=True,
            env=env, timeout=_GROUNDTRUTH_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        limit = _GROUNDTRUTH_TIMEOUT_S
        raise ProblemLoadError(f"{where}: the canonical solutions ran over {limit}s") from exc
    if proc.returncode != 0:
        raise ProblemLoadError(f"{where}: a canonical solution failed: {proc.stderr.strip()[-500:]}")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    cache.write_text(proc.stdout)
    return json.loads(proc.stdout)


def load_evalplus(source: str | Path | None, flavor: Flavor) -> list[Problem]:
    """HumanEval+ (``flavor="humaneval"``) or MBPP+ (``"mbpp"``) problems from ``source``, in file order."""
    if source is None or (isinstance(source, str) and (source == "hf" or source.startswith("hf:"))):
        dataset = (source or "").partition(":")[2] or HUB_DATASETS[flavor]
        records = hub_records(dataset, None, f"{_PREFIX[flavor]}.jsonl.gz")
        where = f"hf:{dataset}"
    else:
        path = local_path(source)
        path = _find(path, flavor) if path.is_dir() else path
        records, where = read_records(path), str(path)
    tasks = [_task(r, flavor) for r in records]
    truth = _groundtruth(tasks, where)
    problems = [_problem(r, t, truth[t["task_id"]], flavor) for r, t in zip(records, tasks, strict=True)]
    check_unique(problems, records)
    return problems


def _find(folder: Path, flavor: Flavor) -> Path:
    found = sorted(p for p in folder.glob(f"{_PREFIX[flavor]}*.jsonl*") if p.is_file())
    if not found:
        raise ProblemLoadError(f"{folder}: no {_PREFIX[flavor]}.jsonl(.gz) file found")
    return found[-1]


def _inputs(record: Record, key: str, flavor: Flavor) -> list:
    inputs = record.field(key, list)
    if not all(isinstance(i, list) for i in inputs):
        raise ProblemLoadError(f"{record.where}: field {key!r} should be a list of argument lists")
    if flavor == "mbpp":
        inputs = mbpp_deserialize_inputs(record.field("task_id"), inputs)
    try:
        return [py_literal(list(i)) for i in inputs]
    except TypeError as exc:
        raise ProblemLoadError(f"{record.where}: field {key!r}: {exc}") from exc


def _task(record: Record, flavor: Flavor) -> dict:
    """What the ground-truth process needs for one record (checked here, so errors name the record)."""
    prompt, canonical = record.field("prompt"), record.field("canonical_solution")
    entry = record.field("entry_point")
    base, plus = _inputs(record, "base_input", flavor), _inputs(record, "plus_input", flavor)
    record.field("atol", (int, float))
    return {
        "task_id": record.field("task_id"),
        "code": prompt + canonical,
        "entry_point": entry,
        "base": "[" + ", ".join(base) + "]",
        "plus": "[" + ", ".join(plus) + "]",
        "not_none": flavor == "mbpp" and entry in MBPP_NOT_NONE,
    }


def _oracle(flavor: Flavor, entry: str) -> str | None:
    if flavor == "humaneval":
        return "find_zero" if entry == "find_zero" else None
    if entry in MBPP_SET_EQ:
        return "set_eq"
    if entry in MBPP_NOT_NONE:
        return "not_none"
    return _MBPP_ORACLES.get(entry)


def _limits(times: list[float]) -> list[float]:
    return [max(MIN_TIME_LIMIT_S, GT_TIME_LIMIT_FACTOR * t) for t in times]


def _problem(record: Record, task: dict, truth: dict, flavor: Flavor) -> Problem:
    base_limits, plus_limits = _limits(truth["base_time"]), _limits(truth["plus_time"])
    inputs = task["base"][:-1] + (", " if base_limits and plus_limits else "") + task["plus"][1:]
    expected = truth["base"][:-1] + (", " if base_limits and plus_limits else "") + truth["plus"][1:]
    oracle = _oracle(flavor, task["entry_point"])
    spec = (
        f"SPEC = {{'atol': {float(record.data['atol'])!r}, 'oracle': {oracle!r},\n"
        f" 'time_limits': {base_limits + plus_limits!r},\n 'inputs': {inputs},\n 'expected': {expected}}}\n"
    )
    budget = sum(min(TIMEOUT_PER_SET_S, sum(lim)) + 1.0 for lim in (base_limits, plus_limits)) + 2.0
    try:
        return Problem(
            task_id=task["task_id"],
            prompt=record.field("prompt"),
            entry_point=task["entry_point"],
            test_code=spec,
            test_format="calls",
            solutions=[task["code"]],
            difficulty=solution_difficulty(record.field("canonical_solution")),
            source=f"evalplus:{flavor}",
            prompt_is_code=True,
            timeout_s=budget,
            base_tests=len(base_limits),
        )
    except ValueError as exc:
        raise ProblemLoadError(f"{record.where}: invalid problem {task['task_id']}: {exc}") from exc
