"""The model of a pretraining run: its ResFormerConfig, a seeded fresh model, parameter counts.

``params_total`` counts every parameter once; ``params_non_embedding`` leaves out the input
embedding and the LM head (Kaplan et al.'s N).
"""

from __future__ import annotations


def model_config(args, tokenizer=None):
    """The ResFormerConfig of the run (without a tokenizer: a stand-in vocabulary, to validate)."""
    from doit.models import ResFormerConfig

    if args.hidden_size % args.num_attention_heads:
        raise ValueError(
            f"hidden_size {args.hidden_size} is not a multiple of num_attention_heads "
            f"{args.num_attention_heads}"
        )
    return ResFormerConfig(
        vocab_size=len(tokenizer) if tokenizer is not None else 8,
        hidden_size=args.hidden_size,
        intermediate_size=args.intermediate_size,
        num_hidden_layers=args.num_hidden_layers,
        num_attention_heads=args.num_attention_heads,
        num_key_value_heads=args.num_key_value_heads or args.num_attention_heads,
        max_position_embeddings=args.block_size,
        rope_parameters={"rope_type": "default", "rope_theta": args.rope_theta},
        tie_word_embeddings=args.tie_word_embeddings,
        bos_token_id=getattr(tokenizer, "bos_token_id", None),
        eos_token_id=getattr(tokenizer, "eos_token_id", None),
        pad_token_id=getattr(tokenizer, "pad_token_id", None),
        value_mode=args.value_mode,
        value_learnable=args.value_learnable,
        value_lambdas=tuple(args.value_lambdas),
    )


def build_model(args, tokenizer, seed: int):
    """A freshly initialised fp32 model (seeded; built whole, DeepSpeed partitions it later)."""
    from transformers import set_seed

    from doit.models import ResFormerForCausalLM

    set_seed(seed)
    config = model_config(args, tokenizer)
    config._attn_implementation = args.attn_implementation
    return ResFormerForCausalLM(config).float()


def parameter_counts(model) -> dict[str, int]:
    """Total (shared tensors once) and non-embedding (no input embedding, no LM head) counts."""
    unique = {id(p): p for p in model.parameters()}
    embedding = {id(model.get_input_embeddings().weight), id(model.get_output_embeddings().weight)}
    total = sum(p.numel() for p in unique.values())
    non_embedding = sum(p.numel() for i, p in unique.items() if i not in embedding)
    return {"params_total": total, "params_non_embedding": non_embedding}
