"""A seccomp filter for the untrusted process: no new processes, no tracing, no signals to others.

Threads stay allowed (``clone`` with ``CLONE_THREAD``). ``clone3`` answers ENOSYS so libc falls back
to ``clone``, whose flags the filter can inspect. Only x86-64 is covered; elsewhere ``install``
reports that no filter was installed and the remaining layers (namespaces, rlimits, cleanup) apply.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

_AUDIT_ARCH_X86_64 = 0xC000003E
_CLONE_THREAD = 0x00010000
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000

# x86-64 syscall numbers
_DENY_EPERM = {
    57: "fork",
    58: "vfork",
    59: "execve",
    322: "execveat",
    101: "ptrace",
    310: "process_vm_readv",
    311: "process_vm_writev",
    62: "kill",
    200: "tkill",
    234: "tgkill",
    424: "pidfd_send_signal",
    272: "unshare",
    308: "setns",
    165: "mount",
    298: "perf_event_open",
    246: "kexec_load",
}
_CLONE, _CLONE3 = 56, 435
_EXEC = {59, 322}

_LD_W_ABS, _JEQ_K, _JSET_K, _RET_K = 0x20, 0x15, 0x45, 0x06


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def _program(allow_exec: bool = False) -> bytes:
    deny = sorted(nr for nr in _DENY_EPERM if not (allow_exec and nr in _EXEC))
    prog = [
        _ins(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _ins(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        _ins(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _ins(_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    # Jump offsets count from the next instruction. The EPERM return is the last of the 8 after the list.
    eperm_at = len(prog) + len(deny) + 7
    for nr in deny:
        prog.append(_ins(_JEQ_K, eperm_at - (len(prog) + 1), 0, nr))
    prog += [
        _ins(_JEQ_K, 0, 3, _CLONE),  # clone -> inspect flags, else skip to clone3 check
        _ins(_LD_W_ABS, 0, 0, 16),  # args[0], low 32 bits
        _ins(_JSET_K, 3, 4, _CLONE_THREAD),  # thread -> allow, process -> EPERM
        _ins(_RET_K, 0, 0, _RET_ALLOW),  # (unreachable filler keeps offsets simple)
        _ins(_JEQ_K, 0, 1, _CLONE3),
        _ins(_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),
        _ins(_RET_K, 0, 0, _RET_ALLOW),
        _ins(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM),
    ]
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# Built once when the zygote imports this module, so installing in each child costs two prctl calls
# with prepared arguments.
_SUPPORTED = SUPPORTED = platform.machine() in ("x86_64", "AMD64")
_LIBC = ctypes.CDLL(None, use_errno=True)
_PROG = _program()
_BUF = ctypes.create_string_buffer(_PROG, len(_PROG))
_FPROG = _SockFprog(len(_PROG) // 8, ctypes.cast(_BUF, ctypes.c_void_p))
_FPROG_ADDR = ctypes.addressof(_FPROG)
_PRCTL = _LIBC.prctl
_PRCTL.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
_PRCTL.restype = ctypes.c_int


def install(allow_exec: bool = False) -> bool:
    """Install the filter on the calling process (irreversible). Returns False where unsupported.

    ``allow_exec`` keeps execve open (only) so a launcher can exec a compiled stdin/stdout program
    under the filter; everything else stays denied."""
    if not _SUPPORTED:
        return False
    if allow_exec:
        prog = _program(allow_exec=True)
        buf = ctypes.create_string_buffer(prog, len(prog))
        fprog = _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))  # alive until installed
        fprog_addr = ctypes.addressof(fprog)
    else:
        fprog_addr = _FPROG_ADDR
    if _PRCTL(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if _PRCTL(22, 2, fprog_addr, 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
    return True


def set_undumpable() -> None:
    """Stop same-uid processes (the untrusted one) from ptracing or reading this process's memory."""
    _PRCTL(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
