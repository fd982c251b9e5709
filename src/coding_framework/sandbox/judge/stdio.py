"""Stdin/stdout tests, judged as CodeContests' checker does (stdlib only: runs inside the sandbox).

The job's ``test_code`` is JSON: ``{"tests": [[stdin, expected_stdout], ...], "time_limit_s": T,
"time_factor": {"python": F, "cpp": G}, "memory_bytes": M, "float_tolerance": E}``; a test's CPU
limit is the problem's own limit T times the language's factor. The tests and the comparison stay
here, in the trusted judge. Each test runs the submission in a fresh process started with
``posix_spawn`` (fork+exec, so it inherits nothing of this process's memory) that only gets its own
stdin: a launcher sets the rlimits and the seccomp filter (execve left open for C++ only), then runs
the Python source or execs the C++ binary. Verdicts stop at the first failing test, since a sample
passes only when every test does, and at the job's wall-clock budget.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import sys
import time

from . import seccomp

MAX_FD = 1024
# A Python submission's own CPU budget is T; the wall clock allows for a loaded machine on top.
WALL_FACTOR, WALL_SLACK_S = 2.0, 1.0
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# Runs in the fresh process: argv = [parent_of_judge, judge_name, mode, cpu_s, memory_bytes, fsize_bytes].
_LAUNCHER = """
import importlib, os, resource, sys
root, pkg, mode, cpu, mem, fsize = sys.argv[1:7]
os.closerange(3, 1024)
R = resource
for res, lim in ((R.RLIMIT_AS, int(mem)), (R.RLIMIT_CPU, int(cpu)), (R.RLIMIT_FSIZE, int(fsize)),
                 (R.RLIMIT_CORE, 0), (R.RLIMIT_NOFILE, 64)):
    resource.setrlimit(res, (lim, lim))
sys.path.insert(0, root)
seccomp = importlib.import_module(pkg + ".seccomp")
del sys.path[0]
if mode == "cpp":
    seccomp.install(allow_exec=True)
    os.execv("./prog", ["./prog"])
seccomp.install()
with open("prog.py", encoding="utf-8") as fh:
    source = fh.read()
sys.argv = ["prog.py"]
del importlib, os, resource, R, res, lim, root, pkg, mode, cpu, mem, fsize, seccomp, fh
exec(compile(source, "prog.py", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
"""


def tokens_match(output: str, expected: str, tolerance: float) -> bool:
    """CodeContests' comparison: whitespace-separated tokens, equal as text or as numbers within tolerance.

    Two tokens that both parse as finite floats match when ``|a - b| <= tolerance * max(1, |b|)``
    (absolute for small values, relative for large ones); a tolerance of 0 requires equal text.
    """
    got, want = output.split(), expected.split()
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        if a == b:
            continue
        if tolerance <= 0:
            return False
        try:
            x, y = float(a), float(b)
        except ValueError:
            return False
        if not (math.isfinite(x) and math.isfinite(y)) or abs(x - y) > tolerance * max(1.0, abs(y)):
            return False
    return True


def _spawn(workdir: str, mode: str, stdin_path: str, cpu_s: int, memory: int, fsize: int) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, stdin_path, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.path.join(workdir, "out.txt"), flags, 0o600),
        (os.POSIX_SPAWN_OPEN, 2, os.path.join(workdir, "err.txt"), flags, 0o600),
    ]
    root, pkg = os.path.split(_PACKAGE_DIR)
    argv = [sys.executable, "-I", "-S", "-c", _LAUNCHER, root, pkg, mode, str(cpu_s), str(memory), str(fsize)]
    old = os.getcwd()
    os.chdir(workdir)
    try:
        return os.posix_spawn(sys.executable, argv, {}, file_actions=actions, setsid=True)
    finally:
        os.chdir(old)


def _wait(pid: int, wall_s: float) -> tuple[int, float, bool]:
    """Wait for ``pid`` at most ``wall_s``; kill its session after. Returns (status, cpu seconds, killed)."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], wall_s)
    finally:
        os.close(fd)
    if not ready:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime, not ready


def _read(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _run_one(workdir: str, mode: str, spec: dict, limits: dict, test: list) -> tuple[dict, float]:
    stdin_path = os.path.join(workdir, "in.txt")
    with open(stdin_path, "w", encoding="utf-8") as fh:
        fh.write(test[0])
    limit = float(spec["time_limit_s"]) * float(spec["time_factor"][mode])
    memory = max(int(spec.get("memory_bytes") or 0), limits["memory_mb"] << 20)
    fsize = limits["file_size_mb"] << 20
    pid = _spawn(workdir, mode, stdin_path, math.ceil(limit) + 1, memory, fsize)
    status, cpu, killed = _wait(pid, limit * WALL_FACTOR + WALL_SLACK_S)
    err = _read(os.path.join(workdir, "err.txt"), 2000)
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if killed or cpu > limit or sig == signal.SIGXCPU:
        return {
            "passed": False,
            "error_type": "TimeLimitExceeded",
            "message": f"over the {limit:g}s limit",
        }, cpu
    if sig is not None or os.WEXITSTATUS(status) != 0:
        what = f"signal {signal.Signals(sig).name}" if sig else f"exit code {os.WEXITSTATUS(status)}"
        kind = "MemoryError" if "MemoryError" in err or "bad_alloc" in err else "RuntimeError"
        return {"passed": False, "error_type": kind, "message": f"{what}: {err[-300:]}".strip()}, cpu
    output = _read(os.path.join(workdir, "out.txt"), fsize)
    if not tokens_match(output, test[1], float(spec.get("float_tolerance", 0.0))):
        return {"passed": False, "error_type": "WrongAnswer", "message": f"output {output[:120]!r}"}, cpu
    return {"passed": True}, cpu


def _prepare(job: dict, workdir: str) -> str:
    """Write the program (source or binary) into the workdir; return the launcher mode."""
    if job.get("language", "python") == "cpp":
        path = os.path.join(workdir, "prog")
        with open(path, "wb") as fh:
            fh.write(bytes.fromhex(job["binary"]))
        os.chmod(path, 0o700)
        return "cpp"
    with open(os.path.join(workdir, "prog.py"), "w", encoding="utf-8") as fh:
        fh.write(job["program"])
    return "python"


def run_job(job: dict, child, zygote) -> dict:
    """Judge one stdin/stdout job; ``child`` (unused: tests need fresh processes) is retired first."""
    child.sock.close()
    zygote.finish(child)
    spec = json.loads(job["test_code"])
    workdir = os.path.join(os.environ.get("CF_JUDGE_TMP", "/tmp"), "run")
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    tests = spec["tests"]
    units: list[dict | None] = [None] * len(tests)
    out: dict = {"tests": units, "sources": [f"stdin test {i}" for i in range(len(tests))], "loaded": True}
    start, cpu_total = time.perf_counter(), 0.0
    mode = _prepare(job, workdir)
    for i, test in enumerate(tests):
        if time.perf_counter() - start > job["limits"]["timeout_s"]:  # the job's own wall-clock budget
            out["timeout"] = True
            break
        unit, cpu = _run_one(workdir, mode, spec, job["limits"], test)
        units[i], cpu_total = unit, cpu_total + cpu
        if not unit["passed"]:
            if unit["error_type"] == "TimeLimitExceeded":
                out["timeout"] = True
            elif unit["error_type"] != "WrongAnswer":
                out["error"] = [unit["error_type"], unit["message"]]
            break
    else:
        out["completed"] = True
    out.update(duration_s=time.perf_counter() - start, call_time_s=0.0, cpu_time_s=cpu_total)
    out.update(stdout=_read(os.path.join(workdir, "out.txt"), job["limits"]["output_bytes"]))
    out.update(stderr=_read(os.path.join(workdir, "err.txt"), job["limits"]["output_bytes"]))
    out["seccomp"] = seccomp.SUPPORTED
    return out
