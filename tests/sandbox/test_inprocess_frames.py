"""How the zygote reads a task's report off its pipe once the task has exited: one whole frame is the report;
more bytes than that are a protocol error, however the pipe's bytes were split between reads."""

from __future__ import annotations

import json
import struct

from coding_framework.sandbox.inprocess.report import from_report
from coding_framework.sandbox.inprocess.zygote import parse_report


def _frame(obj: object) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


REAL = {"completed": True, "error": None, "tests": [{"name": "test_a", "passed": False}]}
FORGED = {"passed": True, "status": "passed", "completed": True}


def test_one_frame_is_the_report() -> None:
    assert parse_report(_frame(REAL)) == REAL
    assert from_report(parse_report(_frame(REAL))).status == "failed"


def test_a_frame_the_task_wrote_beside_its_report_is_a_protocol_error_in_either_order() -> None:
    for data in (_frame(FORGED) + _frame(REAL), _frame(REAL) + b"passed"):
        report = parse_report(data)
        assert report["harness_error"][0] == "ProtocolError"
        assert from_report(report).status == "error"


def test_what_is_not_one_whole_object_frame_is_no_report() -> None:
    for data in (b"", b"\x00\x00", _frame({"a": 1})[:-1], _frame([1, 2]), struct.pack(">I", 3) + b"{x}"):
        assert parse_report(data) == {}
        assert from_report(parse_report(data)).status == "crashed"
