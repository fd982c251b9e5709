"""Fixtures for tests that start real servers: a vLLM server (CPU, from .venv-vllm) on a tiny Qwen2."""

from __future__ import annotations

import inspect
import json
import os
import pathlib
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from coding_framework.llm.vllm_server import VENV_ENV, VLLMServer, VLLMServerConfig
from coding_framework.logs import get_logger

ROOT = Path(__file__).resolve().parents[2]
log = get_logger(__name__)

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_tiny_qwen2(out: Path) -> Path:
    """A random-init Qwen2 (hidden 128, 2 heads of head_dim 64, 2 layers) with a ChatML byte-level BPE
    tokenizer trained on a little stdlib source. Its vocabulary is ASCII-only, so any sampled id sequence
    decodes to valid text (a random model would otherwise emit partial UTF-8 characters)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    ascii_chars = [c for c in byte_chars if c.isascii() or c in "ĠĊĉ"]  # Ġ Ċ ĉ: space, newline, tab
    corpus = [inspect.getsource(m).encode("ascii", "ignore").decode() for m in (json, pathlib, textwrap)]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=1000,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=ascii_chars,
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHATML
    )
    tokenizer.save_pretrained(out)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(out)
    return out


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
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny-qwen2"))


@pytest.fixture(scope="session")
def vllm_server(
    vllm_venv: Path, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VLLMServer]:
    """One CPU vLLM server for the session, float32 so its logprobs compare with transformers' closely."""
    config = VLLMServerConfig(
        venv=vllm_venv,
        served_model_name="tiny",
        max_model_len=1024,
        max_num_seqs=4,
        dtype="float32",
        kv_cache_gib=1,
    )
    server = VLLMServer(tiny_model_dir, config, log_path=tmp_path_factory.mktemp("vllm") / "server.log")
    with server:
        assert server.pid is not None
        log.info(
            "vllm_server_measured",
            startup_s=round(server.startup_s or 0, 1),
            rss_mib=round(_group_rss_mib(server.pid)),
            log=str(server.log_path),
        )
        yield server
