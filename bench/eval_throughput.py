"""Ranking (shared prefix vs full sequences) and generation (batched vs item by item), side by
side in one run; or a study's cells re-scored with both ranking paths.

    python bench/eval_throughput.py [--data data/generated/micro] [--base DIR]
        [--formulation letter|text] [--path full|shared] [--per-ability 20] [--batch-size 32]
    python bench/eval_throughput.py --data data/generated/micro --rescore CELL_DIR [CELL_DIR ...]

Ranking: every ranked item of the selection (the text formulation's mc/tf/multi-select items,
and open items), their unconditional texts included, scored by ``predict_items(path=...)``
with each path (or only ``--path``'s), ``--repeats`` times alternating (the fastest counts: the
first runs warm the process up); prints ranked items/s of each, the ratio, and whether
the two paths' predictions are identical (every PRED field equal, log-probabilities within
1e-4). Generation: the selection's generated items, batch_size=N versus 1 (the same items,
order and budgets). The model is ``--base`` (a real micro base, loaded as evaluation loads an
untuned base: ``--chat-format doit``) or, without it, a random micro Llama. ``--baseline
FILE`` adds another revision's ``predict.py`` (loaded as a module of its own, same process,
same model) to the ranking table, e.g. main's before shared prefixes.

``--rescore``: each cell's checkpoint (``CELL/run``) re-scores the valid and test splits as the
grid runner's evaluation does (its plan's ``max_new_tokens`` and ``eval_batch_size``, ood on
test) with each ranking path (and ``--baseline``), ``--repeats`` times alternating, in this
process; prints the seconds of each (items loaded, predicted and scored: the study's
``eval_s`` less file writing), summed over the cells, beside the ``eval_s`` the study
recorded, and whether the scores are identical between the paths and to the study's.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from doit.data import kinds as ak
from doit.eval.evaluate import load_split_items
from doit.eval.predict import SCORING_PATHS, predict_items
from doit.eval.score import score_predictions
from doit.models.chat import prepare_tokenizer

LOGPROB_FIELDS = ("choice_logprob", "choice_uncond", "choice_ppl", "letter_logits")


def micro_model(tokenizer) -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(cfg).eval()


def load(a) -> tuple:
    """(model, tokenizer): ``--base`` loaded for inference, or the random micro Llama."""
    if a.base:
        from doit.models import load_for_inference

        return load_for_inference(a.base, dtype="fp32", chat_format=a.chat_format)
    tok = AutoTokenizer.from_pretrained(Path(a.data) / "tokenizer")
    prepare_tokenizer(tok)
    tok.padding_side = "left"
    return micro_model(tok), tok


def timed(fn) -> tuple[float, object]:
    """(wall seconds, result); ``timed.cpu`` keeps the last call's CPU seconds (this process's:
    on a machine others share, the fairer side-by-side measure)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    timed.cpu = time.process_time() - cpu
    return time.perf_counter() - start, out


def differences(a: list[dict], b: list[dict]) -> list[str]:
    """Where two prediction lists differ: a field unequal, or a log-probability off by more
    than 1e-4 (perplexities: relatively)."""
    out = []
    for p, q in zip(a, b, strict=True):
        where = f"{p['type']}/{p['idx']}"
        if set(p) != set(q):
            out.append(f"{where}: fields {sorted(set(p) ^ set(q))}")
        for key in set(p) & set(q):
            x, y = p[key], q[key]
            if key in LOGPROB_FIELDS:
                xs, ys = (list(x.values()), list(y.values())) if isinstance(x, dict) else (x, y)
                tol = [1e-4 * max(1.0, abs(v)) if key == "choice_ppl" else 1e-4 for v in ys]
                if len(xs) != len(ys) or any(abs(u - v) > t for u, v, t in zip(xs, ys, tol)):
                    out.append(f"{where}: {key} {x} vs {y}")
            elif x != y:
                out.append(f"{where}: {key} {x!r} vs {y!r}")
    return out


def bench_ranking(model, tok, ranked: list[dict], a) -> None:
    runs = {
        path: lambda p=path: predict_items(model, tok, ranked, a.batch_size, path=p)
        for path in ([a.path] if a.path else SCORING_PATHS)
    }
    if a.baseline:  # another revision's predict.py, its default path
        old = baseline_module(a.baseline)
        runs["baseline"] = lambda: old.predict_items(model, tok, ranked, a.batch_size)
    texts = {t for it in ranked for t in ak.kind(it["answer_kind"]).ranked(it)}
    n_cond = sum(len(ak.kind(it["answer_kind"]).ranked(it)) for it in ranked)
    print(
        f"ranking: {len(ranked)} ranked items, {n_cond} texts after their prompt, "
        f"{len(texts)} unconditional texts, batch size {a.batch_size}"
        + (f"; baseline: {a.baseline}" if a.baseline else "")
    )
    print(f"{'path':<16}{'seconds':>10}{'items/s':>10}{'cpu s':>10}{'items/cpu s':>12}")
    seconds, cpu, preds, n = {}, {}, {}, len(ranked)
    for name in list(runs) * a.repeats:  # alternating; each one's fastest run counts
        wall, preds[name] = timed(runs[name])
        seconds[name] = min(wall, seconds.get(name, wall))
        cpu[name] = min(timed.cpu, cpu.get(name, timed.cpu))
    for name in runs:
        print(
            f"{name:<16}{seconds[name]:>10.2f}{n / seconds[name]:>10.2f}"
            f"{cpu[name]:>10.2f}{n / cpu[name]:>12.2f}"
        )
    for name in [x for x in runs if x != "shared"] if "shared" in runs else []:
        print(
            f"shared vs {name}: {seconds[name] / seconds['shared']:.2f}x wall, "
            f"{cpu[name] / cpu['shared']:.2f}x cpu (goal >= 2x)"
        )
        diff = differences(preds["shared"], preds[name])
        print(
            f"  identical predictions: {n - len({d.split(':')[0] for d in diff})}/{n} items "
            "(every field equal, log-probabilities within 1e-4)"
        )
        for line in diff[:5]:
            print("  differs:", line)
    if "shared" in runs:
        full_seq = sum("choice_full_sequences" in p for p in preds["shared"])
        print(f"items scored in full sequences (prompt not a prefix): {full_seq}")


def baseline_module(path):
    """``path`` (a ``doit/eval/predict.py`` of another revision) loaded as a module of its own."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("baseline_predict", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_generation(model, tok, generated: list[dict], a) -> None:
    # the budgets this benchmark has always measured (predict's default is 1024 for every kind)
    limits = {"mc": 8, "tf": 8, "multiselect": 16, "cloze": 32, "math": a.math_tokens}
    n = len(generated)
    if not n:
        return
    predict_items(model, tok, generated[:4], batch_size=4, max_new_tokens=limits)  # warm-up
    t_batch, batched = timed(lambda: predict_items(model, tok, generated, a.batch_size, limits))
    t_single, single = timed(lambda: predict_items(model, tok, generated, 1, limits))
    print(f"generation: {n} generated items, budgets {limits}")
    print(f"{'mode':<16}{'seconds':>10}{'items/s':>10}")
    print(f"{'item-by-item':<16}{t_single:>10.2f}{n / t_single:>10.2f}")
    print(f"{'batched':<16}{t_batch:>10.2f}{n / t_batch:>10.2f}")
    print(f"batched speed-up: {t_single / t_batch:.2f}x (goal >= 5x; 3.56x before issue 27)")
    same = sum(b["prediction"] == s["prediction"] for b, s in zip(batched, single))
    print(f"identical outputs: {same}/{n} (padding changes float rounding, so a few may differ)")


def rescore(a) -> None:
    """Each cell's valid and test splits, scored with each path (``--rescore``)."""
    from doit.eval.evaluate import Model

    old = baseline_module(a.baseline) if a.baseline else None
    names = [*SCORING_PATHS, *(["baseline"] if old else [])]
    total = dict.fromkeys(names, 0.0)
    recorded, same_paths, same_study, n_splits = 0.0, 0, 0, 0
    for cell in map(Path, a.rescore):
        grid = json.loads((cell.parent.parent / "plan.json").read_text(encoding="utf-8"))["grid"]
        formulation = json.loads((cell / "cell.json").read_text(encoding="utf-8"))["formulation"]
        model, tok = Model(str(cell / "run")).load()
        for split in ("valid", "test"):
            stem = split if formulation == ak.LETTER else f"{split}.{formulation}"
            (study_scores,) = sorted(cell.glob(f"eval/*/{stem}.scores.json"))[-1:]
            study = json.loads(study_scores.read_text(encoding="utf-8"))
            seconds, scores = {}, {}
            for name in names * a.repeats:  # alternating; each one's fastest run counts
                predict = old.predict_items if name == "baseline" else predict_items
                path = {} if name == "baseline" else {"path": name}
                args = (predict, model, tok, a.data, split, formulation, grid, path)
                wall, scores[name] = timed(lambda args=args: _evaluate(*args))
                seconds[name] = min(wall, seconds.get(name, wall))
            for name in names:
                total[name] += seconds[name]
            recorded += study["eval_s"]
            n_splits += 1
            same_paths += all(scores[name] == scores["shared"] for name in names)
            same_study += all(
                scores["shared"][k] == study[k] for k in ("abilities", "overall", "items")
            )
            line = ", ".join(f"{name} {seconds[name]:.2f} s" for name in names)
            print(f"{cell.name} {split}: {line} (the study's eval_s {study['eval_s']:.2f})")
    line = ", ".join(f"{name} {total[name]:.2f} s" for name in names)
    print(f"summed over {n_splits} splits: {line}; the study recorded {recorded:.2f} s")
    for name in names[1:]:
        print(f"  {name} / shared: {total[name] / total['shared']:.2f}x")
    print(
        f"scores identical between the paths: {same_paths}/{n_splits}; "
        f"to the study's: {same_study}/{n_splits}"
    )


def _evaluate(predict, model, tok, data, split, formulation, grid, path: dict) -> dict:
    """What the grid's evaluation computes for one split (files aside): load, predict, score."""
    items = load_split_items(data, split, ood=split == "test", formulation=formulation)
    budgets = grid["max_new_tokens"]
    preds = predict(model, tok, items, grid["eval_batch_size"], budgets, **path)
    return score_predictions(items, preds)


def selection(a) -> list[dict]:
    """``--per-ability`` items of each ability of the test split (0: all), in ``--formulation``."""
    items = load_split_items(a.data, "test", ood=False, formulation=a.formulation)
    keys = sorted({it["ability"] for it in items})
    grouped = {k: [it for it in items if it["ability"] == k] for k in keys}
    return [it for k in keys for it in grouped[k][: a.per_ability or None]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--data", default="data/generated/micro", help="DoIT dir with tokenizer/ (make demo)"
    )
    p.add_argument("--base", help="a micro base directory (default: a random micro Llama)")
    p.add_argument("--chat-format", default="doit", help="how --base renders (untuned: doit)")
    p.add_argument("--formulation", choices=ak.FORMULATIONS, default=ak.LETTER)
    p.add_argument("--path", choices=SCORING_PATHS, help="time one ranking path (default both)")
    p.add_argument("--per-ability", type=int, default=20, help="items per ability (0: all)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3, help="ranking runs per path (fastest counts)")
    p.add_argument(
        "--math-tokens",
        type=int,
        default=64,
        help="max_new_tokens for math (predict's default, the study's 1024, is slow on CPU)",
    )
    p.add_argument(
        "--baseline",
        metavar="PREDICT_PY",
        help="also time another revision's doit/eval/predict.py "
        "(git show main:doit/eval/predict.py > /tmp/predict_main.py)",
    )
    p.add_argument("--rescore", nargs="+", metavar="CELL_DIR", help="re-score study cells")
    a = p.parse_args()
    print(f"torch threads: {torch.get_num_threads()}")
    if a.rescore:
        return rescore(a)
    model, tok = load(a)
    items = selection(a)
    ranked = [it for it in items if ak.kind(it["answer_kind"]).ranked is not None]
    print(
        f"model: {a.base or 'random micro Llama'}; formulation {a.formulation}; "
        f"{len(items)} items ({a.per_ability or 'all'} per ability)"
    )
    if ranked:
        bench_ranking(model, tok, ranked, a)
    generated = [it for it in items if ak.kind(it["answer_kind"]).ranked is None]
    bench_generation(model, tok, generated, a)


if __name__ == "__main__":
    main()
