"""Input/expected-output tests judged with EvalPlus's rules (stdlib only: runs inside the sandbox).

The job's ``test_code`` is trusted Python source that binds ``SPEC = {"inputs": [...], "expected": [...],
"time_limits": [...], "atol": float, "oracle": name or None}``. Each input is a round trip to the
submission's entry point; its decoded return value is compared here, as EvalPlus's ``unsafe_execute``
does: exact equality, else (when ``atol`` is set, or the expected value is a float or list of floats)
``np.allclose(out, exp, rtol=1e-07, atol=atol)`` after a type and length check. Every input is one test
unit. Like EvalPlus's default (``fast_check``), the run stops at the first failing input; a call that
outlives its per-input time limit ends the run as a timeout (the job's wall-clock alarm is lowered to
the limit for the length of the call, then restored).
"""

from __future__ import annotations

import math
import signal
import time

RTOL = 1e-07
FLOAT_ATOL = 1e-6  # EvalPlus enforces this atol when the expected output is floats and atol is 0


def is_floats(x) -> bool:
    if isinstance(x, float):
        return True
    if isinstance(x, list | tuple) and x:
        return all(isinstance(i, float) for i in x)
    return False


def _close(a, b, atol: float) -> bool:
    """``np.allclose`` on (nested) numbers: ``|a - b| <= atol + rtol * |b|``, inf equal to itself only."""
    if isinstance(b, list | tuple):
        seq = isinstance(a, list | tuple)
        return seq and len(a) == len(b) and all(_close(x, y, atol) for x, y in zip(a, b, strict=True))
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return False
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + RTOL * abs(b)


def _poly(xs: list, x: float) -> float:
    return math.fsum(coeff * math.pow(x, i) for i, coeff in enumerate(xs))


def _surface_area(base_edge, height):
    slant = math.sqrt((base_edge / 2) ** 2 + height**2)
    return base_edge**2 + 4 * (base_edge * slant) / 2


def _digit_distance(a, b):
    x, y = str(a), str(b)
    width = max(len(x), len(y))
    return sum(abs(int(p) - int(q)) for p, q in zip(x.zfill(width), y.zfill(width), strict=True))


def _special(oracle: str, out, exp, atol: float, inp: tuple) -> bool:
    """EvalPlus's special oracles (evalplus/eval/_special_oracle.py): whether ``out`` is an exact match."""
    if oracle == "always":  # Mbpp/164
        return True
    if oracle == "sum_div":  # Mbpp/295
        return out == exp or out == 0
    if oracle == "surface_area":  # Mbpp/581
        return out == exp or abs(out - _surface_area(*inp)) <= atol
    if oracle == "digit_distance":  # Mbpp/558
        return out == exp or out == _digit_distance(*inp)
    if oracle == "set_eq":
        return set(out) == set(exp)
    if oracle == "not_none":  # the expected output is whether the reference returned something
        return out == exp if isinstance(out, bool) else exp == (out is not None)
    return out == exp


def matches(out, exp, atol: float, oracle: str | None = None, inp: tuple = ()) -> bool:
    """EvalPlus's verdict for one output."""
    if oracle == "find_zero":  # HumanEval/32: any root of the polynomial is right
        return isinstance(out, int | float) and abs(_poly(inp[0], out)) <= atol
    try:
        exact = _special(oracle, out, exp, atol, inp) if oracle else out == exp
    except Exception:  # an output the oracle cannot handle is wrong
        return False
    if atol == 0 and is_floats(exp):
        atol = FLOAT_ATOL
    if not exact and atol != 0:
        if type(out) is not type(exp):
            return False
        if isinstance(exp, list | tuple) and len(out) != len(exp):
            return False
        return _close(out, exp, atol)
    return exact


def _timed_call(child, entry: str, inp: tuple, limit: float):
    """Call the entry point with the job alarm lowered to ``limit`` seconds for the call."""
    left, _ = signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.perf_counter()
    if 0 < left < limit:
        signal.setitimer(signal.ITIMER_REAL, left)
    try:
        return child.call(entry, inp, {})
    finally:
        rest = left - (time.perf_counter() - start)
        signal.setitimer(signal.ITIMER_REAL, max(rest, 1e-3) if left > 0 else 0)


def run_tests(job: dict, child, out: dict) -> None:
    ns: dict = {}
    exec(compile(job["test_code"], "<tests>", "exec"), ns)
    spec = ns["SPEC"]
    inputs, expected, limits = spec["inputs"], spec["expected"], spec["time_limits"]
    units: list[dict | None] = [None] * len(inputs)
    out["tests"] = units
    out["sources"] = [f"{job['entry_point']}(*inputs[{i}])" for i in range(len(inputs))]
    for i, inp in enumerate(inputs):
        try:
            got = _timed_call(child, job["entry_point"], tuple(inp), limits[i])
        except Exception as exc:  # the submission raised: that input fails, as in EvalPlus
            units[i] = {"passed": False, "error_type": type(exc).__name__, "message": str(exc)[:300]}
            break
        if not matches(got, expected[i], spec["atol"], spec.get("oracle"), tuple(inp)):
            units[i] = {
                "passed": False,
                "error_type": "AssertionError",
                "message": f"input {i}: wrong output",
            }
            break
        units[i] = {"passed": True}
    out["completed"] = True
