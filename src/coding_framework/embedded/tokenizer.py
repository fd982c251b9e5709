"""The embedded model's tokenizer: byte-level BPE trained on local Python source, with a ChatML template.

Digits are split one by one (as in Qwen2), so numbers in a problem are copied digit by digit rather than
needing a learned token for every constant. The chat template renders each message on its own, so the
rendering of a conversation is the concatenation of its messages' renderings (prefix-stable), and special
tokens bound every message, so token ids concatenate the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from coding_framework.config.embedded import TokenizerConfig

PAD = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# Qwen2's pre-tokenizer split: words with one leading non-letter, single digits, punctuation runs, newlines.
_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def stdlib_sources(max_bytes: int) -> list[Path]:
    """Sorted stdlib ``.py`` files (no tests, no site-packages) up to ``max_bytes`` in total."""
    root = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    if not root.is_dir():
        raise FileNotFoundError(f"no Python standard library source under {root}")
    skip = {"site-packages", "test", "tests", "idle_test", "lib2to3", "__pycache__"}
    files, total = [], 0
    for path in sorted(root.rglob("*.py")):
        if skip.intersection(path.relative_to(root).parts):
            continue
        size = path.stat().st_size
        if total + size > max_bytes:
            continue
        files.append(path)
        total += size
    return files


def _corpus(files: Iterable[Path], extra_texts: Iterable[str]) -> Iterator[str]:
    for path in files:
        yield path.read_text(encoding="utf-8", errors="replace")
    yield from extra_texts


def train_tokenizer(settings: TokenizerConfig, extra_texts: Iterable[str]) -> PreTrainedTokenizerFast:
    """Train the BPE on ``settings.corpus_mb`` of stdlib source plus ``extra_texts``."""
    files = stdlib_sources(int(settings.corpus_mb * 1_000_000))
    return tokenizer_from_texts(_corpus(files, extra_texts), settings.vocab_size, settings.min_frequency)


def tokenizer_from_texts(
    texts: Iterable[str], vocab_size: int, min_frequency: int = 2
) -> PreTrainedTokenizerFast:
    """A byte-level BPE with the chat template and special tokens, trained on ``texts``."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD,
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        model_max_length=1_000_000,
    )
