"""A unit of work for the sandbox: a program and the trusted tests to run against it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from coding_framework.config.sandbox import ResourceLimits


@dataclass(frozen=True)
class Job:
    program: str
    test_code: str
    entry_point: str
    test_format: Literal["check_function", "asserts", "unittest", "stdio", "calls"] = "asserts"
    prelude: str = ""
    limits: ResourceLimits | None = None
    language: Literal["python", "cpp"] = "python"  # stdio jobs only; cpp runs ``binary``
    binary: bytes = b""  # a compiled stdio program (see sandbox.cpp), for language "cpp"

    def to_wire(self, default_limits: ResourceLimits) -> dict[str, Any]:
        limits = self.limits or default_limits
        return {
            "program": self.program,
            "test_code": self.test_code,
            "entry_point": self.entry_point,
            "test_format": self.test_format,
            "prelude": self.prelude,
            "language": self.language,
            "binary": self.binary.hex(),
            "limits": {**limits.model_dump(), "cpu_s": limits.effective_cpu_s},
        }
