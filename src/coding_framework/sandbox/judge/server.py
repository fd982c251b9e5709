"""The trusted judge: a fork server that runs the tests and decides verdicts (stdlib only).

It runs inside the sandbox (bwrap or a container) and talks to the host over stdin/stdout frames.
For every job it uses a child forked *before* the job arrived, so the child never holds the tests.
The tests run here, in the judge; each call to the submission is a round trip to the child, and
what comes back is decoded into plain values. A verdict of "passed" requires a recorded pass for
every test unit, counted before the run.
"""

from __future__ import annotations

import builtins
import os
import shutil
import signal
import socket
import sys
import time

from . import instrument, seccomp, untrusted, wire

TMP_ROOT = os.environ.get("CF_JUDGE_TMP", "/tmp")
_BUILTIN_EXC = {
    name: obj for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, Exception)
}


class JudgeTimeout(BaseException):
    """The job's wall-clock budget ran out."""


class SubmissionGone(BaseException):
    """The untrusted process died or broke the protocol; nothing after this point can pass."""


class SubmissionError(Exception):
    """An exception raised inside the submission whose type is not a builtin."""


def _on_alarm(signum, frame):
    raise JudgeTimeout()


class Child:
    """Judge-side handle on the pre-forked untrusted process."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ours.close()
            untrusted.serve(theirs)
        theirs.close()
        self.pid, self.sock = pid, ours
        self.call_time = 0.0
        self.max_bytes = 1 << 20

    def _read_exact(self, n: int):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def request(self, msg: dict) -> dict:
        try:
            wire.send_frame(self.sock.sendall, msg)
            reply = wire.recv_frame(self._read_exact, self.max_bytes)
        except (OSError, wire.WireError) as exc:
            raise SubmissionGone(str(exc)) from None
        if not isinstance(reply, dict):
            raise SubmissionGone("the submission process exited")
        return reply

    def call(self, name: str, args: tuple, kwargs: dict):
        try:
            msg = {"op": "call", "name": name, "args": wire.encode(list(args)), "kwargs": wire.encode(kwargs)}
        except wire.WireError as exc:
            raise TypeError(str(exc)) from None
        start = time.perf_counter()
        reply = self.request(msg)
        self.call_time += time.perf_counter() - start
        if "error" in reply:
            etype, message, _tb = (reply["error"] + ["", "", ""])[:3]
            exc_type = _BUILTIN_EXC.get(etype)
            if exc_type is MemoryError:
                raise SubmissionGone("MemoryError")
            raise (exc_type or SubmissionError)(f"{message}" if exc_type else f"{etype}: {message}")
        try:
            return wire.decode(reply.get("value"), lambda hid, n: wire.RemoteHandle(hid, str(n)))
        except (wire.WireError, RecursionError) as exc:
            raise TypeError(f"unusable return value: {exc}") from None


class RemoteFunction:
    """Stands in, on the trusted side, for a function defined by the submission."""

    def __init__(self, child: Child, name: str) -> None:
        self._child, self.__name__ = child, name

    def __call__(self, *args, **kwargs):
        return self._child.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<submission function {self.__name__}>"


def _exc_info(exc: BaseException) -> tuple[str, str]:
    return type(exc).__name__, str(exc)[:500]


_compiled: dict[tuple[str, str, str], tuple] = {}


def _compile_tests(job: dict) -> tuple:
    """Instrumented tests, compiled prelude and free names, cached: many samples share one problem."""
    key = (job["test_code"], job["test_format"], job.get("prelude") or "")
    hit = _compiled.get(key)
    if hit is None:
        code, sources = instrument.instrument(job["test_code"], job["test_format"])
        prelude = compile(key[2], "<prelude>", "exec") if key[2] else None
        hit = (code, sources, prelude, instrument.free_names(job["test_code"]))
        if len(_compiled) >= 256:
            _compiled.clear()
        _compiled[key] = hit
    return hit


def _run_tests(job: dict, child: Child, out: dict) -> None:
    code, sources, prelude, free = _compile_tests(job)
    units: list[dict | None] = [None] * len(sources)
    out["tests"] = units
    out["sources"] = sources

    def record_pass(i):
        units[i] = {"passed": True}

    def record_fail(i, exc):
        etype, msg = _exc_info(exc)
        units[i] = {"passed": False, "error_type": etype, "message": msg or sources[i][:300]}

    entry = RemoteFunction(child, job["entry_point"])
    ns: dict = {"__name__": "__tests__", "__builtins__": builtins}
    if prelude is not None:
        exec(prelude, ns)
    ns.update({instrument.RECORD_PASS: record_pass, instrument.RECORD_FAIL: record_fail})
    ns[job["entry_point"]] = entry
    for name in free:
        if name not in ns and not hasattr(builtins, name):
            ns[name] = RemoteFunction(child, name)
    exec(code, ns)
    if job["test_format"] == "check_function":
        ns["check"](entry)
    out["completed"] = True


def _collect_output(workdir: str, limit: int) -> dict:
    res = {}
    for stream in ("stdout", "stderr"):
        path = os.path.join(workdir, f"{stream}.txt")
        try:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
        except OSError:
            data = b""
        res[stream] = data[:limit].decode("utf-8", "replace")
        res[f"{stream}_truncated"] = len(data) > limit
    return res


def _reap(child: Child) -> int | None:
    """Kill every process in the sandbox but us and init, then collect the child's exit status.

    ``kill(-1)`` is only safe inside a private PID namespace, which the backends promise by setting
    CF_JUDGE_PIDNS=1. Anywhere else the child's session is killed instead.
    """
    try:
        if os.environ.get("CF_JUDGE_PIDNS") == "1":
            os.kill(-1, signal.SIGKILL)
        else:
            os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        pass
    status = None
    while True:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child.pid:
            status = st
    return status


def run_job(job: dict, child: Child) -> dict:
    limits = job["limits"]
    workdir = os.path.join(TMP_ROOT, "run")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir, mode=0o700)
    child.max_bytes = limits["max_result_bytes"]
    out: dict = {"tests": [], "sources": [], "completed": False, "loaded": False}
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, limits["timeout_s"])
    try:
        reply = child.request({"op": "load", "program": job["program"], "workdir": workdir, "limits": limits})
        if "error" in reply:
            out["error"] = reply["error"][:2]
        else:
            out["loaded"], out["seccomp"] = True, reply.get("seccomp", False)
            _run_tests(job, child, out)
    except JudgeTimeout:
        out["timeout"] = True
    except SubmissionGone as exc:
        out["gone"] = str(exc)
    except Exception as exc:  # the trusted tests or prelude themselves are broken
        out["harness_error"] = list(_exc_info(exc))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    out["duration_s"] = time.perf_counter() - start
    out["call_time_s"] = child.call_time
    child.sock.close()
    status = _reap(child)
    if status is not None and os.WIFSIGNALED(status):
        out["signal"] = signal.Signals(os.WTERMSIG(status)).name
    out.update(_collect_output(workdir, limits["output_bytes"]))
    shutil.rmtree(workdir, ignore_errors=True)
    return out


def _clean_tmp() -> None:
    for name in os.listdir(TMP_ROOT):
        path = os.path.join(TMP_ROOT, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def main() -> None:
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    seccomp.set_undumpable()
    signal.signal(signal.SIGALRM, _on_alarm)

    def read_exact(n: int):
        buf = bytearray()
        while len(buf) < n:
            chunk = proto_in.read(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    wire.send_frame(proto_out.write, {"ready": True, "pid": os.getpid()})
    while True:
        child = Child()
        job = wire.recv_frame(read_exact, 1 << 28)
        if job is None:
            break
        result = run_job(job, child)
        _clean_tmp()
        result["id"] = job.get("id")
        wire.send_frame(proto_out.write, result)
    _reap(child)


if __name__ == "__main__":
    main()
