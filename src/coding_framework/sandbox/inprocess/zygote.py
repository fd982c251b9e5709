"""The BigCodeBench task runner inside the in-process sandbox. Standard library only, plus the libraries of
the execution environment it preloads; it never imports coding_framework.

It is a fork server: it imports the libraries tasks use once, then forks a fresh child per task. The child
runs the solution and its ``TestCases`` in one process, the way BigCodeBench's own harness does
(``bigcodebench.eval.unsafe_execute``: the same module globals, resource limits, swallowed I/O and alarm),
and writes its report to a pipe. The zygote never runs task code. After each task it SIGKILLs every other
process in the sandbox's PID namespace (``kill(-1)``; it is their subreaper, so it also reaps them) and
empties ``/tmp``, so nothing a task starts or writes outlives it.

Frames on fds 0 (in) and 1 (out): a 4-byte big-endian length, then UTF-8 JSON.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import faulthandler
import importlib
import io
import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import types
import unittest

KEEP_IN_TMP = ("mpl",)  # MPLCONFIGDIR: the font cache built once per worker
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_MESSAGE_CHARS = 2000


def send(fd: int, obj: object) -> None:
    data = json.dumps(obj).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def recv(stream: io.RawIOBase) -> dict | None:
    head = _read_exact(stream, 4)
    if head is None:
        return None
    body = _read_exact(stream, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def _read_exact(stream: io.RawIOBase, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


class TimeoutException(Exception):
    """The task ran past its time limit (the official harness's name for it)."""


class _CappedOutput(io.StringIO):
    """stdout/stderr of the task: kept up to a cap, never readable (as the official WriteOnlyStringIO)."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap, self.truncated = cap, False

    def write(self, s: str) -> int:
        room = self.cap - self.tell()
        if len(s) > room:
            self.truncated = True
        if room > 0:
            super().write(s[:room])
        return len(s)

    def read(self, *args, **kwargs):
        raise OSError("stdin/stdout are not readable in the harness")

    readline = readlines = read

    def readable(self) -> bool:
        return False


class _Recorder(unittest.TestResult):
    """A TestResult that also remembers which tests ran, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[str] = []

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self.started.append(test.id().split(".")[-1])


def _limit(which: int, mb: float | None) -> None:
    if mb:
        value = int(mb * 1024 * 1024)
        resource.setrlimit(which, (value, value))


def _guard(task: dict) -> None:
    """What the official reliability_guard does that changes a verdict: limits, TZ, no exit/quit."""
    os.environ["TZ"] = "UTC"
    time.tzset()
    _limit(resource.RLIMIT_AS, task["memory_mb"])
    _limit(resource.RLIMIT_DATA, task["data_mb"])
    _limit(resource.RLIMIT_STACK, task["stack_mb"])
    _limit(resource.RLIMIT_FSIZE, task["file_size_mb"])
    if task.get("nproc"):  # only where the host found no pids cgroup to put the worker in
        resource.setrlimit(resource.RLIMIT_NPROC, (task["nproc"], task["nproc"]))
    faulthandler.disable()
    builtins.exit = None  # type: ignore[assignment]
    builtins.quit = None  # type: ignore[assignment]
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def _on_alarm(signum: int, frame: object) -> None:
    raise TimeoutException("Timed out!")


def _exception_text(trace: str) -> str:
    """The exception part of a traceback (``AssertionError: 6 != 9`` and any lines of its message)."""
    lines = trace.rstrip().splitlines()
    start = 0
    for i, line in enumerate(lines):
        if line.startswith("  File "):
            start = i + 1
    while start < len(lines) and lines[start].startswith(" "):
        start += 1
    return "\n".join(lines[start:]) or trace


def run_tests(task: dict, output: _CappedOutput) -> dict:
    """Exec solution + tests as module ``__test__`` and run ``TestCases``, as the official harness does."""
    module = types.ModuleType("__test__")
    module.__dict__.update(
        {
            "__builtins__": builtins,
            "__file__": "__test__.py",
            "__package__": None,
            "__doc__": None,
            "sys": sys,
            "os": os,
            "environ": os.environ,
        }
    )
    result = _Recorder()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            sys.stdin = output
            exec(compile(task["code"] + "\n" + task["test"], "__test__.py", "exec"), module.__dict__)
            sys.modules["__test__"] = module
            suite = unittest.TestLoader().loadTestsFromTestCase(module.TestCases)
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, task["timeout_s"])
            try:
                suite.run(result)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:  # the official harness fails the task on any exception
        return {"completed": False, "error": [type(exc).__name__, str(exc)[:_MESSAGE_CHARS]], "tests": []}
    failures = result.failures + result.errors  # a failing subtest counts against its test method
    failed = {getattr(t, "test_case", t).id().split(".")[-1]: trace for t, trace in failures}
    tests = [
        {
            "name": name,
            "passed": name not in failed,
            "error_type": _exception_text(failed[name]).split(":", 1)[0] if name in failed else None,
            "message": _exception_text(failed[name])[:_MESSAGE_CHARS] if name in failed else None,
        }
        for name in result.started
    ]
    return {"completed": True, "error": None, "tests": tests}


def child_main(task: dict, report_fd: int, workdir: str) -> None:
    output = _CappedOutput(task["output_bytes"])
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 2)
    try:
        os.chdir(workdir)
        _guard(task)
        report = run_tests(task, output)
    except BaseException as exc:  # a guard that cannot be set is the harness's error
        report = {"completed": False, "harness_error": [type(exc).__name__, str(exc)], "tests": []}
    report["stdout"], report["stdout_truncated"] = output.getvalue(), output.truncated
    try:
        send(report_fd, report)
    finally:
        os._exit(0)


def _read_report(fd: int, deadline: float) -> tuple[bytes, bool]:
    """One frame from the child, or what came before EOF or the deadline (then True: timed out).

    It stops at a whole frame, not at EOF: a process the task left behind may hold the pipe open.
    """
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return data, True
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return data, False
        data += chunk
    return data, False


def parse_report(data: bytes) -> dict:
    """The report in ``data``: what the task process's pipe held once it had exited.

    One whole frame holding an object is the report. More bytes than one frame mean the task wrote on the
    pipe itself (a forged frame, a thread's or a child's bytes): that is a protocol error, whichever frame
    came first, so the verdict never depends on how the pipe's bytes were split between reads. Anything else
    is no report ({}: the task counts as one that died before reporting).
    """
    if len(data) < 4:
        return {}
    size = struct.unpack(">I", data[:4])[0]
    if len(data) > 4 + size:
        extra = len(data) - 4 - size
        return {"harness_error": ["ProtocolError", f"{extra} bytes beyond one report on the report pipe"]}
    try:
        report = json.loads(data[4:])
    except ValueError:
        return {}
    return report if isinstance(report, dict) else {}


def _drain(fd: int) -> bytes:
    """What is left in the pipe now, without waiting (processes the task left may hold it open)."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    return data


def _wait(pid: int, deadline: float) -> int | None:
    """The child's wait status, or None if it is still running at the deadline."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def _end_everything_else() -> None:
    """SIGKILL every process of the namespace but this one (and bwrap's init), and reap them all."""
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _mounts_under_tmp() -> set[str]:
    """Mount points inside /tmp (the venv, when the host keeps it in its own /tmp)."""
    with open("/proc/self/mountinfo") as mounts:
        points = {line.split()[4] for line in mounts}
    return {p for p in points if p.startswith("/tmp/")}


def _empty(folder: str, keep: set[str]) -> None:
    """Remove everything in ``folder`` but the paths in ``keep`` (the folders that lead to one are emptied
    in turn)."""
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if path in keep:
            continue
        if any(k.startswith(path + "/") for k in keep):
            os.chmod(path, 0o700)  # bwrap made it for the task's uid; a task may have locked it
            _empty(path, keep)
        elif os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def run_task(task: dict, protocol_fds: tuple[int, int], keep_in_tmp: set[str]) -> dict:
    """Run one task in a fresh child; afterwards end what it started and empty /tmp but ``keep_in_tmp``."""
    workdir = tempfile.mkdtemp(dir="/tmp")
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        for fd in protocol_fds:
            os.close(fd)
        child_main(task, write_fd, workdir)
    os.close(write_fd)
    deadline = started + task["timeout_s"] + 1.0  # the official harness joins its process after timeout + 1
    data, timed_out = _read_report(read_fd, deadline)
    status = None if timed_out else _wait(pid, deadline)
    timed_out = timed_out or status is None
    if not timed_out:
        data += _drain(read_fd)  # the task has exited: all it wrote is in the pipe
    os.close(read_fd)
    duration = time.monotonic() - started
    _end_everything_else()
    _empty("/tmp", keep_in_tmp)
    report = parse_report(data)
    if status is not None and os.WIFSIGNALED(status):
        report["signal"] = signal.Signals(os.WTERMSIG(status)).name
    elif status is not None and not report:
        report["exit_code"] = os.waitstatus_to_exitcode(status)
    report.update(timeout=timed_out, duration_s=duration)
    return report


def _harden_self() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # tasks (same uid) cannot ptrace us or open /proc/<us>/fd
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a task come back to us to be reaped


def _seed_font_cache() -> None:
    """Copy matplotlib's font cache, built by the setup script, so a worker does not rebuild it (seconds)."""
    os.makedirs("/tmp/mpl", exist_ok=True)
    built = os.path.join(sys.prefix, "share", "mpl-cache")
    if os.path.isdir(built):
        for name in os.listdir(built):
            if name.startswith("fontlist"):
                shutil.copy(os.path.join(built, name), "/tmp/mpl")


def _preload(modules: list[str]) -> dict[str, str]:
    failed = {}
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a library that cannot load is reported, not fatal
            failed[name] = f"{type(exc).__name__}: {exc}"
    return failed


def main() -> None:
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # only frames reach the host pipe; stray prints from libraries go nowhere
        os.dup2(devnull, fd)
    _seed_font_cache()
    failed = _preload(sys.argv[1:])
    _harden_self()
    stream = os.fdopen(proto_in, "rb", buffering=0)
    send(proto_out, {"ready": True, "preload_failed": failed, "python": sys.version.split()[0]})
    keep_in_tmp = {"/tmp/" + name for name in KEEP_IN_TMP} | _mounts_under_tmp()
    while (task := recv(stream)) is not None:
        send(proto_out, run_task(task, (proto_in, proto_out), keep_in_tmp))


if __name__ == "__main__":
    main()
