"""The base model and tokenizer of a run: loading, speaker tokens, LoRA / QLoRA configs.

`load_base_tokenizer` and `load_base_model` call doit's one loader (`doit.models.load_tokenizer`,
`load_model`) with the run's arguments: the base's tokenizer prepared for ``chat_format``
(speaker tokens added when missing, the doit template set; or the base's own template for
``native``), then the base (4-/8-bit through bitsandbytes when asked) with its embeddings
resized to the tokenizer. `peft_config` is TRL's LoRA config from
`ModelConfig` plus doit's rule for the speaker tokens (chat_format doit): their embedding rows
are trained (``trainable_token_indices``) and an untied LM head is trained whole
(``modules_to_save``), so that no speaker row stays at its random initialisation.
"""

from __future__ import annotations

import logging

from doit.models.chat import SPEAKER_TOKENS

log = logging.getLogger("doit.train")


def load_base_tokenizer(args):
    """The base's tokenizer, prepared for ``args.run.chat_format`` (first checks the base dir)."""
    from doit.models import check_local
    from doit.models import load_tokenizer as load
    from doit.models.loading import custom_code
    from doit.train.errors import ConfigError

    m = args.model
    try:
        check_local(m.model_name_or_path)
    except FileNotFoundError as e:
        raise ConfigError("model_name_or_path", str(e)) from None
    code = custom_code(m.model_name_or_path)
    if code and not args.training.trust_remote_code:
        raise ConfigError(
            "model_name_or_path",
            f"{m.model_name_or_path}/config.json asks for the base's own code ({code}), "
            "which doit does not run unless trust_remote_code: true",
        )
    return load(
        m.model_name_or_path,
        args.run.chat_format,
        revision=m.model_revision,
        trust_remote_code=args.training.trust_remote_code,
    )


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


def load_base_model(args, tokenizer):
    """The base model with embeddings sized to ``tokenizer`` (seeded: new rows are random)."""
    from doit.models import load_model as load

    return load(
        args.model.model_name_or_path,
        tokenizer,
        args.run.chat_format,
        args.training.seed,
        **model_kwargs(args),
    )


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
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    from doit.models import load_model

    unset_hf_deepspeed_config()  # one process loads the whole base: no ZeRO-3 partitioning
    m = args.model
    adapted = load_model(
        m.model_name_or_path,
        tokenizer,
        args.run.chat_format,
        args.training.seed,
        adapter=adapter_dir,
        revision=m.model_revision,
        dtype=m.dtype,
    )
    merged = adapted.merge_and_unload()
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
