"""The one loader of models and tokenizers, for fine-tuning and for evaluation.

    from doit.models import load, load_for_inference
    model, tokenizer = load("runs/sft/micro/n0016")                 # a fine-tuned model
    model, tokenizer = load("runs/ladder/vanilla_l/seed0", chat_format="doit")  # an untuned base
    model, tokenizer = load_for_inference("runs/sft/micro/n0016")   # on the device, eval mode

`load_tokenizer` reads a local directory (doit never downloads: a missing one is a
`FileNotFoundError` that says so) and, given a ``chat_format``, prepares the tokenizer through
`doit.models.chat.prepare_tokenizer` (speaker tokens, template); without one it must carry a chat
template already, as every fine-tuned model doit saves does. `load_model` seeds, loads the
weights (ResFormer/SVFormer through the Auto classes), resizes the embeddings to the tokenizer
(``prepare_tokenizer`` with the model: new speaker rows initialised the same way for training and
evaluation) and attaches a PEFT adapter when one is given.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("doit.models")


def check_local(path) -> None:
    """Raise FileNotFoundError unless ``path`` is a model directory on this machine."""
    where = Path(path)
    if not where.is_dir():
        raise FileNotFoundError(
            f"{path}: the directory does not exist (doit never downloads a model: give the "
            "base's local directory)"
        )
    if not (where / "config.json").is_file():
        raise FileNotFoundError(f"{path}: no config.json (not a model directory)")


def custom_code(path) -> str | None:
    """What custom code the model directory ``path``'s config.json asks for (its ``auto_map``
    entries), when its ``model_type`` is one neither transformers nor doit.models knows (a
    known type with an ``auto_map`` loads with the library's classes); else None."""
    import json

    from transformers import CONFIG_MAPPING  # doit's architectures: registered by doit.models

    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    auto_map = config.get("auto_map") if isinstance(config, dict) else None
    if not auto_map or config.get("model_type") in CONFIG_MAPPING:
        return None
    return ", ".join(f"{k}: {v}" for k, v in dict(auto_map).items())


def load_tokenizer(path, chat_format: str | None = None, **kwargs):
    """The tokenizer of ``path``, prepared for ``chat_format`` (``doit`` or ``native``);
    ``kwargs`` go to ``AutoTokenizer.from_pretrained``."""
    from transformers import AutoTokenizer

    from doit.models.chat import prepare_tokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path), **kwargs)
    if chat_format:
        added = prepare_tokenizer(tokenizer, chat_format=chat_format)
        if added:
            log.info("added %d speaker tokens to the tokenizer (vocab %d)", added, len(tokenizer))
    elif not tokenizer.chat_template:
        raise ValueError(
            f"{path}: tokenizer has no chat_template; an untuned base needs a chat format "
            "(--chat-format doit|native: the one its fine-tuned cells train with)"
        )
    return tokenizer


def load_model(
    path, tokenizer, chat_format: str | None = None, seed: int = 0, adapter=None, **kwargs
):
    """The model of ``path`` with embeddings sized to ``tokenizer`` (``set_seed(seed)`` first:
    rows added for new tokens are random), plus ``adapter`` when given; ``kwargs`` go to
    ``AutoModelForCausalLM.from_pretrained``."""
    from transformers import AutoModelForCausalLM, set_seed

    from doit.models.chat import prepare_tokenizer

    set_seed(seed)  # (this module's package, doit.models, registered ResFormer on import)
    model = AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    rows = model.get_input_embeddings().num_embeddings
    if chat_format:
        prepare_tokenizer(tokenizer, model, chat_format=chat_format)
    elif len(tokenizer) > rows:
        model.resize_token_embeddings(len(tokenizer))
    log.info(
        "model %s: %s, embedding rows %d -> %d",
        model.config.model_type,
        path,
        rows,
        model.get_input_embeddings().num_embeddings,
    )
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter))
    return model


def load(path, adapter=None, chat_format: str | None = None, seed: int = 0, **kwargs):
    """``(model, tokenizer)`` of a local model directory (with a PEFT ``adapter``, whose own
    tokenizer wins when it saved one)."""
    check_local(path)
    has_tokenizer = adapter and (Path(adapter) / "tokenizer_config.json").is_file()
    tokenizer = load_tokenizer(adapter if has_tokenizer else path, chat_format)
    model = load_model(path, tokenizer, chat_format, seed, adapter=adapter, **kwargs)
    return model, tokenizer


def resolve_dtype(name: str):
    """``auto``: bf16 on a GPU that supports it, else fp32 (the reference evaluated in fp32)."""
    import torch

    if name == "auto":
        gpu_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if gpu_bf16 else torch.float32
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def load_for_inference(
    path, adapter=None, dtype: str = "auto", chat_format: str | None = None, seed: int = 0
):
    """``load``, then the model on the GPU when there is one, in eval mode, with a left-padding
    tokenizer: what batched prediction needs.

    ``chat_format`` (``doit`` or ``native``) renders through ``prepare_tokenizer`` exactly as
    fine-tuning does, for an untuned base: speaker-token rows it adds are initialised as
    fine-tuning initialises them (``set_seed(seed)`` before loading). Without it the tokenizer's
    saved chat template is used (a fine-tuned model has one).
    """
    import torch

    model, tokenizer = load(path, adapter, chat_format, seed, dtype=resolve_dtype(dtype))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device).eval()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
