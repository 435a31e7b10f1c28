"""Stage 1 of evaluation: run a model once over a split and write what it produced.

One line per item of ``PRED.jsonl`` (sorted by type, idx; written atomically)::

    {"type", "idx", "question_format", "answer_kind",
     "prediction": greedy output up to the first stop token ("" for ranked kinds),
     "max_new_tokens": this item's budget (the kind's, clamped to the context),
     "hit_budget": true when the output ran to that budget without a stop token,
     "letter_logits": {letter: summed log-probability of the letter's tokens at the first
                       answer position} (kinds with letter scores: mc; the key keeps its
                       old name),
     ranked kinds (open, and the text formulation's mc_text, tf_text, multiselect_text), one
     entry per ranked text, gold first (an open item's [gold, fine, coarse]):
     "choice_ppl": perplexity of the text's span (its tokens and the end of turn),
     "choice_logprob": the span's summed log-probability after the prompt,
     "choice_tokens": the span's tokens, "choice_chars": the text's characters,
     "choice_uncond": the span's summed log-probability after an empty question
                      (``<user><eot><assistant>`` in the doit format: PMI's denominator),
     "choice_full_sequences": true when the prompt's tokens do not begin every text's full
                      sequence (the template renders the assistant's turn otherwise), so the
                      texts were scored in their own full sequences (absent otherwise),
     "error": why the item got no output (a prompt, or a prompt and a ranked text, longer than
              the context: nothing is ever cut)}

and ``PRED.rules.json`` beside it: ``prediction_rules`` (the formulation the items were
rendered in, the normalisation the text formulation's ranking is scored with (``norm``, the
one chosen on the micro study's valid split: ``doit.eval.kinds.DEFAULT_NORM``), chat format, context, each kind's budget, how many items hit it or did not fit,
how many ranked items were scored in full sequences, stop tokens, letter scoring, what the
ranked fields hold).

Every prompt is rendered by the tokenizer's chat template (``doit.models.chat``); an untuned
base gets the template its fine-tuned cells train with (``doit.models.load_for_inference(chat_format=...)``).
What an item gets follows its answer kind (``doit.data.kinds.KINDS``): a generated kind
is decoded greedily and batched (left padding, KV cache, items sorted by prompt length),
with the kind's budget (the study's 1,024 new tokens) unless overridden, clamped to what the
context leaves after the prompt (the prompt is never cut); a ranked kind's texts are scored
(summed log-probabilities, conditional and unconditional), every sequence packed by its
tokens into token-tree rows under a 4D mask (``packed_logprobs``: each prompt read once,
texts that begin alike sharing those tokens, every token at the position and with the context
of its own full sequence), the output layer applied only at the scored positions (README:
"Ranked texts: the prompt read once"); an item whose prompt and text do not fit the context
whole gets an ``error`` and no scores. Which keys
a line carries per kind is ``doit.eval.kinds``' to read back.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from doit.data import kinds as ak
from doit.data.options import OPTION_LETTERS
from doit.eval.kinds import DEFAULT_NORM, behaviour
from doit.models.chat import speaker_template

LETTER_SCORING = (
    "sum of the log-probabilities of the letter's whole token sequence (as the template "
    "renders it right after the assistant marker) at the first answer position"
)
RANKED_SCORING = (
    "per ranked text (gold first): the summed log-probability of its span (the text and the end "
    "of turn, as the template renders the assistant's turn) after the prompt (choice_logprob) "
    "and after an empty question (choice_uncond), the span's tokens (choice_tokens), the text's "
    "characters (choice_chars) and the span's perplexity (choice_ppl); the prompt is never cut; "
    "the prompt is read once and each text scored as its continuation (positions and context as "
    "in its own full sequence), unless its tokens do not begin every text's sequence"
)
ATTENTION_WITH_4D_MASKS = ("eager", "sdpa")  # attention implementations ranking can pack for
SCORING_PATHS = ("shared", "full")  # ranking: packed token trees, or one sequence per text
PACK_WIDTH = 128  # token-tree nodes a packed row holds (a longer sequence gets a row alone)
RANK_BATCH = 4  # ranked texts a forward pass, per item of the generation batch
EMPTY_QUESTION = {
    "messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}]
}


def budgets(overrides: dict[str, int] | None = None) -> dict[str, int]:
    """``max_new_tokens`` of each generated answer kind: its default budget unless overridden."""
    overrides = overrides or {}
    unknown = sorted(set(overrides) - set(ak.GENERATED_KINDS))
    if unknown:
        raise ValueError(
            f"--max-new-tokens: unknown answer kind {', '.join(unknown)}; "
            f"expected one of {', '.join(ak.GENERATED_KINDS)}"
        )
    for kind, n in overrides.items():
        if n < 1:
            raise ValueError(f"--max-new-tokens: {kind}={n}: expected at least 1")
    return {k.name: overrides.get(k.name, k.default_budget) for k in ak.KINDS if k.generated}


def prompt_text(tokenizer, item: dict) -> str:
    """The instruction: every turn but the last assistant one, then the assistant marker."""
    return tokenizer.apply_chat_template(
        item["messages"][:-1], tokenize=False, add_generation_prompt=True
    )


def encode(tokenizer, text: str) -> list[int]:
    """``text``'s token ids, no special tokens added: a fast tokenizer's backend directly (the
    same ids without the wrapper's per-call overhead, which ranking pays once per text)."""
    if getattr(tokenizer, "is_fast", False):
        return tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def letter_sequences(tokenizer) -> dict[str, list[int]]:
    """Token ids of each letter as the template renders it right after the assistant marker:
    ``[A]``, ``[▁A]``, or ``[▁, A]`` where the letter is a space marker and then the letter."""
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "?"}], tokenize=False, add_generation_prompt=True
    )
    base = encode(tokenizer, prompt)
    out = {}
    for letter in OPTION_LETTERS:
        ids = encode(tokenizer, prompt + letter)
        if ids[: len(base)] != base or len(ids) == len(base):
            raise ValueError(
                f"cannot find the tokens the model emits for {letter!r} after the prompt"
            )
        out[letter] = ids[len(base) :]
    if len({tuple(s) for s in out.values()}) != len(out):
        raise ValueError(f"option letters share their tokens in this tokenizer: {out}")
    return out


def stop_token_ids(tokenizer) -> list[int]:
    """eos, and every special token the chat template writes around messages: the end of
    turn and the speaker markers (``<eot>``, ``<user>``, ``<assistant>``; ``<|im_end|>``,
    ``<|im_start|>``). Generation stops at the first of them."""
    turns = [{"role": r, "content": "?"} for r in ("user", "assistant", "user")]
    rendered = set(encode(tokenizer, tokenizer.apply_chat_template(turns, tokenize=False)))
    special = set(tokenizer.all_special_ids) | {
        i for i, t in tokenizer.added_tokens_decoder.items() if t.special
    }
    return sorted(i for i in (rendered & special) | {tokenizer.eos_token_id} if i is not None)


def chat_format_of(tokenizer) -> str:
    """``doit`` when the tokenizer renders with the speaker template, else ``native``."""
    return "doit" if tokenizer.chat_template == speaker_template() else "native"


def batches(rows: list, size: int) -> Iterator[list]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def max_length(model, tokenizer) -> int:
    """The smaller of the model's and the tokenizer's limits (2048 when neither sets one)."""
    limits = [getattr(model.config, "max_position_embeddings", None), tokenizer.model_max_length]
    return min((x for x in limits if x and x < 10**8), default=2048)


@torch.inference_mode()
def generate_batch(
    model, tokenizer, prompts: list[list[int]], max_new: int
) -> list[tuple[list[int], bool, torch.Tensor]]:
    """(new token ids before the first stop token, whether a stop token came, first-step
    log-probabilities) of each prompt of a batch (left-padded), greedy, ``max_new`` at most."""
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
    first = torch.log_softmax(out.logits[0].float(), dim=-1).cpu()
    results = []
    for row in range(len(prompts)):
        new = out.sequences[row, width:].tolist()
        cut = next((i for i, t in enumerate(new) if t in stops), None)
        results.append((new if cut is None else new[:cut], cut is not None, first[row]))
    return results


def generate_within(
    model, tokenizer, prompts: list[list[int]], budgets: list[int]
) -> list[tuple[list[int], bool, torch.Tensor]]:
    """``generate_batch`` for rows with budgets of their own: the batch runs to the smallest
    budget left, then the rows with room left go on from where they stopped (greedy decoding
    continues as if uninterrupted), so each row gets exactly its budget whatever the batch."""
    new, stopped, first = [[] for _ in prompts], [False] * len(prompts), [None] * len(prompts)
    active = list(range(len(prompts)))
    while active:
        step = min(budgets[i] - len(new[i]) for i in active)
        rows = generate_batch(model, tokenizer, [prompts[i] + new[i] for i in active], step)
        for i, (ids, stop, logprobs) in zip(active, rows):
            new[i] += ids
            stopped[i] = stop or not ids  # no token and no stop: nothing more will come
            first[i] = logprobs if first[i] is None else first[i]
        active = [i for i in active if not stopped[i] and len(new[i]) < budgets[i]]
    return list(zip(new, stopped, first))


@torch.inference_mode()
def span_logprobs(model, sequences: list[tuple[list[int], int]], pad_id: int) -> list[float]:
    """Summed log-probability of the span ``ids[start:]`` of each (ids, start), in one forward
    pass: the sequences packed as token trees (``pack_rows``, ``packed_logprobs``), the output
    layer applied only where a span is scored."""
    rows = pack_rows(sequences)
    sums = packed_logprobs(model, [[sequences[i] for i in row] for row in rows], pad_id)
    return _unpack(rows, sums, len(sequences))


def sequence_ppl(model, sequences: list[tuple[list[int], int]], pad_id: int) -> list[float]:
    """Perplexity of the answer span of each (token ids, answer start) pair, one forward."""
    sums = span_logprobs(model, sequences, pad_id)
    return [math.exp(-s / (len(seq) - start)) for s, (seq, start) in zip(sums, sequences)]


@torch.inference_mode()
def span_logprobs_full_logits(
    model, sequences: list[tuple[list[int], int]], pad_id: int
) -> list[float]:
    """``span_logprobs`` as it was before shared prefixes: one right-padded row per sequence
    and the model's logits over every position of the batch (the full path's scorer, kept for
    ``predict_items(path="full")``: the parity test and ``bench/eval_throughput.py``)."""
    width = max(len(s) for s, _ in sequences)
    ids = torch.tensor([s + [pad_id] * (width - len(s)) for s, _ in sequences], device=model.device)
    mask = torch.tensor(
        [[1] * len(s) + [0] * (width - len(s)) for s, _ in sequences], device=model.device
    )
    logits = model(input_ids=ids, attention_mask=mask).logits
    out = []
    for row, (seq, start) in enumerate(sequences):  # the span's positions only
        span = torch.log_softmax(logits[row, start - 1 : len(seq) - 1].float(), dim=-1)
        out.append(span.gather(-1, ids[row, start : len(seq), None]).sum().item())
    return out


def decoder_and_head(model) -> tuple[Any, Any]:
    """(the base model that gives hidden states, the output layer): ranking applies the head
    itself, at the scored positions only, so a model whose logits are more than
    ``head(hidden)`` (a soft-cap, a scale) or whose attention takes no 4D mask is refused."""
    config = model.config
    capped = getattr(config, "final_logit_softcapping", None) is not None
    scaled = any(getattr(config, k, 1.0) != 1.0 for k in ("logit_scale", "logits_scaling"))
    if capped or scaled:
        raise ValueError(
            f"ranking: model_type {getattr(config, 'model_type', '?')!r} soft-caps or scales "
            "its logits, which span scoring (lm_head on hidden states) does not reproduce"
        )
    attn = getattr(config, "_attn_implementation", None)
    if attn not in ATTENTION_WITH_4D_MASKS:
        raise ValueError(
            f"ranking packs a prompt's texts under a 4D attention mask: it needs "
            f"attn_implementation {' or '.join(ATTENTION_WITH_4D_MASKS)}, got {attn!r}"
        )
    return model.get_decoder(), model.get_output_embeddings()


def group_logprobs(
    model, groups: list[tuple[list[int], list[list[int]]]], pad_id: int
) -> list[list[float]]:
    """Summed log-probability of each continuation of each (prefix, continuations) group, in
    one forward pass, a group a packed row (``packed_logprobs``)."""
    rows = [[(prefix + cont, len(prefix)) for cont in conts] for prefix, conts in groups]
    return packed_logprobs(model, rows, pad_id)


def pack_rows(
    sequences: list[tuple[list[int], int]], width: int = PACK_WIDTH, max_texts: int | None = None
) -> list[list[int]]:
    """Indices of ``sequences`` in packed rows: sorted by their tokens, so sequences that begin
    alike (an item's texts after its prompt; prompts that open alike) are neighbours and share
    a row's nodes; a row is closed when the next sequence's new tokens would take it past
    ``width`` nodes (a longer sequence gets a row of its own) or it holds ``max_texts``."""
    order = sorted(range(len(sequences)), key=lambda i: sequences[i][0])
    rows: list[list[int]] = []
    nodes, previous = 0, []
    for i in order:
        ids = sequences[i][0]
        new = len(ids) - _common_prefix(previous, ids)
        if not rows or nodes + new > width or len(rows[-1]) == max_texts:
            rows.append([])
            nodes, new = 0, len(ids)
        rows[-1].append(i)
        nodes, previous = nodes + new, ids
    return rows


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _unpack(rows: list[list[int]], sums: list[list[float]], n: int) -> list[float]:
    """Per-row results back in the sequences' order."""
    out = [0.0] * n
    for row, values in zip(rows, sums):
        for i, value in zip(row, values):
            out[i] = value
    return out


@torch.inference_mode()
def packed_logprobs(
    model, rows: list[list[tuple[list[int], int]]], pad_id: int
) -> list[list[float]]:
    """Summed log-probability of the span ``ids[start:]`` of each (ids, start) of each row, in
    one forward pass. A row holds its sequences as one token tree (sequences that begin alike
    share those tokens' nodes), each node at the position it has in its own sequence and
    seeing only its ancestors and itself (a 4D mask): every token has exactly the context,
    positions and first-layer values (the value residual) of its own full sequence, and no
    sequence sees another's tokens. The decoder runs to hidden states; the head and the
    log-softmax see each position that predicts a span token, once."""
    decoder, head = decoder_and_head(model)
    additive = model.config._attn_implementation != "sdpa"  # sdpa takes a boolean mask
    dtype = getattr(model, "dtype", torch.float32) if additive else None
    batch = _pack(rows, pad_id, model.device, dtype)
    hidden = decoder(
        input_ids=batch.ids,
        attention_mask=batch.mask,
        position_ids=batch.positions,
        use_cache=False,
    ).last_hidden_state
    flat = hidden.reshape(-1, hidden.shape[-1])  # a view: (rows x width, hidden)
    where, which = torch.unique(batch.columns, return_inverse=True)
    logprobs = torch.log_softmax(head(flat[where]).float(), dim=-1)  # (positions, vocab)
    picked = logprobs[which, batch.targets]
    sums = torch.zeros(batch.n_texts, dtype=picked.dtype, device=picked.device)
    values = iter(sums.index_add_(0, batch.owners, picked).tolist())
    return [[next(values) for _ in row] for row in rows]


@dataclass
class _Packed:
    ids: torch.Tensor  # (rows, width) token ids, right-padded
    positions: torch.Tensor  # (rows, width) each node's position in its own sequence
    mask: torch.Tensor  # (rows, 1, width, width): True (bool) or 0 (additive) where a query sees
    columns: torch.Tensor  # (scored,) flat index (row x width + column) predicting a target
    targets: torch.Tensor  # (scored,) the token it is scored on
    owners: torch.Tensor  # (scored,) index of the sequence it belongs to, over the batch
    n_texts: int


def _pack(rows, pad_id: int, device, dtype=None) -> _Packed:
    """Each row's token tree (``_tree_row``: columns in preorder, so a node's descendants are
    the columns up to its subtree's end); a query sees its ancestors and itself (a pad sees
    itself: no empty row, and no real query sees a pad). A boolean mask, or (``dtype`` given)
    an additive one."""
    trees = [_tree_row(row) for row in rows]
    width = max(len(ids) for ids, *_ in trees)
    ends = np.tile(np.arange(1, width + 1), (len(rows), 1))  # a pad's subtree: itself
    ids, positions, columns, targets = [], [], [], []
    for r, ((tree_ids, tree_pos, tree_ends, scored), row) in enumerate(zip(trees, rows)):
        ends[r, : len(tree_ends)] = tree_ends
        ids.append(tree_ids + [pad_id] * (width - len(tree_ids)))
        positions.append(tree_pos + [0] * (width - len(tree_ids)))
        for (seq, start), cols in zip(row, scored):
            columns += [r * width + c for c in cols]
            targets += seq[start:]
    lengths = [len(seq) - start for row in rows for seq, start in row]
    owners = [text for text, n in enumerate(lengths) for _ in range(n)]
    query, key = np.arange(width)[:, None], np.arange(width)[None, :]
    sees = (key <= query)[None] & (query[None] < ends[:, None, :])  # key an ancestor-or-self
    mask = torch.from_numpy(sees[:, None]).to(device)
    if dtype is not None:
        mask = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(
            ~mask, torch.finfo(dtype).min
        )

    def tensor(values):
        return torch.tensor(values, dtype=torch.long, device=device)

    return _Packed(
        tensor(ids),
        tensor(positions),
        mask,
        tensor(columns),
        tensor(targets),
        tensor(owners),
        len(lengths),
    )


def _tree_row(row: list[tuple[list[int], int]]) -> tuple[list, list, list, list]:
    """A row's sequences as one token tree, inserted in token order so that the columns are a
    preorder: (node ids, their positions (depths), each column's subtree end (the first later
    column not below it), and per sequence, in the row's order, the columns that predict its
    span's tokens)."""
    ids, positions, scored = [], [], [None] * len(row)
    nodes: dict[tuple[int, int], int] = {}  # (parent column, token) -> column
    for i in sorted(range(len(row)), key=lambda i: row[i][0]):
        seq, start = row[i]
        at, path = -1, []
        for token in seq:
            if (at, token) not in nodes:
                nodes[(at, token)] = len(ids)
                ids.append(token)
                positions.append(positions[at] + 1 if at >= 0 else 0)
            at = nodes[(at, token)]
            path.append(at)
        scored[i] = path[start - 1 : len(seq) - 1]
    ends, open_ = [len(ids)] * len(ids), []  # open_: the current path, by depth
    for col, depth in enumerate(positions):
        while open_ and positions[open_[-1]] >= depth:
            ends[open_.pop()] = col
        open_.append(col)
    return ids, positions, ends, scored


def choice_sequences(
    tokenizer, item: dict, limit: int, texts: list[str] | None = None
) -> list[tuple[list[int], int]] | None:
    """(token ids of instruction + text as the assistant's turn, with <eot>; where the text
    starts) for each text (default: the item's choices); None when one is longer than
    ``limit``: a prompt is never cut."""
    return prompt_and_choice_sequences(tokenizer, item, limit, texts)[1]


def prompt_and_choice_sequences(
    tokenizer, item: dict, limit: int, texts: list[str] | None = None
) -> tuple[list[int], list[tuple[list[int], int]] | None]:
    """(the prompt's token ids, ``choice_sequences``)."""
    prompt = prompt_text(tokenizer, item)
    base = encode(tokenizer, prompt)
    texts = item["choices"] if texts is None else texts
    fulls = [encode(tokenizer, t) for t in _turns(tokenizer, item, texts)]
    seqs = []
    for ids in fulls:
        if len(ids) > limit:
            return base, None
        start = len(base) if ids[: len(base)] == base else len(encode(tokenizer, prompt.rstrip()))
        seqs.append((ids, max(1, start)))
    return base, seqs


def shares_prompt(prompt: list[int], seqs: list[tuple[list[int], int]]) -> bool:
    """Whether the prompt's tokens begin every text's full sequence, so the texts can be
    scored as continuations of one pass over the prompt (a template may render the assistant's
    turn so that they do not: then each text is scored in its own full sequence)."""
    return bool(prompt) and all(ids[: len(prompt)] == prompt for ids, _ in seqs)


_SLOT = "\x00doit-answer\x00"


def _turns(tokenizer, item: dict, texts: list[str]) -> list[str]:
    """The chat template's rendering of the item's turns with each text as the assistant's
    reply: rendered once around a placeholder and filled in, unless the template changes the
    reply (then rendered per text)."""

    def render(reply: str) -> str:
        return tokenizer.apply_chat_template(
            item["messages"][:-1] + [{"role": "assistant", "content": reply}], tokenize=False
        )

    frame = render(_SLOT)
    if frame.count(_SLOT) == 1 and texts:
        head, tail = frame.split(_SLOT)
        filled = [head + t + tail for t in texts]
        if filled[0] == render(texts[0]):
            return filled
    return [render(t) for t in texts]


def predict_items(
    model,
    tokenizer,
    items: list[dict],
    batch_size: int = 16,
    max_new_tokens: dict[str, int] | None = None,
    *,
    path: str = "shared",
) -> list[dict[str, Any]]:
    """Predictions for ``items`` (any order in, sorted by (type, idx) out); ``path``: how
    ranked texts are scored (``_rank``; the default reads each prompt once)."""
    limits, context = budgets(max_new_tokens), max_length(model, tokenizer)
    preds, rows = {}, []
    for it in items:
        if not ak.kind(it["answer_kind"]).generated:
            continue
        prompt = encode(tokenizer, prompt_text(tokenizer, it))
        room = context - len(prompt)
        if room < 1:  # never cut the prompt to make room: the item gets no output
            preds[(it["type"], it["idx"])] = {
                **_record(it, ""),
                "error": f"prompt of {len(prompt)} tokens leaves no room in the context "
                f"of {context}",
            }
            continue
        rows.append((it, prompt, min(limits[it["answer_kind"]], room)))
    preds.update(_generate(model, tokenizer, rows, batch_size, limits))
    preds.update(_rank(model, tokenizer, items, batch_size, context, path))
    return [preds[k] for k in sorted(preds)]


def _generate(model, tokenizer, rows: list[tuple], batch_size: int, limits: dict) -> dict:
    """Records of the generated items, batched by kind budget (``limits``), then prompt length;
    kinds with ``letter_scores`` also get each option letter's log-probability."""
    letters = letter_sequences(tokenizer)
    one_token = all(len(s) == 1 for s in letters.values())
    out, mc_rows = {}, []
    rows = sorted(
        rows, key=lambda r: (limits[r[0]["answer_kind"]], len(r[1]), r[0]["type"], r[0]["idx"])
    )
    for chunk in batches(rows, batch_size):
        results = generate_within(
            model, tokenizer, [p for _, p, _ in chunk], [n for *_, n in chunk]
        )
        for (it, prompt, budget), (new, stopped, first) in zip(chunk, results):
            text = tokenizer.decode(new, skip_special_tokens=True)
            hit = not stopped and len(new) >= budget
            rec = {**_record(it, text), "max_new_tokens": budget, "hit_budget": hit}
            if behaviour(it["answer_kind"]).letter_scores and one_token:
                rec["letter_logits"] = {x: float(first[letters[x][0]]) for x in it["options"]}
            elif behaviour(it["answer_kind"]).letter_scores:
                mc_rows.append((it, prompt))
            out[(it["type"], it["idx"])] = rec
    for chunk in batches(mc_rows, max(1, batch_size // 4)):
        groups = [(p, [letters[x] for x in it["options"]]) for it, p in chunk]
        for (it, _), sums in zip(chunk, group_logprobs(model, groups, tokenizer.pad_token_id)):
            out[(it["type"], it["idx"])]["letter_logits"] = dict(zip(it["options"], sums))
    return out


def _rank(
    model, tokenizer, items: list[dict], batch_size: int, context: int, path: str = "shared"
) -> dict:
    """Records of the ranked items: each of their kind's texts (gold first) scored after the
    prompt and after an empty question (once per distinct text); an item that does not fit the
    context whole gets an error. ``path``: ``shared`` packs every sequence of the split by its
    tokens into token-tree rows (``_packed_sums``: each prompt read once, texts that begin
    alike sharing their beginnings, the head only at scored positions), at most
    ``RANK_BATCH x batch_size`` texts a forward pass; ``full`` runs one sequence per text with
    the whole logits (``span_logprobs_full_logits``), as many a pass, sorted by length. Both
    mark an item whose prompt's tokens do not begin its texts' sequences
    (``choice_full_sequences``: its texts are scored in their own full sequences)."""
    if path not in SCORING_PATHS:
        raise ValueError(f"ranking path {path!r}: expected one of {', '.join(SCORING_PATHS)}")
    out, rows = {}, []
    for it in items:
        kind = ak.kind(it["answer_kind"])
        if kind.ranked is None:
            continue
        texts = kind.ranked(it)
        prompt, seqs = prompt_and_choice_sequences(tokenizer, it, context, texts)
        if seqs is None:
            out[(it["type"], it["idx"])] = {
                **_record(it, ""),
                "error": f"prompt and a ranked text longer than the context of {context}",
            }
            continue
        rows.append((it, texts, seqs, shares_prompt(prompt, seqs) and len(prompt)))
    # each distinct text after the empty question, rendered in one go; the empty question is
    # shorter than any prompt, so every text fits
    distinct = list(dict.fromkeys(t for _, texts, *_ in rows for t in texts))
    _, empty_seqs = prompt_and_choice_sequences(tokenizer, EMPTY_QUESTION, context, distinct)
    uncond = dict(zip(distinct, empty_seqs or []))
    jobs = [seq for *_, seqs, _ in rows for seq in seqs] + list(uncond.values())
    scorer = _packed_sums if path == "shared" else _span_sums
    sums = iter(scorer(model, jobs, RANK_BATCH * batch_size, tokenizer.pad_token_id))
    scored = [[next(sums) for _ in seqs] for *_, seqs, _ in rows]
    empty = dict(zip(uncond, sums))
    for (it, texts, seqs, shared), lp in zip(rows, scored):
        tokens = [len(ids) - start for ids, start in seqs]
        out[(it["type"], it["idx"])] = {
            **_record(it, ""),
            "choice_ppl": [math.exp(-x / t) for x, t in zip(lp, tokens)],
            "choice_logprob": lp,
            "choice_tokens": tokens,
            "choice_chars": [len(t) for t in texts],
            "choice_uncond": [empty[t] for t in texts],
            **({} if shared else {"choice_full_sequences": True}),
        }
    return out


def _packed_sums(model, seqs: list[tuple[list[int], int]], max_texts: int, pad_id: int) -> list:
    """``span_logprobs`` of every sequence, in order: packed rows (``pack_rows``: alike
    sequences together, rows of like width), at most ``max_texts`` sequences a forward pass."""
    rows = pack_rows(seqs, max_texts=max_texts)
    sums: list[list[float]] = []
    chunk, texts = [], 0
    for row in [*rows, None]:
        if chunk and (row is None or texts + len(row) > max_texts):
            sums += packed_logprobs(model, [[seqs[i] for i in r] for r in chunk], pad_id)
            chunk, texts = [], 0
        if row is not None:
            chunk, texts = chunk + [row], texts + len(row)
    return _unpack(rows, sums, len(seqs))


def _span_sums(model, seqs: list[tuple[list[int], int]], batch_size: int, pad_id: int) -> list:
    """``span_logprobs_full_logits`` of every sequence, in order, batched by length."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i][0]))
    sums = [0.0] * len(seqs)
    for chunk in batches(order, batch_size):
        scores = span_logprobs_full_logits(model, [seqs[i] for i in chunk], pad_id)
        for i, value in zip(chunk, scores):
            sums[i] = value
    return sums


def _record(item: dict, text: str) -> dict[str, Any]:
    return {
        "type": item["type"],
        "idx": item["idx"],
        "question_format": item["question_format"],
        "answer_kind": item["answer_kind"],
        "prediction": text,
    }


def prediction_rules(
    preds: list[dict],
    model,
    tokenizer,
    max_new_tokens: dict[str, int] | None,
    chat_format: str,
    formulation: str = ak.LETTER,
) -> dict[str, Any]:
    """What ``PRED.rules.json`` records about how ``preds`` were produced."""

    def count(test, kinds=ak.GENERATED_KINDS) -> dict[str, int]:
        return {k: sum(1 for p in preds if p["answer_kind"] == k and test(p)) for k in kinds}

    ranked = [
        k.name
        for k in ak.KINDS
        if not k.generated and any(p["answer_kind"] == k.name for p in preds)
    ]
    return {
        "formulation": formulation,
        "norm": DEFAULT_NORM,  # how score ranks the text formulation's texts unless told otherwise
        "chat_format": chat_format,
        "context": max_length(model, tokenizer),
        "decoding": "greedy",
        "max_new_tokens": budgets(max_new_tokens),
        "n_items": count(lambda p: True, (*ak.GENERATED_KINDS, *ranked)),
        "n_hit_budget": count(lambda p: p.get("hit_budget")),
        "n_prompt_too_long": count(lambda p: "error" in p, (*ak.GENERATED_KINDS, *ranked)),
        # ranked items whose prompt's tokens do not begin every text's sequence (the chat
        # template renders the assistant's turn otherwise): scored in full sequences
        "n_ranked_full_sequences": count(lambda p: p.get("choice_full_sequences"), ranked),
        "stop_tokens": tokenizer.convert_ids_to_tokens(stop_token_ids(tokenizer)),
        "letter_scoring": LETTER_SCORING,
        "letter_tokens": {
            x: tokenizer.convert_ids_to_tokens(s) for x, s in letter_sequences(tokenizer).items()
        },
        "ranked_scoring": RANKED_SCORING,
        "empty_question": prompt_text(tokenizer, EMPTY_QUESTION),
    }


def predict_to(
    out,
    model,
    tokenizer,
    items,
    batch_size,
    budgets_,
    chat_format=None,
    formulation: str = ak.LETTER,
) -> dict:
    """Predict ``items`` (rendered in ``formulation``) into ``out`` (PRED.jsonl) and its rules
    file; returns the rules."""
    from doit.io import write_json, write_jsonl

    preds = predict_items(model, tokenizer, items, batch_size, budgets_)
    rules = prediction_rules(
        preds, model, tokenizer, budgets_, chat_format or chat_format_of(tokenizer), formulation
    )
    write_jsonl(out, preds)
    write_json(rules_path(out), rules)
    return rules


def rules_path(predictions) -> Path:
    """``PRED.rules.json`` beside ``PRED.jsonl``."""
    path = Path(predictions)
    return path.with_name(path.name.removesuffix(".jsonl") + ".rules.json")
