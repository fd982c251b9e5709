"""C++ stdin/stdout submissions: compiled on the host, run in the sandbox; no compiler is a clear error."""

from __future__ import annotations

import dataclasses
import json

import pytest

from coding_framework.config.sandbox import ResourceLimits, SandboxConfig
from coding_framework.sandbox import Job, Sandbox, cpp
from coding_framework.sandbox.cpp import CompileError, compile_cpp

SPEC = {
    "tests": [["2 3\n", "5\n"], ["40 2\n", "42\n"]],
    "time_limit_s": 1.0,
    "time_factor": {"python": 2.0, "cpp": 1.0},
    "memory_bytes": 256 << 20,
    "float_tolerance": 0.0,
}
SUM = '#include <cstdio>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);}\n'
FORK = '#include <unistd.h>\n#include <cstdio>\nint main(){if(fork()<0){return 3;}puts("5");}\n'


def test_no_compiler_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpp.shutil, "which", lambda name: None)
    with pytest.raises(CompileError, match="no C\\+\\+ compiler"):
        compile_cpp(SUM)


@pytest.mark.skipif(cpp.compiler() is None, reason="no g++ on PATH")
def test_compile_error_carries_the_message() -> None:
    with pytest.raises(CompileError, match="error"):
        compile_cpp("int main( {")


@pytest.mark.slow
@pytest.mark.skipif(cpp.compiler() is None, reason="no g++ on PATH")
def test_binary_runs_in_the_sandbox_under_the_filter() -> None:
    base = Job(program=SUM, test_code=json.dumps(SPEC), entry_point="main", test_format="stdio")
    limits = ResourceLimits(timeout_s=20.0)
    with Sandbox(SandboxConfig(workers=1)) as sandbox:
        ok = sandbox.run(dataclasses.replace(base, language="cpp", binary=compile_cpp(SUM), limits=limits))
        forked = sandbox.run(
            dataclasses.replace(base, language="cpp", binary=compile_cpp(FORK), limits=limits)
        )
    assert ok.passed and ok.tests_passed == 2
    assert not forked.passed and forked.error_type == "RuntimeError"  # fork() is denied: exit code 3
    assert "exit code 3" in (forked.error_message or "")
