"""Stage 1 of evaluation: run a model once over a split and write what it produced.

One line per item of ``PRED.jsonl`` (sorted by type, idx; written atomically)::

    {"type", "idx", "question_format",
     "prediction": greedy output up to <eot>/EOS ("" for open-ended items),
     "letter_logits": {letter: logit at the FIRST decoding step} (mc items only),
     "choice_ppl": [ppl(gold), ppl(fine), ppl(coarse)] (question_format 1 only)}

Every prompt is rendered by the tokenizer's chat template (``doit.train.chat``).
Generation is batched (left padding, KV cache, items sorted by prompt length, one
``max_new_tokens`` per answer kind); the three choices of several items are scored in
one forward pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch

from doit.data import abilities as ab

MAX_NEW_TOKENS = {ab.MC: 8, ab.TF: 8, ab.MULTISELECT: 16, ab.CLOZE: 32, ab.MATH: 512}
LETTERS = ("A", "B", "C", "D", "E", "F")


def prompt_text(tokenizer, item: dict) -> str:
    """The instruction: every turn but the last assistant one, then the assistant marker."""
    return tokenizer.apply_chat_template(
        item["messages"][:-1], tokenize=False, add_generation_prompt=True
    )


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def letter_token_ids(tokenizer) -> dict[str, int]:
    """Token id of each letter as the model emits it right after the assistant marker
    (``A`` or ``▁A``, whatever this tokenizer produces there; a bare space-marker token
    before the letter is skipped)."""
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "?"}], tokenize=False, add_generation_prompt=True
    )
    base = encode(tokenizer, prompt)
    out = {}
    for letter in LETTERS:
        ids = encode(tokenizer, prompt + letter)
        new = ids[len(base) :] if ids[: len(base)] == base else []
        new = [t for t in new if tokenizer.decode([t]).strip()]
        if not new:
            raise ValueError(
                f"cannot find the token the model emits for {letter!r} after the prompt"
            )
        out[letter] = new[0]
    if len(set(out.values())) != len(out):
        raise ValueError(f"option letters share tokens in this tokenizer: {out}")
    return out


def stop_token_ids(tokenizer) -> list[int]:
    ids = {tokenizer.eos_token_id}
    eot = tokenizer.convert_tokens_to_ids("<eot>")
    if eot is not None and eot != tokenizer.unk_token_id:
        ids.add(eot)
    return sorted(i for i in ids if i is not None)


def batches(rows: list, size: int) -> Iterator[list]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def max_length(model, tokenizer) -> int:
    """The smaller of the model's and the tokenizer's limits (2048 when neither sets one)."""
    limits = [getattr(model.config, "max_position_embeddings", None), tokenizer.model_max_length]
    return min((x for x in limits if x and x < 10**8), default=2048)


@torch.inference_mode()
def generate_batch(
    model, tokenizer, prompts: list[list[int]], max_new: int, letter_ids
) -> list[tuple[str, list]]:
    """Greedy outputs and first-step logits for a batch of prompt token ids (left-padded)."""
    width = max(len(p) for p in prompts)
    pad, stops = tokenizer.pad_token_id, stop_token_ids(tokenizer)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    out = model.generate(
        input_ids=ids.to(model.device),
        attention_mask=mask.to(model.device),
        max_new_tokens=max_new,
        do_sample=False,
        num_beams=1,
        eos_token_id=stops,
        pad_token_id=pad,
        output_logits=True,
        return_dict_in_generate=True,
    )
    first = out.logits[0].float().cpu()
    results = []
    for row in range(len(prompts)):
        new = out.sequences[row, width:].tolist()
        cut = next((i for i, t in enumerate(new) if t in stops), len(new))
        text = tokenizer.decode(new[:cut], skip_special_tokens=True)
        results.append((text, [float(first[row, letter_ids[x]]) for x in LETTERS]))
    return results


@torch.inference_mode()
def sequence_ppl(model, sequences: list[tuple[list[int], int]], pad_id: int) -> list[float]:
    """Perplexity of the answer span of each (token ids, answer start) pair, one forward."""
    width = max(len(s) for s, _ in sequences)
    ids = torch.tensor([s + [pad_id] * (width - len(s)) for s, _ in sequences], device=model.device)
    mask = torch.tensor(
        [[1] * len(s) + [0] * (width - len(s)) for s, _ in sequences], device=model.device
    )
    logits = model(input_ids=ids, attention_mask=mask).logits.float()
    logprobs = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
    out = []
    for row, (seq, start) in enumerate(sequences):
        nll = -logprobs[row, start - 1 : len(seq) - 1].mean().item()
        out.append(math.exp(nll))
    return out


def choice_sequences(tokenizer, item: dict, limit: int) -> list[tuple[list[int], int]]:
    """Token ids of instruction + each choice (with <eot>), truncated from the left to ``limit``."""
    prompt = prompt_text(tokenizer, item)
    base = encode(tokenizer, prompt)
    seqs = []
    for choice in item["choices"]:
        full = tokenizer.apply_chat_template(
            item["messages"][:-1] + [{"role": "assistant", "content": choice}], tokenize=False
        )
        ids = encode(tokenizer, full)
        start = len(base) if ids[: len(base)] == base else len(encode(tokenizer, prompt.rstrip()))
        cut = max(0, len(ids) - limit)
        seqs.append((ids[cut:], max(1, start - cut)))
    return seqs


def predict_items(
    model,
    tokenizer,
    items: list[dict],
    batch_size: int = 16,
    max_new_tokens: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Predictions for ``items`` (any order in, sorted by (type, idx) out)."""
    limits = {**MAX_NEW_TOKENS, **(max_new_tokens or {})}
    letter_ids = letter_token_ids(tokenizer)
    limit = max_length(model, tokenizer)
    preds = {}
    gen = [it for it in items if it["answer_kind"] != ab.OPEN]
    for budget in sorted(
        {limits[it["answer_kind"]] for it in gen}
    ):  # kinds sharing a budget batch together
        rows = [
            (it, encode(tokenizer, prompt_text(tokenizer, it))[-(limit - budget) :])
            for it in gen
            if limits[it["answer_kind"]] == budget
        ]
        rows.sort(key=lambda r: (len(r[1]), r[0]["type"], r[0]["idx"]))
        for chunk in batches(rows, batch_size):
            outs = generate_batch(model, tokenizer, [p for _, p in chunk], budget, letter_ids)
            for (it, _), (text, logits) in zip(chunk, outs):
                preds[(it["type"], it["idx"])] = _record(it, text, logits)
    opened = [
        (it, choice_sequences(tokenizer, it, limit)) for it in items if it["answer_kind"] == ab.OPEN
    ]
    opened.sort(key=lambda r: (sum(len(s) for s, _ in r[1]), r[0]["type"], r[0]["idx"]))
    for chunk in batches(opened, max(1, batch_size // 3)):
        ppl = sequence_ppl(model, [s for _, seqs in chunk for s in seqs], tokenizer.pad_token_id)
        for i, (it, _) in enumerate(chunk):
            preds[(it["type"], it["idx"])] = {
                **_record(it, "", None),
                "choice_ppl": ppl[3 * i : 3 * i + 3],
            }
    return [preds[k] for k in sorted(preds)]


def _record(item: dict, text: str, logits: list[float] | None) -> dict[str, Any]:
    rec = {
        "type": item["type"],
        "idx": item["idx"],
        "question_format": item["question_format"],
        "prediction": text,
    }
    if item["answer_kind"] == ab.MC and logits is not None:
        rec["letter_logits"] = {x: logits[LETTERS.index(x)] for x in item["options"]}
    return rec


def resolve_dtype(name: str) -> torch.dtype:
    """``auto``: bf16 on a GPU that supports it, else fp32 (the reference evaluated in fp32)."""
    if name == "auto":
        gpu_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if gpu_bf16 else torch.float32
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def load_model(model_dir: str, adapter: str | None = None, dtype: str = "auto"):
    """Model (full, or base + PEFT adapter) and its tokenizer, ready for batched inference."""
    from pathlib import Path

    from transformers import AutoModelForCausalLM, AutoTokenizer

    import doit.models  # noqa: F401  (registers the resformer model type)

    tok_dir = (
        adapter if adapter and (Path(adapter) / "tokenizer_config.json").exists() else model_dir
    )
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    if not tokenizer.chat_template:
        raise ValueError(
            f"{tok_dir}: tokenizer has no chat_template; evaluation renders only through it "
            "(recipes/sft.py saves one with every model)"
        )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=resolve_dtype(dtype)).to(device)
    if adapter:
        from peft import PeftModel

        if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
            model.resize_token_embeddings(len(tokenizer))
        model = PeftModel.from_pretrained(model, adapter)
    model.eval()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
