"""The llm package's public API, and that importing it stays free of torch."""

from __future__ import annotations

import subprocess
import sys

import coding_framework.llm as llm


def test_public_api() -> None:
    assert sorted(llm.__all__) == [
        "CallRecord",
        "EngineChatModel",
        "EngineError",
        "FinishReason",
        "Generation",
        "SamplingParams",
        "TemplateError",
        "TokenEngine",
        "TokenSession",
        "build_chat_model",
        "build_engine",
    ]
    assert all(hasattr(llm, name) for name in llm.__all__)


def test_import_does_not_load_torch() -> None:
    code = "import sys, coding_framework.llm; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
