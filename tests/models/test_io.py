"""Config validation, learnable mixing scalars, save/load and Auto-class registration."""

import re
import subprocess
import sys

import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from doit.models import VALUE_MODES, ResFormerConfig, ResFormerForCausalLM, ResFormerModel
from doit.testing import TINY, random_ids, tiny_model


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"value_mode": "resformr"}, "value_mode must be one of"),
        ({"value_mode": "resformer", "value_lambdas": (0.5, 0.5, 0.5)}, "two finite numbers"),
        ({"value_mode": "resformer", "value_lambdas": (float("nan"), 1)}, "two finite numbers"),
        ({"value_mode": "svformer", "value_learnable": True}, "needs value_mode='resformer'"),
        ({"value_mode": "vanilla", "value_layers": [2]}, "value_mode='vanilla'"),
        ({"value_mode": "resformer", "value_layers": [0, 2]}, r"in 1\.\.3"),
        ({"value_mode": "resformer", "value_layers": [4]}, r"in 1\.\.3"),
        ({"value_mode": "resformer", "value_layers": [2, 2]}, "distinct"),
    ],
)
def test_config_rejects_bad_values(fields, message):
    with pytest.raises(Exception, match=message):
        ResFormerConfig(**TINY, **fields)


def test_config_normalises_and_lists_layers():
    config = ResFormerConfig(
        **TINY, value_mode="resformer", value_lambdas=[5, 1], value_layers=[3, 2]
    )
    assert config.value_lambdas == (5.0, 1.0) and config.value_layers == [2, 3]
    assert config.value_residual_layers() == [2, 3]
    assert ResFormerConfig(**TINY, value_mode="svformer").value_residual_layers() == [1, 2, 3]
    assert ResFormerConfig(**TINY).value_residual_layers() == []


def test_learnable_scalars_init_grad_and_roundtrip(tmp_path):
    model = tiny_model("resformer", value_learnable=True, value_layers=[1, 3])
    lambdas = {n: p for n, p in model.named_parameters() if "value_lambda" in n}
    assert sorted(lambdas) == [
        f"model.layers.{i}.self_attn.value_lambda{j}" for i in (1, 3) for j in (1, 2)
    ]
    assert all(p.item() == 0.5 for p in lambdas.values())

    ids = random_ids()
    model.train()
    model(ids, labels=ids).loss.backward()
    assert all(p.grad is not None and p.grad.abs().item() > 0 for p in lambdas.values())

    with torch.no_grad():
        for k, p in enumerate(lambdas.values()):
            p.fill_(0.1 * (k + 1))
    model.save_pretrained(tmp_path)
    loaded = ResFormerForCausalLM.from_pretrained(tmp_path)
    for name, p in loaded.named_parameters():
        if "value_lambda" in name:
            assert p.item() == lambdas[name].item()


def test_learnable_scalars_start_from_value_lambdas():
    model = tiny_model("resformer", value_learnable=True, value_lambdas=(5, 1))
    attn = model.model.layers[2].self_attn
    assert attn.value_lambda1.item() == 5.0 and attn.value_lambda2.item() == 1.0


@pytest.mark.parametrize("mode", VALUE_MODES)
def test_save_load_exact(mode, tmp_path):
    model = tiny_model(mode, value_lambdas=(0.3, 0.8))
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists()
    for cls in (ResFormerForCausalLM, AutoModelForCausalLM):
        loaded = cls.from_pretrained(tmp_path).eval()
        assert type(loaded) is ResFormerForCausalLM
        assert loaded.config.value_mode == mode and loaded.config.value_lambdas == (0.3, 0.8)
        expected = model.state_dict()
        assert loaded.state_dict().keys() == expected.keys()
        for name, tensor in loaded.state_dict().items():
            assert torch.equal(tensor, expected[name]), name
        ids = random_ids()
        with torch.no_grad():
            assert torch.equal(loaded(ids).logits, model(ids).logits)


def test_auto_classes_registered(tmp_path):
    tiny_model("svformer").save_pretrained(tmp_path)
    assert type(AutoConfig.from_pretrained(tmp_path)) is ResFormerConfig
    assert type(AutoModel.from_pretrained(tmp_path)) is ResFormerModel


def test_auto_loading_without_doit_refuses(tmp_path):
    tiny_model("resformer").save_pretrained(tmp_path)
    code = (
        "import sys\n"
        "from transformers import AutoModelForCausalLM\n"
        f"AutoModelForCausalLM.from_pretrained({str(tmp_path)!r})\n"
        "assert 'doit' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0, "loaded a resformer checkpoint without doit.models"
    # The raised error itself (not just the path in a traceback) names the model type.
    assert re.search(r"^\w+Error: .*resformer", result.stderr, re.M), result.stderr[-2000:]


def test_learnable_scalars_missing_from_checkpoint_are_initialised(tmp_path):
    tiny_model("resformer").save_pretrained(tmp_path)  # fixed mix: no scalars saved
    loaded = ResFormerForCausalLM.from_pretrained(
        tmp_path, value_learnable=True, value_lambdas=(0.25, 0.75)
    )
    values = [p.item() for n, p in loaded.named_parameters() if "value_lambda" in n]
    assert values == [0.25, 0.75] * 3
