"""The embedded default model: a small Qwen2 and BPE tokenizer built locally (no downloads) and cached."""

from coding_framework.embedded.bootstrap import build_embedded_model, cache_root, ensure_embedded_model

__all__ = ["build_embedded_model", "cache_root", "ensure_embedded_model"]
