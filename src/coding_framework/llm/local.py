"""A TokenEngine running a Hugging Face causal LM in this process (CPU or GPU), with its own KV-cache loop.

Logprobs. For every generated token the engine returns ``log softmax(z)[token]`` where ``z`` are the
model's raw next-token logits, cast to fp32, from the very forward pass that sampled the token: the
temperature-1, untruncated model distribution, *not* the tempered or top-p filtered distribution the token
was drawn from. ``teacher_forced_logprobs`` computes the same quantity from a single full-sequence forward
pass, so an auditor can recompute a trajectory's logprobs and compare them (equal up to fp32 rounding of
the two computation orders, and of left padding when the rollout ran in a batch).

Text. ``Generation.text`` is ``tokenizer.decode(token_ids, skip_special_tokens=True)``: the EOS token id is
kept in ``token_ids`` (training must see it) but not in the text, and a matched stop string stays in both
(tokens cannot be cut in the middle, so neither is the text).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, Cache

from coding_framework.llm.base import EngineError, FinishReason, Generation, SamplingParams
from coding_framework.llm.batcher import RequestBatcher
from coding_framework.llm.buckets import length_buckets
from coding_framework.llm.kv_cache import decoding_cache
from coding_framework.llm.sampling import row_seed, sample_next
from coding_framework.logs import get_logger

if TYPE_CHECKING:
    from coding_framework.llm.adapters import RoleAdapters

log = get_logger(__name__)

# A decode step costs about as much as prefilling this many prompt positions (the small models' forward
# pass is dominated by fixed per-call work); it prices splitting a batch by prompt length.
_DECODE_STEP_POSITIONS = 48
# Finished rows leave the batch once at most this share of it is still generating.
_COMPACT_BELOW = 0.75

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class _Row:
    prompt: list[int]
    params: SamplingParams
    seed: int


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``auto``/None picks CUDA when present, else CPU; anything else must name an available device."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise EngineError(
            f"device {device!r} requested but CUDA is not available; use device='cpu' or 'auto'"
        )
    return dev


class LocalEngine:
    """Batched sampling from an in-memory HF model; thread-safe (one lock), async calls are micro-batched.

    ``max_batch_size`` bounds the rows decoded together; ``batch_wait_s`` is how long ``agenerate`` waits
    for companions before running a batch. With ``adapters`` (``attach_adapters``), each row decodes
    through the adapter of its ``SamplingParams.role``, rows of different adapters in one batch.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        *,
        device: str | torch.device | None = None,
        policy_version: str = "0",
        max_batch_size: int = 32,
        batch_wait_s: float = 0.005,
    ) -> None:
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.policy_version = policy_version
        self.max_batch_size = max_batch_size
        self._lock = threading.RLock()
        self._eos_ids = _eos_ids(model, tokenizer)
        # Many chat tokenizers (Llama, SmolLM2) define no pad token; padded positions are masked anyway.
        pad = tokenizer.pad_token_id
        self.pad_id: int = pad if pad is not None else min(self._eos_ids)
        self._max_positions: int | None = getattr(model.config, "max_position_embeddings", None)
        self._batcher: RequestBatcher[_Row, Generation] = RequestBatcher(
            self._run_rows, max_batch=max_batch_size, wait_s=batch_wait_s
        )
        self.adapters: RoleAdapters | None = None

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        *,
        device: str | torch.device | None = "auto",
        dtype: str = "float32",
        policy_version: str | None = None,
        **kwargs: Any,
    ) -> LocalEngine:
        """Load a model directory (config.json, weights, tokenizer files) saved by ``save_pretrained``."""
        p = Path(path).expanduser()
        if not (p / "config.json").is_file():
            raise EngineError(f"{p} is not a Hugging Face model directory (no config.json)")
        if dtype not in _DTYPES:
            raise EngineError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        try:
            tokenizer = AutoTokenizer.from_pretrained(p)
            model = AutoModelForCausalLM.from_pretrained(p, dtype=_DTYPES[dtype])
        except (OSError, ValueError) as exc:
            raise EngineError(f"cannot load the model in {p}: {exc}") from exc
        log.info("local_engine_loaded", path=str(p), params=sum(t.numel() for t in model.parameters()))
        return cls(model, tokenizer, device=device, policy_version=policy_version or p.name, **kwargs)

    # -- weights ---------------------------------------------------------------------------------------

    def set_policy_version(self, version: str) -> None:
        with self._lock:
            self.policy_version = version

    def attach_adapters(self, adapters: RoleAdapters) -> None:
        """Decode each call through its role's adapter; ``adapters`` must sit on this engine's model."""
        if adapters.base is not self.model:
            raise EngineError("the adapters were attached to another model than this engine's")
        with self._lock:
            self.adapters = adapters

    def adapter_for(self, role: str | None) -> str | None:
        return None if self.adapters is None else self.adapters.adapter_for(role)

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: str) -> None:
        """Load new weights and tag them with ``version``; waits for in-flight generation to finish."""
        with self._lock:
            self.model.load_state_dict(dict(state_dict), strict=True)
            self.policy_version = version

    # -- generation ------------------------------------------------------------------------------------

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        return self._run_rows([_Row(list(prompt_ids), params, self._base_seed(params))])[0]

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        """Row ``i`` samples with seed ``row_seed(params.seed, i)``; rows are independent streams."""
        base = self._base_seed(params)
        return self._run_rows([_Row(list(p), params, row_seed(base, i)) for i, p in enumerate(prompts)])

    async def agenerate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        """Same result as ``generate`` (up to batch padding rounding); runs on the batcher's thread."""
        return await self._batcher.submit(_Row(list(prompt_ids), params, self._base_seed(params)))

    def close(self) -> None:
        self._batcher.close()

    def teacher_forced_logprobs(self, ids: Sequence[int], start: int, role: str | None = None) -> list[float]:
        """fp32 ``log p(ids[t] | ids[:t])`` for ``t`` in ``[start, len(ids))`` from one forward pass, through
        ``role``'s adapter when the engine has adapters."""
        if not 1 <= start <= len(ids):
            raise ValueError(f"start must be in [1, {len(ids)}], got {start}")
        with self._lock, torch.inference_mode():
            x = torch.tensor([list(ids)], device=self.device)  # (1, T)
            out = self._model_call([self.adapter_for(role)], input_ids=x)
            logits = out.logits[0, start - 1 : -1].float()  # (T - start, V)
            logprobs = torch.log_softmax(logits, dim=-1)
            return logprobs.gather(-1, x[0, start:].unsqueeze(-1)).squeeze(-1).tolist()

    # -- internals -------------------------------------------------------------------------------------

    @staticmethod
    def _base_seed(params: SamplingParams) -> int:
        if params.seed is not None:
            return params.seed
        return int(torch.randint(0, 2**62, (1,)).item())

    def _run_rows(self, rows: Sequence[_Row]) -> list[Generation]:
        for row in rows:
            self._check_prompt(row)
        overhead = _DECODE_STEP_POSITIONS * max(self._budget(r) for r in rows)
        buckets = length_buckets([r.prompt for r in rows], self.max_batch_size, overhead)
        out: list[Generation | None] = [None] * len(rows)
        with self._lock, torch.inference_mode():
            for bucket in buckets:
                for i, gen in zip(bucket, self._decode([rows[i] for i in bucket]), strict=True):
                    out[i] = gen
        return [g for g in out if g is not None]

    def _check_prompt(self, row: _Row) -> None:
        if not row.prompt:
            raise EngineError("empty prompt: at least one token id is needed")
        if self._max_positions is not None and len(row.prompt) >= self._max_positions:
            raise EngineError(
                f"prompt of {len(row.prompt)} tokens does not fit the model's {self._max_positions} positions"
            )

    def _budget(self, row: _Row) -> int:
        room = row.params.max_new_tokens
        if self._max_positions is not None:
            room = min(room, self._max_positions - len(row.prompt))
        return room

    def _decode(self, rows: Sequence[_Row]) -> list[Generation]:
        """Left-padded batched decoding with a KV cache; identical adjacent prompts are prefilled once.

        Finished rows stay in the batch (their tokens are ignored) until few enough remain that dropping
        them is worth copying the cache.
        """
        n, dev = len(rows), self.device
        names = [self.adapter_for(r.params.role) for r in rows]  # names[i]: row i's adapter
        prompts: list[list[int]] = []
        prompt_names: list[str | None] = []
        source: list[int] = []  # source[i]: index in ``prompts`` of row i's prompt
        for r, name in zip(rows, names, strict=True):
            if not prompts or r.prompt != prompts[-1] or name != prompt_names[-1]:
                prompts.append(r.prompt)
                prompt_names.append(name)
            source.append(len(prompts) - 1)
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long, device=dev)  # (U, T)
        attn = torch.zeros((len(prompts), width), dtype=torch.long, device=dev)  # (U, T)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p, device=dev)
            attn[i, width - len(p) :] = 1
        pos = (attn.cumsum(-1) - 1).clamp(min=0)  # (U, T)
        temps = torch.tensor([r.params.temperature for r in rows], device=dev)  # (B,)
        top_ps = torch.tensor([r.params.top_p for r in rows], device=dev)  # (B,)
        gens = [torch.Generator(device=dev).manual_seed(r.seed) for r in rows]
        budgets = [self._budget(r) for r in rows]
        cache = decoding_cache(self.model.config, width + max(budgets))
        logits = self._forward(ids, attn, pos, cache, prompt_names)  # (U, V)
        if len(prompts) < n:
            expand = torch.tensor(source, device=dev)
            cache.batch_select_indices(expand)
            logits, attn, pos = logits[expand], attn[expand], pos[expand]  # (B, ...)
        next_pos = pos[:, -1] + 1  # (S,) for the S rows still in the batch
        slots = list(range(n))  # slots[s]: the row in batch position s
        out_ids: list[list[int]] = [[] for _ in rows]
        out_lps: list[list[float]] = [[] for _ in rows]
        reasons: list[FinishReason | None] = [None] * n
        while True:
            live = [s for s, i in enumerate(slots) if reasons[i] is None]
            live_rows = [slots[s] for s in live]
            at = torch.tensor(live, device=dev)
            row_at = torch.tensor(live_rows, device=dev)
            live_logits = logits[at]  # (A, V)
            tok = sample_next(live_logits, temps[row_at], top_ps[row_at], [gens[i] for i in live_rows])
            lps = torch.log_softmax(live_logits, dim=-1).gather(-1, tok.unsqueeze(-1)).squeeze(-1)  # (A,)
            for i, t, lp in zip(live_rows, tok.tolist(), lps.tolist(), strict=True):
                out_ids[i].append(t)
                out_lps[i].append(lp)
                reasons[i] = self._stop_reason(out_ids[i], rows[i].params, budgets[i])
            still = [s for s in live if reasons[slots[s]] is None]
            if not still:
                break
            feed = torch.full((len(slots),), self.pad_id, dtype=torch.long, device=dev)  # (S,)
            feed[at] = tok
            if len(still) <= _COMPACT_BELOW * len(slots):
                keep = torch.tensor(still, device=dev)
                cache.batch_select_indices(keep)
                attn, next_pos, feed = attn[keep], next_pos[keep], feed[keep]
                slots = [slots[s] for s in still]
            attn = torch.cat([attn, attn.new_ones((len(slots), 1))], dim=1)  # (S, T + 1)
            logits = self._forward(feed.unsqueeze(-1), attn, next_pos.unsqueeze(-1), cache,
                                   [names[i] for i in slots])
            next_pos = next_pos + 1
        return [self._generation(out_ids[i], out_lps[i], reasons[i]) for i in range(n)]

    def _forward(
        self, ids: torch.Tensor, attn: torch.Tensor, pos: torch.Tensor, cache: Cache,
        names: Sequence[str | None],
    ) -> torch.Tensor:
        out = self._model_call(
            names,
            input_ids=ids,
            attention_mask=attn,
            position_ids=pos,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return out.logits[:, -1, :].float()  # (B, V)

    def _model_call(self, names: Sequence[str | None], **kwargs: Any) -> Any:
        """The model on ``kwargs``, row ``i`` through adapter ``names[i]`` when there are adapters."""
        if self.adapters is None:
            return self.model(**kwargs)
        return self.adapters.forward(names, **kwargs)

    def _stop_reason(self, ids: list[int], params: SamplingParams, budget: int) -> FinishReason | None:
        if ids[-1] in self._eos_ids:
            return "eos"
        if params.stop:
            # Earlier steps already checked everything before the newest token, and every token decodes
            # to at least one character, so a window this wide catches any new match.
            window = max(len(s) for s in params.stop) + 1
            tail = self.tokenizer.decode(ids[-window:], skip_special_tokens=False)
            if any(s in tail for s in params.stop):
                return "stop"
        if len(ids) >= budget:
            return "length"
        return None

    def _generation(self, ids: list[int], lps: list[float], reason: FinishReason | None) -> Generation:
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return Generation(
            token_ids=ids,
            logprobs=lps,
            text=text,
            stop_reason=reason or "length",
            policy_version=self.policy_version,
        )


def _eos_ids(model: torch.nn.Module, tokenizer: Any) -> frozenset[int]:
    ids: set[int] = set()
    gen_cfg = getattr(model, "generation_config", None)
    for source in (getattr(gen_cfg, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(source, int):
            ids.add(source)
        elif source is not None:
            ids.update(int(x) for x in source)
    if not ids:
        raise EngineError("neither the model's generation_config nor the tokenizer defines an EOS token")
    return frozenset(ids)
