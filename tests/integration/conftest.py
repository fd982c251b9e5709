"""Fixtures for tests that start real servers: a vLLM server (CPU, from .venv-vllm) on the embedded model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from coding_framework.llm.vllm_server import VENV_ENV, VLLMServer, VLLMServerConfig
from coding_framework.logs import get_logger

ROOT = Path(__file__).resolve().parents[2]
SERVED_NAME = "embedded"
log = get_logger(__name__)


def _group_rss_mib(pgid: int) -> float:
    """Resident memory of every process in a process group (the API server, engine core and worker)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after "(comm)": state, ppid, pgrp, ..., rss is the 22nd
            total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return total / 2**20


@pytest.fixture(scope="session")
def vllm_venv() -> Path:
    venv = Path(os.environ.get(VENV_ENV, ROOT / ".venv-vllm"))
    if not (venv / "bin" / "python").is_file():
        pytest.skip(f"no vLLM venv at {venv}: run `bash scripts/setup_vllm.sh` to create it")
    return venv


@pytest.fixture(scope="session")
def vllm_model_dir() -> Path:
    """The embedded default model (a small Qwen2, head_dim 64): built once per machine, then cached."""
    from coding_framework.embedded import ensure_embedded_model

    return ensure_embedded_model()


@pytest.fixture(scope="session")
def vllm_server(
    vllm_venv: Path, vllm_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VLLMServer]:
    """One CPU vLLM server for the session, float32 so its logprobs compare with transformers' closely."""
    config = VLLMServerConfig(
        venv=vllm_venv,
        served_model_name=SERVED_NAME,
        max_model_len=2048,
        max_num_seqs=4,
        dtype="float32",
        kv_cache_gib=1,
    )
    server = VLLMServer(vllm_model_dir, config, log_path=tmp_path_factory.mktemp("vllm") / "server.log")
    with server:
        assert server.pid is not None
        log.info(
            "vllm_server_measured",
            startup_s=round(server.startup_s or 0, 1),
            rss_mib=round(_group_rss_mib(server.pid)),
            log=str(server.log_path),
        )
        yield server
