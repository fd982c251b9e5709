from __future__ import annotations

import math

import pytest

from coding_framework.sandbox.judge import wire


class FakeOps:
    def __init__(self):
        self.calls = []

    def handle_op(self, hid, kind, **fields):
        self.calls.append((hid, kind, fields))
        return {"bool": True, "len": 3, "iter": [1, 2], "str": "obj", "getattr": 7}.get(kind)


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -5,
        10**30,
        1.5,
        -0.0,
        "héllo",
        [1, [2, [3]]],
        (1, (2,)),
        {"a": 1, (1, 2): [3]},
        {1, 2},
        frozenset({"x"}),
        b"\x00\xff",
        bytearray(b"ab"),
        3 + 4j,
        range(1, 10, 2),
        (),
        [],
        {},
        int,
        str,
    ],
)
def test_round_trip_gives_exact_builtin_values(value):
    back = wire.decode(wire.encode(value))
    assert back == value and type(back) is type(value)


def test_non_finite_floats_round_trip():
    back = wire.decode(wire.encode([math.nan, math.inf, -math.inf]))
    assert math.isnan(back[0]) and back[1:] == [math.inf, -math.inf]


def test_builtin_subclasses_are_flattened_to_exact_types():
    class IntLike(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    class L(list):
        def __eq__(self, other):
            return True

    back = wire.decode(wire.encode([IntLike(3), L([1])]))
    assert back == [3, [1]] and type(back[0]) is int and type(back[1]) is list
    assert back[0] != 4


def test_unknown_objects_need_handles():
    class Custom:
        pass

    with pytest.raises(wire.WireError):
        wire.encode(Custom())
    handles: list = []
    encoded = wire.encode(Custom(), handles)
    assert encoded == {"H": 0, "N": "Custom"} and len(handles) == 1


def test_generators_are_materialized():
    back = wire.decode(wire.encode(x * 2 for x in range(3)))
    assert list(back) == [0, 2, 4]


@pytest.mark.parametrize(
    "data",
    [
        {"X": 1},
        {"T": 1},
        {"D": [[{"S": []}, 1]]},
        {"F": "1e5"},
        {"TY": "os"},
        {"B": "!!"},
        object(),
        {"H": 0},
    ],
)
def test_malformed_or_unexpected_data_is_rejected(data):
    with pytest.raises(wire.WireError):
        wire.decode(data)


def test_handles_compare_by_identity_only_and_forward_other_ops():
    ops = FakeOps()
    a, b, c = wire.RemoteHandle(1, "T", ops), wire.RemoteHandle(1, "T", ops), wire.RemoteHandle(2, "T", ops)
    assert a == b and a != c and a != 1 and a != 0
    assert ops.calls == []
    assert bool(a) is True and len(a) == 3 and list(a) == [1, 2] and str(a) == "obj" and a.value == 7
    a.left = 5
    assert ops.calls[-1] == (1, "setattr", {"name": "left", "value": 5})


def test_deep_nesting_is_refused():
    value: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        value = [value]
    with pytest.raises(wire.WireError):
        wire.encode(value)
