"""The trusted judge: runs the tests and decides verdicts (stdlib only).

It runs inside the sandbox (bwrap or a container) and talks to the host over stdin/stdout frames.
Untrusted processes are forked by a *zygote* that the judge starts before it has seen any job, and
that never receives tests or programs: a child's memory, even read byte by byte, holds no test
data. The tests run here, in the judge; each call to the submission is a round trip to the child,
and what comes back is decoded into plain values. A verdict of "passed" requires a recorded pass
for every test unit, counted before the run.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import gc
import os
import shutil
import signal
import socket
import struct
import time

from . import calls, instrument, seccomp, stdio, untrusted, wire

TMP_ROOT = os.environ.get("CF_JUDGE_TMP", "/tmp")
WORKDIR = os.path.join(TMP_ROOT, "run")
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
    """Judge-side handle on an untrusted process that the zygote forked."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid, self.sock = pid, sock
        self.call_time = 0.0
        self.max_bytes = 1 << 20
        self._read_exact = wire.buffered_reader(sock.recv)

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
        return self._roundtrip({"op": "call", "name": name, "args": list(args), "kwargs": kwargs})

    def handle_op(self, hid: int, kind: str, **fields):
        """Forwarded operations on a RemoteHandle (see wire.RemoteHandle)."""
        if kind not in ("getattr", "setattr", "call", "bool", "len", "iter", "str"):
            raise TypeError(f"unsupported operation {kind!r} on a submission object")
        return self._roundtrip({"op": "handle", "kind": kind, "hid": hid, **fields})

    def _roundtrip(self, msg: dict):
        try:
            msg = {k: wire.encode(v) if k in ("args", "kwargs", "value") else v for k, v in msg.items()}
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
            return wire.decode(reply.get("value"), lambda hid, n: wire.RemoteHandle(hid, str(n), self))
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


@functools.lru_cache(maxsize=512)
def _compile_tests(test_code: str, test_format: str, prelude: str) -> tuple:
    """Instrument and compile a problem's trusted tests, once per distinct test text.

    Many samples share a problem, and the result depends only on the trusted text. The cache lives in
    the judge only: the zygote forked before the first job, so no untrusted process ever holds it.
    """
    code, sources, free = instrument.instrument(test_code, test_format)
    prelude_code = compile(prelude, "<prelude>", "exec") if prelude else None
    return code, tuple(sources), prelude_code, frozenset(free)


def _run_tests(job: dict, child: Child, out: dict) -> None:
    compiled = _compile_tests(job["test_code"], job["test_format"], job.get("prelude") or "")
    code, sources, prelude, free = compiled
    units: list[dict | None] = [None] * len(sources)
    out["tests"] = units
    out["sources"] = list(sources)

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
    try:
        exec(code, ns)
        if job["test_format"] == "check_function":
            ns["check"](entry)
        out["completed"] = True
    finally:
        ns.clear()  # break function <-> globals cycles so nothing of the tests survives the job


def _collect_output(workdir: str, limit: int) -> dict:
    res: dict[str, str | bool] = {}
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


class Zygote:
    """A clean process, started before any job, that forks the untrusted children and reaps them.

    Reaping a child and forking the next one is one round trip: the zygote forks the next child as
    soon as the previous one is gone, while the judge is still reporting, so a job finds its child
    waiting.
    """

    _PID = struct.Struct(">i")
    _STATUS = struct.Struct(">id")

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ours.close()
            _zygote_main(theirs)
        theirs.close()
        self.pid, self.sock = pid, ours
        self._next: Child | None = None

    def spawn(self) -> Child:
        """The child forked after the last ``finish``, or a new one."""
        child, self._next = self._next, None
        if child is None:
            self.sock.sendall(b"S")
            child = self._receive_child()
        return child

    def _receive_child(self) -> Child:
        msg, fds, _flags, _addr = socket.recv_fds(self.sock, self._PID.size, 1)
        if len(msg) != self._PID.size or len(fds) != 1:
            raise RuntimeError("zygote failed to spawn a child")
        return Child(self._PID.unpack(msg)[0], socket.socket(fileno=fds[0]))

    def finish(self, child: Child) -> tuple[int, float]:
        """Kill the child's whole session if it still runs; return its wait status and CPU seconds.

        The CPU time comes from the kernel (wait4), so the submission cannot misreport it.
        """
        self.sock.sendall(b"K" + self._PID.pack(child.pid))
        data = self.sock.recv(self._STATUS.size, socket.MSG_WAITALL)
        if len(data) != self._STATUS.size:
            raise RuntimeError("zygote exited")
        try:
            self._next = self._receive_child()
        except (OSError, RuntimeError):  # this job's report still goes out; the next spawn() fails instead
            self._next = None
        return self._STATUS.unpack(data)


# Standard-library modules that HumanEval/MBPP-style submissions often import and that the judge has
# not loaded already, imported once in the zygote so that each child inherits them (typing alone costs
# a child ~8 ms). Every module here makes each fork a little dearer, so rarely used ones stay out. The
# zygote holds no test or job data.
PRELOAD = ("typing", "string", "heapq", "bisect", "copy")


def _fork_child(sock: socket.socket) -> None:
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        sock.close()
        ours.close()
        untrusted.serve(theirs)
    theirs.close()
    socket.send_fds(sock, [Zygote._PID.pack(pid)], [ours.fileno()])
    ours.close()


def _reap(pid: int) -> bytes:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done == 0:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            os.kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
    return Zygote._STATUS.pack(status, usage.ru_utime + usage.ru_stime)


def _zygote_main(sock: socket.socket) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)
    # Dispositions the children inherit: the defaults, as in a fresh process.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    gc.freeze()  # the preloaded modules are never collected; forked children need not scan them
    pid_fmt = Zygote._PID
    while True:
        op = sock.recv(1)
        if op == b"S":
            _fork_child(sock)
        elif op == b"K":
            (pid,) = pid_fmt.unpack(sock.recv(pid_fmt.size, socket.MSG_WAITALL))
            sock.sendall(_reap(pid))
            _fork_child(sock)
        else:
            os._exit(0)


def run_job(job: dict, child: Child, zygote: Zygote) -> dict:
    if job["test_format"] == "stdio":  # stdin/stdout tests need a fresh process per test
        return stdio.run_job(job, child, zygote)
    limits = job["limits"]
    workdir = WORKDIR
    os.makedirs(workdir, mode=0o700, exist_ok=True)
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
            (calls.run_tests if job["test_format"] == "calls" else _run_tests)(job, child, out)
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
    status, out["cpu_time_s"] = zygote.finish(child)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) != signal.SIGKILL:
        out["signal"] = signal.Signals(os.WTERMSIG(status)).name
    out.update(_collect_output(workdir, limits["output_bytes"]))
    return out


_RUN_FILES = frozenset({"stdout.txt", "stderr.txt"})


def _grant_access(top: str) -> None:
    """Give back write and search permission on every directory under ``top``, which a run may take away."""
    with contextlib.suppress(OSError):
        os.chmod(top, 0o700)
    for root, dirs, _files in os.walk(top):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)


def _clean_tmp(workdir: str) -> None:
    """Leave the private /tmp empty but for the run directory, which no later run inherits files from.

    A run that only wrote its two output files costs two unlinks; anything else clears the whole tmpfs.
    """
    with contextlib.suppress(OSError):  # a run dir we cannot read or stat: clear everything below
        with os.scandir(TMP_ROOT) as top:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in top]
        if entries == [(os.path.basename(workdir), True)] and os.stat(workdir).st_mode & 0o777 == 0o700:
            with os.scandir(workdir) as run:
                files = [(e.name, e.is_file(follow_symlinks=False)) for e in run]
            if all(name in _RUN_FILES and regular for name, regular in files):
                for name, _ in files:
                    os.unlink(os.path.join(workdir, name))
                return
    for name in os.listdir(TMP_ROOT):
        path = os.path.join(TMP_ROOT, name)
        if os.path.isdir(path) and not os.path.islink(path):
            _grant_access(path)
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):  # removed meanwhile
                os.unlink(path)


def main() -> None:
    zygote = Zygote()
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    seccomp.set_undumpable()
    signal.signal(signal.SIGALRM, _on_alarm)
    # Later collections only scan what jobs allocated. The children come from the zygote, which never
    # holds a job, so the judge's own garbage needs no collection after each job: the automatic
    # collector suffices.
    gc.freeze()

    read_exact = wire.exact_reader(proto_in.read)
    wire.send_frame(proto_out.write, {"ready": True, "pid": os.getpid()})
    while True:
        child = zygote.spawn()
        job = wire.recv_frame(read_exact, 1 << 28)
        if job is None:
            break
        result = run_job(job, child, zygote)
        _clean_tmp(WORKDIR)
        result["id"] = job.get("id")
        wire.send_frame(proto_out.write, result)


if __name__ == "__main__":
    main()
