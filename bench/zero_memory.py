"""DeepSpeed's own memory estimates for the study's full fine-tuning runs (no GPU needed).

    python bench/zero_memory.py            # 7B and 13B on 8 GPUs, 33B on 2 nodes x 8 GPUs
    python bench/zero_memory.py --gpus 8 --nodes 1

Prints `estimate_zero2_model_states_mem_needs_all_cold` and
`estimate_zero3_model_states_mem_needs_all_cold` for LLaMA-1 shapes with Chinese-LLaMA-Plus's
vocabulary (49,953 tokens) plus doit's 3 speaker tokens and an untied LM head. These cover
model states only (fp16/bf16 weights, gradients, fp32 Adam states): activations come on top
(gradient checkpointing keeps them to roughly one layer's input per sequence).
"""

from __future__ import annotations

import argparse
import contextlib
import io

VOCAB = 49953 + 3  # Chinese-LLaMA-Plus tokenizer + <user> <assistant> <eot>
# name: (hidden, layers, intermediate) of LLaMA-1; (GPUs per node, nodes) of the study's launch
SHAPES = {
    "7B": (4096, 32, 11008),
    "13B": (5120, 40, 13824),
    "33B": (6656, 60, 17920),
}
LAUNCH = {"7B": (8, 1), "13B": (8, 1), "33B": (8, 2)}


def llama_params(
    hidden: int, layers: int, intermediate: int, vocab: int = VOCAB
) -> tuple[int, int]:
    """(total parameters, largest layer's parameters) of a LLaMA with an untied LM head."""
    attention = 4 * hidden * hidden
    mlp = 3 * hidden * intermediate
    norms = 2 * hidden
    embeddings = vocab * hidden
    total = 2 * embeddings + layers * (attention + mlp + norms) + hidden
    return total, embeddings


def estimates(name: str, gpus: int, nodes: int) -> str:
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs_all_cold
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs_all_cold

    total, largest = llama_params(*SHAPES[name])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print(f"== {name}: {total / 1e9:.2f}B parameters, largest layer {largest / 1e6:.0f}M ==")
        print("-- ZeRO-2")
        estimate_zero2_model_states_mem_needs_all_cold(
            total, num_gpus_per_node=gpus, num_nodes=nodes
        )
        print("-- ZeRO-3")
        estimate_zero3_model_states_mem_needs_all_cold(
            total, largest, num_gpus_per_node=gpus, num_nodes=nodes
        )
    return out.getvalue()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, help="GPUs per node (default: the study's launch)")
    parser.add_argument("--nodes", type=int, help="nodes (default: the study's launch)")
    parser.add_argument("--sizes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    args = parser.parse_args(argv)
    for name in args.sizes:
        gpus, nodes = LAUNCH[name]
        print(estimates(name, args.gpus or gpus, args.nodes or nodes))


if __name__ == "__main__":
    main()
