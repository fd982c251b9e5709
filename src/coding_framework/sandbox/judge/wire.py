"""Value encoding between the trusted judge and the untrusted process (stdlib only: runs in the sandbox).

The judge never receives a Python object from the submission, only JSON that it decodes into exact
builtin types. A submission therefore cannot hand the tests an object with a forged ``__eq__``, a
subclass of a builtin, or anything with code attached. Objects that have no plain-value form (instances
of the submission's own classes) stay in the untrusted process and travel as opaque handles, which
compare by identity only.
"""

from __future__ import annotations

import base64
import itertools
import json
import struct
import types

MAX_DEPTH = 200
MAX_ITER_ITEMS = 100_000
_ITERATORS = (types.GeneratorType, map, filter, zip, reversed, enumerate)
_LEN = struct.Struct(">I")


class WireError(Exception):
    """A message could not be encoded or decoded."""


class RemoteHandle:
    """An object that lives in the untrusted process.

    Attribute access, calls, truth value, length, iteration and ``str`` are forwarded to the untrusted
    process and come back as plain values (or further handles): each is equivalent to the submission
    having returned that plain value in the first place. Equality is never forwarded: two handles are
    equal only when they name the same remote object, so no submission code decides a comparison.
    """

    __slots__ = ("_ops", "hid", "type_name")

    def __init__(self, hid: int, type_name: str, ops=None) -> None:
        object.__setattr__(self, "hid", hid)
        object.__setattr__(self, "type_name", type_name)
        object.__setattr__(self, "_ops", ops)

    def _op(self, kind: str, **fields):
        if self._ops is None:
            raise TypeError(f"a {self.type_name} returned by the submission cannot be used here")
        return self._ops.handle_op(self.hid, kind, **fields)

    def __repr__(self) -> str:
        return f"<remote {self.type_name} #{self.hid}>"

    def __eq__(self, other):
        if type(other) is RemoteHandle:
            return other._ops is self._ops and other.hid == self.hid
        return NotImplemented

    def __hash__(self) -> int:
        return hash((id(self._ops), self.hid))

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._op("getattr", name=name)

    def __setattr__(self, name: str, value) -> None:
        self._op("setattr", name=name, value=value)

    def __call__(self, *args, **kwargs):
        return self._op("call", args=list(args), kwargs=kwargs)

    def __bool__(self) -> bool:
        return self._op("bool") is True

    def __len__(self) -> int:
        return self._op("len")

    def __iter__(self):
        return iter(self._op("iter"))

    def __str__(self) -> str:
        return self._op("str")


_BUILTIN_TYPES = {
    t.__name__: t
    for t in (
        int,
        float,
        str,
        bool,
        list,
        tuple,
        dict,
        set,
        frozenset,
        bytes,
        bytearray,
        complex,
        type(None),
        object,
        range,
    )
}


def encode(value, handles=None, depth=0):
    """Turn a value into JSON-able data. ``handles`` (a list) lets unknown objects travel by reference."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    t = type(value)
    if value is None or t is bool or t is int or t is str:
        return value
    if t is float:
        return {"F": repr(value)} if value != value or value in (float("inf"), float("-inf")) else value
    if t is RemoteHandle:
        return {"H": value.hid}
    if t is type and _BUILTIN_TYPES.get(value.__name__) is value:
        return {"TY": value.__name__}
    if isinstance(value, (bool, int)):
        return int.__index__(value) if not isinstance(value, bool) else bool(value)
    if isinstance(value, float):
        return encode(float.__float__(value), handles, depth)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list):
        return [encode(v, handles, depth + 1) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"T": [encode(v, handles, depth + 1) for v in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {
            "D": [
                [encode(k, handles, depth + 1), encode(v, handles, depth + 1)] for k, v in dict.items(value)
            ]
        }
    if isinstance(value, frozenset):
        return {"FS": [encode(v, handles, depth + 1) for v in frozenset.__iter__(value)]}
    if isinstance(value, set):
        return {"S": [encode(v, handles, depth + 1) for v in set.__iter__(value)]}
    if isinstance(value, (bytes, bytearray)):
        tag = "BA" if isinstance(value, bytearray) else "B"
        return {tag: base64.b64encode(bytes(value)).decode()}
    if isinstance(value, complex):
        c = complex.__complex__(value)
        return {"C": [encode(float(c.real)), encode(float(c.imag))]}
    if isinstance(value, _ITERATORS):
        return {"I": [encode(v, handles, depth + 1) for v in itertools.islice(value, MAX_ITER_ITEMS)]}
    if isinstance(value, range):
        return {"R": [value.start, value.stop, value.step]}
    if handles is None:
        raise WireError(f"cannot send a {t.__name__} across the sandbox boundary")
    handles.append(value)
    return {"H": len(handles) - 1, "N": t.__name__[:80]}


def decode(data, resolve=None, depth=0):
    """Inverse of :func:`encode`; produces only exact builtin types (and handles)."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    t = type(data)
    if data is None or t is bool or t is int or t is str or t is float:
        return data
    if t is list:
        return [decode(v, resolve, depth + 1) for v in data]
    if t is not dict or len(data) not in (1, 2):
        raise WireError(f"malformed value of type {t.__name__}")
    (tag, body), *_ = data.items()
    try:
        return _decode_tagged(tag, body, data, resolve, depth)
    except (TypeError, ValueError, OverflowError) as exc:
        raise WireError(f"malformed value with tag {tag!r}: {exc}") from None


def _decode_tagged(tag, body, data, resolve, depth):
    if tag == "F" and type(body) is str and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "T" and type(body) is list:
        return tuple(decode(v, resolve, depth + 1) for v in body)
    if tag == "D" and type(body) is list:
        return {decode(k, resolve, depth + 1): decode(v, resolve, depth + 1) for k, v in body}
    if tag == "S" and type(body) is list:
        return {decode(v, resolve, depth + 1) for v in body}
    if tag == "FS" and type(body) is list:
        return frozenset(decode(v, resolve, depth + 1) for v in body)
    if tag in ("B", "BA") and type(body) is str:
        raw = base64.b64decode(body.encode(), validate=True)
        return bytearray(raw) if tag == "BA" else raw
    if tag == "C" and type(body) is list and len(body) == 2:
        re_, im = decode(body[0], None, depth + 1), decode(body[1], None, depth + 1)
        if type(re_) is not float or type(im) is not float:
            raise WireError("malformed complex")
        return complex(re_, im)
    if tag == "R" and type(body) is list and len(body) == 3 and all(type(x) is int for x in body):
        return range(*body)
    if tag == "TY" and type(body) is str and body in _BUILTIN_TYPES:
        return _BUILTIN_TYPES[body]
    if tag == "I" and type(body) is list:
        return iter([decode(v, resolve, depth + 1) for v in body])
    if tag == "H" and type(body) is int:
        if resolve is None:
            raise WireError("unexpected handle")
        return resolve(body, data.get("N", "object"))
    raise WireError(f"malformed value with tag {tag!r}")


def exact_reader(read):
    """Wrap ``read(n)`` (which may return fewer bytes) into ``read_exact(n)``: ``None`` on EOF."""

    def read_exact(n: int):
        buf = bytearray()
        while len(buf) < n:
            chunk = read(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    return read_exact


def buffered_reader(recv, chunk: int = 1 << 16):
    """Like :func:`exact_reader` over a socket's ``recv``, but one system call usually reads a whole frame.

    Bytes read past the current frame stay buffered for the next call.
    """
    buf = bytearray()

    def read_exact(n: int):
        while len(buf) < n:
            data = recv(max(chunk, n - len(buf)))
            if not data:
                return None
            buf.extend(data)
        out = bytes(buf[:n])
        del buf[:n]
        return out

    return read_exact


_ENCODER = json.JSONEncoder(separators=(",", ":"))  # json.dumps would build one per call


def send_frame(write, obj) -> None:
    data = _ENCODER.encode(obj).encode()
    write(_LEN.pack(len(data)) + data)


def recv_frame(read_exact, max_bytes: int):
    """Read one length-prefixed JSON frame; ``None`` on a clean EOF."""
    head = read_exact(_LEN.size)
    if head is None:
        return None
    (size,) = _LEN.unpack(head)
    if size > max_bytes:
        raise WireError(f"message of {size} bytes exceeds the {max_bytes}-byte limit")
    body = read_exact(size)
    if body is None:
        raise WireError("truncated message")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"undecodable message: {exc}") from None
