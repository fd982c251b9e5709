"""The untrusted side: a forked child that loads the submission and answers calls (stdlib only).

Nothing here decides a verdict. The child only executes the submission and returns plain-value
encodings of what it computed; whatever it does to its own interpreter stays in its own process.
"""

from __future__ import annotations

import io
import os
import resource
import sys
import traceback
from typing import cast

from . import seccomp, wire

MAX_FD = 1024


def _confine(sock_fd: int, workdir: str, limits: dict) -> None:
    os.setsid()
    os.chdir(workdir)
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open("stdout.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.closerange(3, sock_fd)
    os.closerange(sock_fd + 1, MAX_FD)
    # The interpreter's own stream objects now write to the files above. Reusing them (the zygote never
    # read or wrote them, so their buffers are empty) costs far fewer copy-on-write page faults than
    # building new ones. Line buffering keeps output written before a kill.
    stdin, stdout, stderr = cast("list[io.TextIOWrapper]", [sys.stdin, sys.stdout, sys.stderr])
    stdin.reconfigure(errors="strict")
    stdout.reconfigure(errors="strict", line_buffering=True)
    stderr.reconfigure(errors="strict", line_buffering=True)
    mem = limits["memory_mb"] << 20
    cpu = int(limits["cpu_s"]) + 1
    fsize = limits["file_size_mb"] << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def _error(exc: BaseException) -> dict:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
    return {"error": [type(exc).__name__, str(exc)[:2000], "".join(tb)[-2000:]]}


_HANDLE_OPS = {
    "getattr": lambda obj, m, dec: getattr(obj, m["name"]),
    "setattr": lambda obj, m, dec: setattr(obj, m["name"], dec(m["value"])),
    "call": lambda obj, m, dec: obj(*dec(m["args"]), **dec(m["kwargs"])),
    "bool": lambda obj, m, dec: bool(obj),
    "len": lambda obj, m, dec: len(obj),
    "iter": lambda obj, m, dec: list(obj),
    "str": lambda obj, m, dec: str(obj),
}


def _call(ns: dict, handles: list, msg: dict) -> dict:
    def resolve(hid: int, _name: str):
        if not 0 <= hid < len(handles):
            raise wire.WireError(f"unknown handle {hid}")
        return handles[hid]

    def dec(data):
        return wire.decode(data, resolve)

    if msg.get("op") == "handle":
        value = _HANDLE_OPS[msg["kind"]](resolve(msg["hid"], ""), msg, dec)
    else:
        name = msg["name"]
        if name not in ns:
            return {"error": ["NameError", f"name {name!r} is not defined by the submission", ""]}
        value = ns[name](*dec(msg["args"]), **dec(msg["kwargs"]))
    return {"value": wire.encode(value, handles)}


def serve(sock) -> None:
    """Entry point of the forked child. Never returns."""
    read = wire.buffered_reader(sock.recv, 4096)
    try:
        load = wire.recv_frame(read, 1 << 28)
        if load is None:
            os._exit(0)
        _confine(sock.fileno(), load["workdir"], load["limits"])
        filtered = seccomp.install()
        ns: dict = {"__name__": "__submission__", "__builtins__": __builtins__}
        handles: list = []
        try:
            exec(compile(load["program"], "<submission>", "exec"), ns)
            reply: dict = {"loaded": True, "seccomp": filtered}
        except BaseException as exc:  # the submission may raise anything, SystemExit included
            reply = _error(exc)
        wire.send_frame(sock.sendall, reply)
        while True:
            msg = wire.recv_frame(read, 1 << 28)
            if msg is None:
                break
            try:
                reply = _call(ns, handles, msg)
            except BaseException as exc:
                reply = _error(exc)
            wire.send_frame(sock.sendall, reply)
    except BaseException:  # the judge hung up or the submission broke the channel: exit quietly
        pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # the submission may have closed or replaced its streams
            pass
        os._exit(0)
