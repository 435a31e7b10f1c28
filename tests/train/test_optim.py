"""doit's no-decay set is the same whether a model is built whole or partitioned by ZeRO-3.

Under `deepspeed.zero.Init` (how `from_pretrained` loads an SFT base under a stage-3 config)
every parameter is replaced by an empty 1-D tensor; its full shape is kept in ``ds_shape``. The
worker below (this file run as a script: one CPU rank, gloo) builds each model twice, without
ZeRO and under `zero.Init`, and writes the no-decay names of both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from doit.train.launch import free_port
from tests.tiny import REPO

pytestmark = pytest.mark.slow
STAGE3 = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}


def _models():
    """name -> (builder, decay_embeddings): a ResFormer with learnable mixing scalars and tied
    embeddings, and a Llama with attention biases."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from doit.testing import TINY, tiny_model

    def llama():
        return LlamaForCausalLM(LlamaConfig(**TINY, attention_bias=True))

    def resformer():
        return tiny_model("resformer", value_learnable=True, tie_word_embeddings=True)

    return {
        "resformer": (resformer, True),
        "resformer_no_embedding_decay": (resformer, False),
        "llama_bias": (llama, True),
    }


def _worker(out: Path) -> None:
    import deepspeed

    from doit.train.optim import no_decay_parameter_names

    deepspeed.init_distributed(dist_backend="gloo")
    results = {}
    for name, (build, decay_embeddings) in _models().items():
        whole = build()
        with deepspeed.zero.Init(config_dict_or_path=STAGE3):
            partitioned = build()
        results[name] = {
            "params": [n for n, _ in whole.named_parameters()],
            "partitioned": [
                n for n, p in partitioned.named_parameters() if p.numel() == 0 and p.ds_shape
            ],
            "whole": sorted(no_decay_parameter_names(whole, decay_embeddings)),
            "zero3": sorted(no_decay_parameter_names(partitioned, decay_embeddings)),
        }
    out.write_text(json.dumps(results))


def test_no_decay_set_is_the_same_under_zero3_init(tmp_path):
    out = tmp_path / "names.json"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    proc = subprocess.run(
        [sys.executable, __file__, str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    results = json.loads(out.read_text())
    for name, r in results.items():
        assert r["partitioned"] == r["params"], name  # zero.Init really emptied every tensor
        assert r["zero3"] == r["whole"], name
        decayed = set(r["params"]) - set(r["zero3"])
        assert any(n.endswith("q_proj.weight") for n in decayed), (name, decayed)
    resformer = results["resformer"]
    assert "model.layers.1.self_attn.value_lambda1" in resformer["zero3"]
    assert "model.norm.weight" in resformer["zero3"]
    assert "model.embed_tokens.weight" not in resformer["zero3"]
    assert "model.embed_tokens.weight" in results["resformer_no_embedding_decay"]["zero3"]
    assert "model.layers.0.self_attn.q_proj.bias" in results["llama_bias"]["zero3"]
    assert "model.layers.0.self_attn.q_proj.weight" not in results["llama_bias"]["zero3"]


if __name__ == "__main__":  # the one-rank worker
    _worker(Path(sys.argv[1]))
