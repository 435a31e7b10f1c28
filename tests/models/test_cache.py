"""KV-cache correctness in every mode, and SVFormer's real cache saving."""

import pytest
import torch
from transformers.cache_utils import DynamicCache

from doit.models import VALUE_MODES, SVFormerCache, cache_nbytes
from doit.testing import TINY, random_ids, tiny_model

LAYERS = TINY["num_hidden_layers"]

GEN = dict(do_sample=False, pad_token_id=0)


def _generate(model, ids, **kwargs):
    mask = torch.ones_like(ids)
    with torch.no_grad():
        return model.generate(ids, attention_mask=mask, **GEN, **kwargs)


@pytest.mark.parametrize("mode", VALUE_MODES)
def test_cached_greedy_equals_recompute(mode):
    model, ids = tiny_model(mode), random_ids(length=6)
    cached = _generate(model, ids, max_new_tokens=12, use_cache=True)
    recomputed = _generate(model, ids, max_new_tokens=12, use_cache=False)
    assert torch.equal(cached, recomputed)


@pytest.mark.parametrize("mode", VALUE_MODES)
def test_beam_search_cached_equals_recompute(mode):
    model, ids = tiny_model(mode), random_ids(length=5)
    kwargs = dict(max_new_tokens=8, num_beams=3, num_return_sequences=3, output_scores=True)
    cached = _generate(model, ids, use_cache=True, return_dict_in_generate=True, **kwargs)
    recomputed = _generate(model, ids, use_cache=False, return_dict_in_generate=True, **kwargs)
    assert torch.equal(cached.sequences, recomputed.sequences)
    torch.testing.assert_close(cached.sequences_scores, recomputed.sequences_scores)


def _chunked_logits(model, ids, cache, chunks=(5, 3, 1, 1, 1, 1)):
    logits, start = [], 0
    for size in chunks:
        out = model(ids[:, start : start + size], cache=cache, use_cache=True)
        logits.append(out.logits)
        cache, start = out.cache, start + size
    assert start == ids.shape[1]
    return torch.cat(logits, dim=1), cache


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("mode", VALUE_MODES)
def test_chunked_prefill_and_decode_equal_full_forward(mode, attn):
    model, ids = tiny_model(mode, attn), random_ids(length=12)
    with torch.no_grad():
        full = model(ids, use_cache=False).logits
        stepped, cache = _chunked_logits(model, ids, cache=None)
    expected = SVFormerCache if mode == "svformer" else DynamicCache
    assert type(cache) is expected
    torch.testing.assert_close(stepped, full, atol=1e-5, rtol=0)


def test_svformer_with_stock_cache_is_correct_but_saves_nothing():
    model, ids = tiny_model("svformer"), random_ids(length=12)
    with torch.no_grad():
        full = model(ids, use_cache=False).logits
        stepped, cache = _chunked_logits(model, ids, cache=DynamicCache(config=model.config))
    torch.testing.assert_close(stepped, full, atol=1e-5, rtol=0)
    assert all(layer.values.shape[-2] == 12 for layer in cache.layers)


def test_svformer_has_no_v_proj_after_layer_0():
    model = tiny_model("svformer")
    names = [name for name, _ in model.named_parameters() if "v_proj" in name]
    assert names == ["model.layers.0.self_attn.v_proj.weight"]


def _live_cache_bytes(model, ids, **kwargs) -> list[int]:
    """Bytes of the cache object generate() passes to each forward call, read after the call."""
    sizes = []

    def record(module, args, kwargs_, output):
        sizes.append(cache_nbytes(kwargs_["cache"]))

    handle = model.register_forward_hook(record, with_kwargs=True)
    try:
        _generate(model, ids, use_cache=True, **kwargs)
    finally:
        handle.remove()
    return sizes


@pytest.mark.parametrize("num_beams", [1, 3])
def test_svformer_live_cache_is_l_plus_1_over_2l_of_vanilla(num_beams):
    ids = random_ids(length=7)
    kwargs = dict(max_new_tokens=6, num_beams=num_beams)
    vanilla = _live_cache_bytes(tiny_model("vanilla"), ids, **kwargs)
    sv_model = tiny_model("svformer")
    sv = _live_cache_bytes(sv_model, ids, **kwargs)
    assert len(sv) == len(vanilla) == 6 and vanilla[0] > 0
    for sv_bytes, vanilla_bytes in zip(sv, vanilla, strict=True):
        assert sv_bytes * 2 * LAYERS == vanilla_bytes * (LAYERS + 1)  # exact, integers


def test_svformer_partial_layers_cache_and_params():
    model = tiny_model("svformer", value_layers=[3])
    assert not hasattr(model.model.layers[3].self_attn, "v_proj")
    assert hasattr(model.model.layers[2].self_attn, "v_proj")
    ids = random_ids(length=9)
    with torch.no_grad():
        cache = model(ids, use_cache=True).cache
    one_layer = cache_nbytes(cache) / (2 * LAYERS - 1)  # 4 key tensors + 3 value tensors
    assert cache.nbytes() == one_layer * (2 * LAYERS - 1)
    assert cache.layers[3].values.numel() == 0 and cache.layers[2].values.numel() > 0


def test_svformer_cache_crop_and_batch_ops():
    model, ids = tiny_model("svformer"), random_ids(batch=2, length=10)
    with torch.no_grad():
        full = model(ids).logits
        cache = model(ids[:, :8], use_cache=True).cache
        cache.crop(-3)  # keep 5 tokens
        assert cache.get_seq_length() == 5
        resumed = model(ids[:, 5:], cache=cache, use_cache=True).logits
        torch.testing.assert_close(resumed, full[:, 5:], atol=1e-5, rtol=0)

        cache = model(ids[:, :6], use_cache=True).cache
        cache.batch_repeat_interleave(2)  # batch rows: 0, 0, 1, 1
        cache.batch_select_indices(torch.tensor([1, 2]))  # back to 0, 1
        resumed = model(ids[:, 6:], cache=cache, use_cache=True).logits
        torch.testing.assert_close(resumed, full[:, 6:], atol=1e-5, rtol=0)
