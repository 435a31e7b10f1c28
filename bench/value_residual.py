"""Cost of the value residual: step time, activation memory and KV cache, relative to vanilla.

    .venv/bin/python bench/value_residual.py            # micro config, CPU, fp32
    .venv/bin/python bench/value_residual.py --steps 30 --threads 4

All variants share one micro config (4 layers, hidden 128, vocab 4096, seq 256, batch 8) and run
in one process, interleaved step by step so that machine load hits them alike.
- step time: median wall time of forward + backward + AdamW step;
- activation memory: bytes of the distinct storages autograd saves for backward during one
  forward (`torch.autograd.graph.saved_tensors_hooks`), parameters excluded;
- KV cache: bytes of the live cache object after the last forward call of `generate()`.
Goals for resformer, fixed and learnable mix: step time <= 1.05x, activation memory <= 1.02x
vanilla (the learnable mix recomputes V_n for backward: a v_proj of time for no stored V_n).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from doit.models import ResFormerForCausalLM, cache_nbytes, saved_activation_bytes
from doit.testing import tiny_model

VARIANTS = {  # name: (value mode, extra config fields)
    "vanilla": ("vanilla", {}),
    "resformer": ("resformer", {}),
    "resformer-learnable": ("resformer", {"value_learnable": True}),
    "svformer": ("svformer", {}),
}


def build(mode: str, fields: dict, args) -> ResFormerForCausalLM:
    heads = args.hidden // 32
    return tiny_model(
        mode,
        "sdpa",
        seed=0,
        hidden_size=args.hidden,
        intermediate_size=int(3.5 * args.hidden),
        num_hidden_layers=args.layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        vocab_size=args.vocab,
        max_position_embeddings=args.seq + 64,
        **fields,
    )


def train_step(model, optimizer, ids) -> float:
    start = time.perf_counter()
    model(ids, labels=ids, use_cache=False).loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def generation_cache_bytes(model, prompt, new_tokens: int) -> int:
    """Bytes of the cache generate() passes to the model, read after its last forward call."""
    sizes = []
    hook = model.register_forward_hook(
        lambda module, args, kwargs, output: sizes.append(cache_nbytes(kwargs["cache"])),
        with_kwargs=True,
    )
    with torch.no_grad():
        model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=0,
        )
    hook.remove()
    return sizes[-1]


def main(args) -> None:
    torch.set_num_threads(args.threads)
    ids = torch.randint(
        0, args.vocab, (args.batch, args.seq), generator=torch.Generator().manual_seed(0)
    )
    models = {name: build(*variant, args).train() for name, variant in VARIANTS.items()}
    optimizers = {n: torch.optim.AdamW(m.parameters(), lr=1e-4) for n, m in models.items()}
    times = {name: [] for name in models}
    for step in range(args.warmup + args.steps):
        for name, model in models.items():  # interleaved: same load for every variant
            elapsed = train_step(model, optimizers[name], ids)
            if step >= args.warmup:
                times[name].append(elapsed)

    memory = {name: saved_activation_bytes(model, ids) for name, model in models.items()}
    prompt = ids[:, : args.seq // 2]
    cache = {
        name: generation_cache_bytes(models[name].eval(), prompt, args.new_tokens)
        for name in ("vanilla", "svformer")
    }
    report(models, times, memory, cache, args)


def report(models, times, memory, cache, args) -> None:
    print(
        f"config: {args.layers} layers, hidden {args.hidden}, vocab {args.vocab}, seq {args.seq}, "
        f"batch {args.batch}, fp32, CPU x{torch.get_num_threads()} threads, sdpa; "
        f"{args.steps} timed steps after {args.warmup} warm-up"
    )
    base_time = statistics.median(times["vanilla"])
    print(f"{'variant':<20} {'params':>9} {'step ms':>8} {'time x':>7} {'act MiB':>8} {'act x':>7}")
    for name, model in models.items():
        median = statistics.median(times[name])
        params = sum(p.numel() for p in model.parameters())
        print(
            f"{name:<20} {params:>9,} {median * 1e3:>8.1f} {median / base_time:>7.3f} "
            f"{memory[name] / 2**20:>8.1f} {memory[name] / memory['vanilla']:>7.4f}"
        )
    layers = args.layers
    print(
        f"KV cache in generate() ({args.seq // 2} prompt + {args.new_tokens} new tokens): "
        f"vanilla {cache['vanilla']:,} B, svformer {cache['svformer']:,} B, ratio "
        f"{cache['svformer'] / cache['vanilla']:.4f} (expected (L+1)/(2L) = "
        f"{(layers + 1) / (2 * layers):.4f})"
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=15, help="timed steps per variant")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
