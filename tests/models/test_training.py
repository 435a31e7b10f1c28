"""Training-side behaviour: packed sequences, gradient checkpointing, optimiser groups."""

import pytest
import torch
from torch import nn

from doit.models import VALUE_MODES, saved_activation_bytes
from doit.testing import random_ids, tiny_model
from doit.train.optim import DoitOptimizerMixin, no_decay_parameter_names, param_groups


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("mode", VALUE_MODES)
def test_packed_sequences_stay_separate(mode, attn):
    model = tiny_model(mode, attn)
    first, second = random_ids(batch=1, length=5, seed=2), random_ids(batch=1, length=7, seed=3)
    packed = torch.cat([first, second], dim=1)
    position_ids = torch.cat([torch.arange(5), torch.arange(7)]).unsqueeze(0)
    with torch.no_grad():
        logits = model(packed, position_ids=position_ids, use_cache=False).logits
        alone = [model(ids, use_cache=False).logits for ids in (first, second)]
    torch.testing.assert_close(logits[:, :5], alone[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(logits[:, 5:], alone[1], atol=1e-5, rtol=0)


def _grads(model, ids):
    model.zero_grad()
    model(ids, labels=ids).loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize(
    ("mode", "fields"),
    [("vanilla", {}), ("resformer", {"value_learnable": True}), ("svformer", {})],
)
def test_gradient_checkpointing_same_grads(mode, fields, reentrant):
    model, ids = tiny_model(mode, **fields).train(), random_ids()
    plain = _grads(model, ids)
    model.activation_checkpointing_enable({"use_reentrant": reentrant})
    assert all(layer.gradient_checkpointing for layer in model.model.layers)
    checkpointed = _grads(model, ids)
    assert plain.keys() == checkpointed.keys()
    for name, grad in plain.items():
        torch.testing.assert_close(checkpointed[name], grad, atol=1e-6, rtol=1e-5, msg=name)
    assert plain["model.layers.0.self_attn.v_proj.weight"].abs().sum() > 0


def test_param_groups_no_decay_set():
    model = tiny_model("resformer", value_learnable=True, tie_word_embeddings=True)
    decayed, not_decayed = param_groups(model, weight_decay=0.1)
    assert decayed["weight_decay"] == 0.1 and not_decayed["weight_decay"] == 0.0
    ids_of = {id(p): n for n, p in model.named_parameters()}
    decay_names = {ids_of[id(p)] for p in decayed["params"]}
    no_decay_names = {ids_of[id(p)] for p in not_decayed["params"]}
    assert decay_names.isdisjoint(no_decay_names)
    assert decay_names | no_decay_names == set(ids_of.values())
    assert "model.layers.1.self_attn.value_lambda1" in no_decay_names
    assert "model.layers.2.input_layernorm.weight" in no_decay_names
    assert "model.norm.weight" in no_decay_names
    assert "model.layers.2.self_attn.q_proj.weight" in decay_names
    assert "model.embed_tokens.weight" in decay_names  # also the tied LM head
    no_embeddings = no_decay_parameter_names(model, decay_embeddings=False)
    assert "model.embed_tokens.weight" in no_embeddings


def test_param_groups_biases_and_frozen_params():
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2, bias=False))
    model[2].weight.requires_grad_(False)
    decayed, not_decayed = param_groups(model, weight_decay=0.5)
    assert [p.shape for p in decayed["params"]] == [torch.Size([4, 4])]
    assert len(not_decayed["params"]) == 3  # linear bias, norm weight and bias


@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_trainer_mixin_uses_the_groups(tmp_path):
    from transformers import Trainer, TrainingArguments

    class DoitTrainer(DoitOptimizerMixin, Trainer):
        pass

    model = tiny_model("resformer", value_learnable=True)
    args = TrainingArguments(output_dir=str(tmp_path), weight_decay=0.1, report_to=[])
    optimizer = DoitTrainer(model=model, args=args).create_optimizer()
    expected = [{id(p) for p in g["params"]} for g in param_groups(model, 0.1)]
    assert [{id(p) for p in g["params"]} for g in optimizer.param_groups] == expected
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]


def test_learnable_mix_recomputes_values_for_backward(monkeypatch):
    """The learnable mix keeps no extra activation (V_n is recomputed) and its grads are exact."""
    from doit.models import modeling_resformer

    model, ids = tiny_model("resformer", value_learnable=True).train(), random_ids()
    fixed = tiny_model("resformer").train()
    fixed_bytes = saved_activation_bytes(fixed, ids)
    assert saved_activation_bytes(model, ids) == fixed_bytes
    recomputed = _grads(model, ids)
    monkeypatch.setattr(modeling_resformer, "checkpoint", lambda fn, *args, **kw: fn(*args))
    assert saved_activation_bytes(model, ids) > fixed_bytes  # stored V_n: the cost avoided
    stored = _grads(model, ids)
    for name, grad in stored.items():
        torch.testing.assert_close(recomputed[name], grad, atol=1e-6, rtol=1e-5, msg=name)
    assert stored["model.layers.2.self_attn.value_lambda2"].abs().sum() > 0
