"""verl's LoRA weight sync into the token server, and a LoRA actor's export, with the tests' tiny model: the
server and the export both sample from / hold ``W0 + scaling * B @ A``, the weights peft itself computes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from peft import LoraConfig, get_peft_model
from peft.utils.save_and_load import get_peft_model_state_dict
from transformers import AutoModelForCausalLM

from coding_framework.testing.models import tiny_model_dir
from coding_framework.training.verl.export import LORA_META, merged_lora_state
from coding_framework.training.verl.lora import lora_scaling, merge_lora
from coding_framework.training.verl.token_server import TokenServer, local_config

PROBE = torch.tensor([[1, 5, 9, 33, 100, 7, 12]])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory.mktemp("tiny"))


def _trained_adapter(model_dir: Path) -> tuple[Any, dict[str, Any]]:
    """A peft model on the tiny base whose adapter has moved (lora_B is zero at init), and its config as
    verl sends it (``peft_config.to_dict()``)."""
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    peft = get_peft_model(base, config)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in peft.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.1)
    return peft.eval(), config.to_dict()


def _logits(model: Any) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=PROBE).logits


def test_an_adapter_update_makes_the_token_server_sample_from_the_updated_policy(model_dir: Path) -> None:
    peft, peft_config = _trained_adapter(model_dir)
    server = TokenServer(local_config(model_dir))
    before = _logits(server.engine.model)
    adapter = get_peft_model_state_dict(peft)  # verl's adapter sync: peft's names, no adapter name
    assert all(k.startswith("base_model.model.") and ".lora_" in k for k in adapter)
    server.load_lora(adapter, peft_config, base_sync_done=True, global_steps=3)
    assert server.global_steps == 3
    after = _logits(server.engine.model)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, _logits(peft), atol=1e-5, rtol=1e-5)
    # the next update merges into the same base, not into the merged weights
    server.load_lora(adapter, peft_config, base_sync_done=True, global_steps=4)
    torch.testing.assert_close(_logits(server.engine.model), _logits(peft), atol=1e-5, rtol=1e-5)


def test_the_base_sync_is_kept_and_the_adapter_merged_into_it(model_dir: Path) -> None:
    peft, peft_config = _trained_adapter(model_dir)
    server = TokenServer(local_config(model_dir))
    # verl's base sync: every weight, the adapted Linears' as <module>.base_layer.weight
    base = {k.removeprefix("base_model.model."): v.clone() for k, v in peft.state_dict().items()
            if ".lora_" not in k}
    assert any(".base_layer." in k for k in base)
    server.load_lora(base, peft_config, base_sync_done=False, global_steps=1)
    original = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    torch.testing.assert_close(_logits(server.engine.model), _logits(original))
    server.load_lora(get_peft_model_state_dict(peft), peft_config, base_sync_done=True, global_steps=1)
    torch.testing.assert_close(_logits(server.engine.model), _logits(peft), atol=1e-5, rtol=1e-5)


def test_a_lora_actors_checkpoint_exports_as_the_merged_model(model_dir: Path, tmp_path: Path) -> None:
    peft, _ = _trained_adapter(model_dir)
    (tmp_path / LORA_META).write_text('{"r": 4, "lora_alpha": 8, "task_type": "CAUSAL_LM"}')
    state = merged_lora_state(dict(peft.state_dict()), tmp_path)  # the FSDP actor's names
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.load_state_dict(state, strict=True)
    torch.testing.assert_close(_logits(model.eval()), _logits(peft), atol=1e-5, rtol=1e-5)
    full = dict(model.state_dict())
    assert merged_lora_state(full, tmp_path) is full  # a full fine-tune's state is taken as it is


@pytest.mark.parametrize(("change", "message"), [
    ({"use_dora": True}, "use_dora"), ({"rank_pattern": {"q_proj": 2}}, "rank_pattern"),
    ({"fan_in_fan_out": True}, "fan_in_fan_out"),
])
def test_lora_settings_the_merge_cannot_honour_are_refused(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        lora_scaling({"r": 4, "lora_alpha": 8, **change})


def test_rslora_scales_by_the_root_of_the_rank() -> None:
    assert lora_scaling({"r": 4, "lora_alpha": 8}) == 2.0
    assert lora_scaling({"r": 4, "lora_alpha": 8, "use_rslora": True}) == 4.0


def test_an_adapter_without_its_pairs_or_base_weight_is_refused() -> None:
    base = {"m.q.weight": torch.zeros(3, 2)}
    a = {"base_model.model.m.q.lora_A.weight": torch.ones(1, 2)}
    b = {"base_model.model.m.q.lora_B.weight": torch.ones(3, 1)}
    config = {"r": 1, "lora_alpha": 1}
    with pytest.raises(ValueError, match="matching lora_A/lora_B"):
        merge_lora(base, a, config)
    with pytest.raises(ValueError, match="no weight for"):
        merge_lora({}, {**a, **b}, config)
    merged = merge_lora(base, {**a, **b}, config)
    assert torch.equal(merged["m.q.weight"], torch.ones(3, 2)) and torch.equal(base["m.q.weight"],
                                                                                 torch.zeros(3, 2))
