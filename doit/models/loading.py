"""The one loader of models and tokenizers, for fine-tuning and for evaluation.

    from doit.models import load
    model, tokenizer = load("runs/sft/micro/n0016")                 # a fine-tuned model
    model, tokenizer = load("runs/ladder/vanilla_l/seed0", chat_format="doit")  # an untuned base

`load_tokenizer` reads a local directory (doit never downloads: a missing one is a
`FileNotFoundError` that says so) and, given a ``chat_format``, prepares the tokenizer through
`doit.train.chat.prepare_tokenizer` (speaker tokens, template); without one it must carry a chat
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


def load_tokenizer(path, chat_format: str | None = None, **kwargs):
    """The tokenizer of ``path``, prepared for ``chat_format`` (``doit`` or ``native``);
    ``kwargs`` go to ``AutoTokenizer.from_pretrained``."""
    from transformers import AutoTokenizer

    from doit.train.chat import prepare_tokenizer

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

    from doit.train.chat import prepare_tokenizer

    set_seed(seed)  # (this module's package, doit.models, registered ResFormer on import)
    model = AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    rows = model.get_input_embeddings().num_embeddings
    if chat_format:
        prepare_tokenizer(tokenizer, model, chat_format=chat_format)
    elif len(tokenizer) > rows:
        model.resize_token_embeddings(len(tokenizer))
    log.info("model %s: %s, embedding rows %d -> %d", model.config.model_type, path, rows,
             model.get_input_embeddings().num_embeddings)  # fmt: skip
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
