"""Vanilla mode is Llama; ResFormer with (l1, l2) = (0, 1) is vanilla; Llama weights load."""

import pytest
import torch

from doit.models import VALUE_MODES, from_llama
from doit.testing import random_ids, tiny_model


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_vanilla_equals_llama(attn):
    llama = tiny_model("llama", attn)
    model = tiny_model("vanilla", attn)
    model.load_state_dict(llama.state_dict(), strict=True)
    ids = random_ids()
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, llama(ids).logits, atol=1e-6, rtol=0)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_resformer_identity_mix_equals_vanilla(attn):
    vanilla = tiny_model("vanilla", attn)
    mixed = tiny_model("resformer", attn, value_lambdas=(0, 1))
    mixed.load_state_dict(vanilla.state_dict(), strict=True)
    ids = random_ids()
    with torch.no_grad():
        torch.testing.assert_close(mixed(ids).logits, vanilla(ids).logits, atol=1e-6, rtol=0)


def test_default_resformer_differs_from_vanilla():
    vanilla = tiny_model("vanilla")
    mixed = tiny_model("resformer")
    mixed.load_state_dict(vanilla.state_dict())
    ids = random_ids()
    with torch.no_grad():
        assert not torch.allclose(mixed(ids).logits, vanilla(ids).logits, atol=1e-4)


def test_eager_equals_sdpa_in_every_mode():
    ids = random_ids()
    for mode in VALUE_MODES:
        eager, sdpa = tiny_model(mode, "eager"), tiny_model(mode, "sdpa")
        with torch.no_grad():
            torch.testing.assert_close(eager(ids).logits, sdpa(ids).logits, atol=1e-5, rtol=0)


@pytest.mark.parametrize("mode", VALUE_MODES)
def test_from_llama(mode, tmp_path):
    llama = tiny_model("llama")
    llama.save_pretrained(tmp_path)
    learnable = {"value_learnable": True} if mode == "resformer" else {}
    model = from_llama(tmp_path, value_mode=mode, **learnable)
    assert model.config.model_type == "resformer" and model.config.value_mode == mode
    llama_weights = llama.state_dict()
    for name, tensor in model.state_dict().items():
        if "value_lambda" in name:
            assert tensor.item() == 0.5
        else:
            torch.testing.assert_close(tensor, llama_weights[name], atol=0, rtol=0)
    if mode == "vanilla":
        ids = random_ids()
        with torch.no_grad():
            torch.testing.assert_close(model(ids).logits, llama(ids).logits, atol=1e-6, rtol=0)


def test_from_llama_rejects_other_models():
    with pytest.raises(ValueError, match="Llama"):
        from_llama(tiny_model("vanilla"))
