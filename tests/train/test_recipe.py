"""The real recipe on CPU with tiny bases: run directory, resume, LoRA, QLoRA. A run that must be
one process of its own (the first start, the killed run) is a subprocess; the others call the
recipe's ``main`` in this process (`run_in_process`), which trains as a start does
(tests/train/test_sft_library.py)."""

import json
import os
import signal
import subprocess
import time

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from doit.models.chat import SPEAKER_TOKENS
from doit.train.rundir import checkpoints
from tests.data.pools import uniform, write_pool
from tests.tiny import REPO, make_base
from tests.train.conftest import (
    PY,
    RECIPE,
    env_for,
    metrics,
    recipe_args,
    run_in_process,
    run_recipe,
    train_logs,
)

pytestmark = pytest.mark.slow


def test_python_run_dir_done_marker_and_tokenised_cache(base, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "run"
    first = run_recipe(PY, recipe_args(base, out, num_train_epochs=2), cache)
    assert "tokenised-cache miss" in first.stderr
    assert "epoch 1/2" in first.stderr and "epoch 2/2" in first.stderr
    assert "doit sft: 4/4 steps" in first.stdout
    info = json.loads((out / "run_info.json").read_text())
    assert info["schedule"]["max_steps"] == 4 and info["launch"]["launcher"] == "python"
    assert info["data"]["source_data_hash"] and info["git"]["commit"] and info["versions"]["trl"]
    assert info["config"]["training"]["learning_rate"] == 1e-3
    assert [c.name for c in checkpoints(out)] == ["checkpoint-2", "checkpoint-4"]
    for ckpt in checkpoints(out):  # one checkpoint per epoch, weights only once the run is done
        assert (ckpt / "model.safetensors").is_file() and not (ckpt / "optimizer.pt").exists()
    evals = [r for r in metrics(out) if r["kind"] == "valid" and "eval_math_loss" in r]
    assert [r["epoch"] for r in evals] == [1.0, 2.0]
    logs = train_logs(out)
    assert [r["step"] for r in logs] == [1, 2, 3, 4]
    for key in ("loss", "learning_rate", "grad_norm", "tokens_per_second", "assistant_tokens"):
        assert all(key in r for r in logs)
    assert logs[-1]["assistant_tokens_seen"] == sum(r["assistant_tokens"] for r in logs)
    model = AutoModelForCausalLM.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(out)
    assert model.get_input_embeddings().num_embeddings == len(tok) == 387
    assert "<assistant>" in tok.chat_template and tok.eos_token == "<eot>"
    assert (out / "DONE").is_file()

    again = run_in_process(recipe_args(base, out, num_train_epochs=2), cache)
    assert "is finished (DONE)" in again.stderr and "epoch 1/2" not in again.stderr

    # the cache the first start's process wrote, read from disk in this one
    other = run_in_process(recipe_args(base, tmp_path / "run2", num_train_epochs=1), cache)
    assert (tmp_path / "run2" / "DONE").is_file()
    assert "tokenised-cache hit" in other.stderr and "tokenised-cache miss" not in other.stderr


@pytest.fixture(scope="module")
def memorise_pool(tmp_path_factory):
    return write_pool(tmp_path_factory.mktemp("pool"), uniform(4))


def memorise_args(base, pool, out):
    """32 items (4 for each of 8 abilities), 4 steps an epoch, 60 steps."""
    keys = dict(
        doit_dir=pool,
        per_ability=4,
        exclude_abilities=["ethics", "role_play"],
        schedule="steps",
        max_steps=60,
        eval_strategy="no",
        learning_rate=1e-2,
    )
    return recipe_args(base, out, **keys)


@pytest.fixture(scope="module")
def memorised(base, memorise_pool, tmp_path_factory, cache_dir):
    """The 60-step memorisation run, trained once: checked on its own, and the uninterrupted
    reference the killed-and-rerun run must reproduce."""
    out = tmp_path_factory.mktemp("memorised") / "run"
    run_in_process(memorise_args(base, memorise_pool, out), cache_dir)
    return out


def test_memorisation_loss_halves_and_lr_decays_to_lr_end(memorised):
    out = memorised
    logs = train_logs(out)
    assert (
        len(logs) == 60
        and json.loads((out / "run_info.json").read_text())["data"]["train_sequences"] == 32
    )
    assert logs[-1]["loss"] <= logs[0]["loss"] / 2
    peak, end = 1e-2, 1e-4
    assert logs[0]["learning_rate"] == pytest.approx(peak)
    assert logs[-1]["learning_rate"] == pytest.approx(end + (peak - end) / 60)


def kill_after_step(cmd, out, step, cache, timeout=240):
    """Start ``cmd``, kill -9 its process group once ``step`` is in metrics.jsonl."""
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env_for(cache),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + timeout
    try:
        while time.time() < deadline and proc.poll() is None:
            if (out / "metrics.jsonl").is_file() and any(r["step"] >= step for r in metrics(out)):
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.02)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"


def test_kill_and_rerun_resumes_exactly(base, memorise_pool, memorised, tmp_path, cache_dir):
    reference, out = memorised, tmp_path / "run"
    cmd = [*PY, str(RECIPE), *memorise_args(base, memorise_pool, out)]
    kill_after_step(cmd, out, 9, cache_dir)
    assert not (out / "DONE").exists()
    k = max(
        int(c.name.split("-")[1]) for c in checkpoints(out) if (c / "trainer_state.json").is_file()
    )
    assert k <= 52 and k % 4 == 0

    info = (out / "run_info.json").read_bytes()  # another config over the folder: refused
    other = [*memorise_args(base, memorise_pool, out), "--per_ability", "3"]
    refused = run_in_process(other, cache_dir, check=False)
    assert refused.returncode == 2 and "differs in: per_ability" in refused.stderr
    assert (out / "run_info.json").read_bytes() == info and not (out / "DONE").exists()

    rerun = run_in_process(memorise_args(base, memorise_pool, out), cache_dir)
    assert f"resuming from {out / f'checkpoint-{k}'}" in rerun.stderr
    resumed = [r for r in train_logs(out) if r["session"] == 1]
    assert resumed[0]["step"] == k + 1
    want = {r["step"]: r["loss"] for r in train_logs(reference)}
    got = {r["step"]: r["loss"] for r in train_logs(out)}
    assert sorted(got) == list(range(1, 61))  # lines of the killed run past step k were dropped
    assert got[k + 5] == pytest.approx(want[k + 5], abs=1e-5)
    assert got[60] == pytest.approx(want[60], abs=1e-4)
    assert (out / "DONE").is_file() and not any(
        (c / "optimizer.pt").exists() for c in checkpoints(out)
    )


def speaker_rows(path, tok) -> torch.Tensor:
    weights = load_file(str(path / "model.safetensors"))
    ids = tok.convert_tokens_to_ids(list(SPEAKER_TOKENS))
    return weights["model.embed_tokens.weight"][ids], weights["lm_head.weight"][ids]


def test_lora_trains_the_added_speaker_rows(base, tmp_path, cache_dir):
    out = tmp_path / "run"
    keys = dict(use_peft="true", lora_r=4, lora_target_modules="all-linear", num_train_epochs=2)
    proc = run_in_process(recipe_args(base, out, **keys), cache_dir)
    assert "LoRA: training speaker-token rows [384, 385, 386] and lm_head" in proc.stderr
    config = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert config["trainable_token_indices"] == {"embed_tokens": [384, 385, 386]}
    tok = AutoTokenizer.from_pretrained(out)
    first = checkpoints(out)[0]
    merged = AutoModelForCausalLM.from_pretrained(out)  # the merged model loads as a plain model
    assert merged.get_input_embeddings().num_embeddings == 387
    # the rows after epoch 1 (checkpoint) and at the end differ: they are being trained
    from peft import PeftModel

    base_model = AutoModelForCausalLM.from_pretrained(base)
    base_model.resize_token_embeddings(387)
    after_one = PeftModel.from_pretrained(base_model, first).merge_and_unload()
    ids = tok.convert_tokens_to_ids(list(SPEAKER_TOKENS))
    emb_end, head_end = speaker_rows(out, tok)
    assert not torch.allclose(after_one.get_input_embeddings().weight[ids], emb_end)
    assert not torch.allclose(after_one.get_output_embeddings().weight[ids], head_end)


def test_qlora_loads_the_base_in_4bit_nf4(tmp_path, cache_dir):
    pytest.importorskip("bitsandbytes")
    base = make_base(tmp_path / "base64", hidden=64)  # bitsandbytes' CPU kernels: 64-wide blocks
    out = tmp_path / "run"
    keys = dict(
        use_peft="true",
        lora_r=4,
        lora_target_modules="all-linear",
        load_in_4bit="true",
        bnb_4bit_quant_type="nf4",
        num_train_epochs=1,
    )
    run_in_process(recipe_args(base, out, **keys), cache_dir)
    info = json.loads((out / "run_info.json").read_text())
    assert info["model"]["quantization"] == {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    assert info["model"]["loaded_in_4bit"] and info["model"]["peft"]
    assert info["model"]["trainable_parameters"] < info["model"]["parameters"]
    assert AutoModelForCausalLM.from_pretrained(out).get_input_embeddings().num_embeddings == 387


def test_bad_config_fails_before_loading_anything(tmp_path, cache_dir):
    out = tmp_path / "run"
    proc = run_recipe(
        PY, recipe_args(tmp_path / "no-base", out, schedule="weekly"), cache_dir, check=False
    )
    assert proc.returncode == 2
    assert "error: schedule: expected one of epochs, steps, got 'weekly'" in proc.stderr
    assert "Loading weights" not in proc.stderr and not out.exists()
