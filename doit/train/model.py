"""The base model and tokenizer of a run: loading, speaker tokens, LoRA / QLoRA configs.

`load_tokenizer` gives the base's tokenizer prepared by `doit.train.chat.prepare_tokenizer`
(speaker tokens added when missing, the doit template set; or the base's own template for
``chat_format: native``). `load_model` loads the base (4-/8-bit through bitsandbytes when
asked) and resizes its embeddings to the tokenizer. `peft_config` is TRL's LoRA config from
`ModelConfig` plus doit's rule for the speaker tokens (chat_format doit): their embedding rows
are trained (``trainable_token_indices``) and an untied LM head is trained whole
(``modules_to_save``), so that no speaker row stays at its random initialisation. Importing `doit.models` registers the
ResFormer architecture with the Auto classes, so ResFormer bases load like any other.
"""

from __future__ import annotations

import logging
from pathlib import Path

from doit.train.chat import SPEAKER_TOKENS, prepare_tokenizer

log = logging.getLogger("doit.train")


def check_local_base(path: str) -> None:
    """Raise ConfigError unless ``path`` is a model directory here: doit never downloads (a
    missing path would otherwise be tried as a hub id and fail with a traceback)."""
    from doit.train.args import ConfigError

    where = Path(path)
    if not where.is_dir():
        raise ConfigError(
            "model_name_or_path",
            f"{path}: the directory does not exist (doit never downloads a model: give the "
            "base's local directory)",
        )
    if not (where / "config.json").is_file():
        raise ConfigError("model_name_or_path", f"{path}: no config.json (not a model directory)")


def load_tokenizer(args):
    """The base's tokenizer, prepared for ``args.run.chat_format`` (first reads the base dir)."""
    from transformers import AutoTokenizer

    m = args.model
    check_local_base(m.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(
        m.model_name_or_path,
        revision=m.model_revision,
        trust_remote_code=args.training.trust_remote_code,
    )
    added = prepare_tokenizer(tokenizer, chat_format=args.run.chat_format)
    if added:
        log.info("added %d speaker tokens to the tokenizer (vocab %d)", added, len(tokenizer))
    return tokenizer


def model_kwargs(args) -> dict:
    from trl import get_quantization_config

    m, t = args.model, args.training
    kwargs = dict(
        revision=m.model_revision,
        trust_remote_code=t.trust_remote_code,
        attn_implementation=m.attn_implementation,
        dtype=m.dtype,
    )
    quantization = get_quantization_config(m)
    if quantization is not None:
        on_device = {"": t.local_process_index} if args.launch.get("accelerator") else "cpu"
        kwargs.update(quantization_config=quantization, device_map=on_device)
    return {**kwargs, **(t.model_init_kwargs or {})}


def load_model(args, tokenizer):
    """The base model with embeddings sized to ``tokenizer`` (seeded: new rows are random)."""
    from transformers import AutoModelForCausalLM, set_seed

    import doit.models  # noqa: F401  (registers model_type resformer with the Auto classes)

    set_seed(args.training.seed)
    model = AutoModelForCausalLM.from_pretrained(
        args.model.model_name_or_path, **model_kwargs(args)
    )
    rows = model.get_input_embeddings().num_embeddings
    prepare_tokenizer(tokenizer, model, chat_format=args.run.chat_format)
    log.info(
        "base %s: %s, embedding rows %d -> %d",
        model.config.model_type,
        args.model.model_name_or_path,
        rows,
        model.get_input_embeddings().num_embeddings,
    )
    return model


def speaker_token_ids(tokenizer) -> list[int]:
    return sorted(tokenizer.convert_tokens_to_ids(list(SPEAKER_TOKENS)))


def peft_config(args, tokenizer, model):
    """TRL's LoRA config for ``args.model``, with the speaker-token rows trained: added rows are
    random, and a base that already lists the tokens has usually never seen them in text."""
    from trl import get_peft_config

    config = get_peft_config(args.model)
    if config is None:
        return None
    new_ids = speaker_token_ids(tokenizer) if args.run.chat_format == "doit" else []
    if new_ids:
        embed = _module_name(model, model.get_input_embeddings())
        indices = dict(config.trainable_token_indices or {})
        indices[embed] = sorted(set(indices.get(embed, [])) | set(new_ids))
        config.trainable_token_indices = indices
        tied = getattr(model.config.get_text_config(), "tie_word_embeddings", False)
        head = _module_name(model, model.get_output_embeddings())
        if not tied and head not in (config.modules_to_save or []):
            config.modules_to_save = [*(config.modules_to_save or []), head]
        log.info("LoRA: training speaker-token rows %s%s", new_ids, "" if tied else f" and {head}")
    return config


def _module_name(model, module) -> str:
    """The short name PEFT matches (``embed_tokens``, ``lm_head``) of one of ``model``'s modules."""
    return next(name for name, m in model.named_modules() if m is module).rsplit(".", 1)[-1]


def merge_adapter(args, tokenizer, adapter_dir: str, out_dir: str) -> None:
    """Reload the base unquantised, apply the adapter, merge, save a plain model + tokenizer."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    import doit.models  # noqa: F401

    unset_hf_deepspeed_config()  # one process loads the whole base: no ZeRO-3 partitioning
    m = args.model
    base = AutoModelForCausalLM.from_pretrained(
        m.model_name_or_path, revision=m.model_revision, dtype=m.dtype
    )
    prepare_tokenizer(tokenizer, base, chat_format=args.run.chat_format)
    merged = PeftModel.from_pretrained(base, adapter_dir).merge_and_unload()
    merged.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def describe(model, args) -> dict:
    """What run_info.json records about the model being trained."""
    m = args.model
    quantization = None
    if m.load_in_4bit:
        quantization = {"load_in_4bit": True, "bnb_4bit_quant_type": m.bnb_4bit_quant_type}
    elif m.load_in_8bit:
        quantization = {"load_in_8bit": True}

    def count(params):  # ZeRO-3 partitions parameters: ds_numel is the full size
        return sum(getattr(p, "ds_numel", p.numel()) for p in params)

    return {
        "model_type": model.config.model_type,
        "vocab_size": model.config.get_text_config().vocab_size,
        "quantization": quantization,
        "loaded_in_4bit": bool(getattr(model, "is_loaded_in_4bit", False)),
        "peft": bool(m.use_peft),
        "parameters": count(model.parameters()),
        "trainable_parameters": count(p for p in model.parameters() if p.requires_grad),
    }
