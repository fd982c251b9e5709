"""C++ stdin/stdout submissions: compiled in a bwrap sandbox that cannot see host files, run in the judge."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path

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
# Nested loops: each stays under g++'s per-loop constexpr limit (262144 iterations), so the compiler keeps
# evaluating (about 4e10 steps) until the timeout stops it.
SLOW = ("constexpr long f(){long s=0;for(long i=0;i<200000;i++)for(long j=0;j<200000;j++)s+=i^j;return s;}\n"
        "static_assert(f()>0);\n")
needs_gxx = pytest.mark.skipif(cpp.compiler() is None, reason="no g++ on PATH")


def _host_files() -> list[str]:
    """Files that exist on the host and must stay out of the compiler's view."""
    home = [p for p in sorted(Path.home().iterdir()) if p.is_file()][:1]
    return ["/etc/passwd", "/proc/self/environ", __file__, *map(str, home)]


def test_no_compiler_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpp.shutil, "which", lambda name: None)
    with pytest.raises(CompileError, match="no C\\+\\+ compiler"):
        compile_cpp(SUM)


@needs_gxx
def test_compile_error_carries_the_message() -> None:
    with pytest.raises(CompileError, match="error"):
        compile_cpp("int main( {")


@needs_gxx
@pytest.mark.parametrize("path", _host_files())
def test_host_files_cannot_be_included(path: str) -> None:
    assert Path(path).exists()
    with pytest.raises(CompileError, match=f"{re.escape(path)}: No such file"):
        compile_cpp(f'#include "{path}"\nint main(){{}}\n')


@needs_gxx
def test_host_tmp_and_incbin_stay_out_of_view(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("expected_output = 42\n")
    with pytest.raises(CompileError, match="No such file"):
        compile_cpp(f'#include "{secret}"\nint main(){{}}\n')
    with pytest.raises(CompileError, match="file not found: /etc/passwd"):
        compile_cpp('asm(".incbin \\"/etc/passwd\\"");\nint main(){}\n')


@needs_gxx
def test_compile_timeout_is_a_compile_error() -> None:
    start = time.monotonic()
    with pytest.raises(CompileError, match="longer than 1s"):
        compile_cpp(SLOW + "int main(){}\n", timeout_s=1.0)
    assert time.monotonic() - start < 10


@needs_gxx
def test_normal_program_compiles_to_an_executable() -> None:
    assert compile_cpp(SUM).startswith(b"\x7fELF")


@pytest.mark.slow
@needs_gxx
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
