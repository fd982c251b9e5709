"""Importing the llm package stays free of torch."""

from __future__ import annotations

import subprocess
import sys


def test_import_does_not_load_torch() -> None:
    code = "import sys, coding_framework.llm; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
