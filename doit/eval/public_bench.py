"""Public benchmarks (CMMLU, AGIEval, C-Eval) through lm-evaluation-harness, from local files.

    python -m doit.eval bench --model DIR [--adapter DIR] --tasks cmmlu,agieval,ceval \\
        --data-dir DIR --shots 0,5 --out BENCH.json

Every subject becomes one lm-eval ``multiple_choice`` task, built from the template shipped in
``doit/eval/benchmarks/<benchmark>.yaml`` with the local file paths filled in and handed to
lm-eval's ``TaskManager`` as an inline config (no built-in task is indexed, nothing is
downloaded). The choices are the option letters and the context ends with the chat template's
assistant marker, so accuracy is the argmax of the letters' next-token log-probabilities
(the argmax of their logits, when each letter is one token: ``letter_tokens``). Prompts are the study's: the bare question with "A. ..." option
lines as the user turn and the letter as the assistant turn; k-shot examples are earlier
user/assistant turns (lm-eval's ``apply_chat_template`` + ``fewshot_as_multiturn``).

Data directory (each benchmark's own files, as distributed)::

    cmmlu/dev/<subject>.csv  cmmlu/test/<subject>.csv      (,Question,A,B,C,D,Answer)
    ceval/dev/<subject>_dev.csv  ceval/val/<subject>_val.csv  (id,question,A,B,C,D,answer,...)
    agieval/<subset>.jsonl   (passage, question, options ["(A)..", ..], label), the Chinese
                             multiple-choice subsets in AGIEVAL_ZH_MCQ

``BENCH.json`` (percentages 0-100; macro = mean of per-subject accuracies, CMMLU's official
number; micro = correct / items pooled over subjects)::

    {"benchmarks": {bench: {"<shots>": {"macro", "micro", "subjects": {name: {"acc", "n"}}}}},
     "rules": {...}}
"""

from __future__ import annotations

import copy
import csv
import re
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

from doit.io import read_jsonl

BENCHMARKS = ("cmmlu", "agieval", "ceval")
# AGIEval's own list of Chinese multiple-choice subsets (src/dataset_loader.py, chinese_qa_datasets)
AGIEVAL_ZH_MCQ = (
    "logiqa-zh",
    "jec-qa-kd",
    "jec-qa-ca",
    "gaokao-chinese",
    "gaokao-geography",
    "gaokao-history",
    "gaokao-biology",
    "gaokao-chemistry",
    "gaokao-physics",
    "gaokao-mathqa",
)
CSV_LAYOUT = {  # benchmark -> split -> (folder, file name after the subject)
    "cmmlu": {"dev": ("cmmlu/dev", ".csv"), "test": ("cmmlu/test", ".csv")},
    "ceval": {"dev": ("ceval/dev", "_dev.csv"), "test": ("ceval/val", "_val.csv")},
}
FEWSHOT_POOL = 5  # CMMLU and C-Eval dev files hold 5 items; AGIEval's pool is its first 5
LETTERS = "ABCDEFGHIJ"
_OPTION_PREFIX = re.compile(r"^\s*\([A-J]\)\s*")  # AGIEval's "(A)" before each option


# ---------------------------------------------------------------- files -> subjects


def csv_subjects(bench: str, root: Path) -> dict[str, dict[str, Path]]:
    """{subject: {"dev": path, "test": path}} for CMMLU / C-Eval, from the test-split folder."""
    layout = CSV_LAYOUT[bench]
    folder, suffix = layout["test"]
    tests = sorted((root / folder).glob(f"*{suffix}"))
    if not tests:
        raise FileNotFoundError(
            f"{root / folder}: no *{suffix} files; expected {bench} as distributed: "
            + ", ".join(f"{f}/<subject>{s}" for f, s in layout.values())
        )
    out = {}
    for path in tests:
        subject = path.name[: -len(suffix)]
        files = {split: root / f / f"{subject}{s}" for split, (f, s) in layout.items()}
        missing = [str(p) for p in files.values() if not p.exists()]
        if missing:
            raise FileNotFoundError(f"{bench} subject {subject!r}: missing {', '.join(missing)}")
        out[subject] = files
    return out


def agieval_subjects(root: Path) -> dict[str, dict[str, Path]]:
    found = {s: {"test": root / "agieval" / f"{s}.jsonl"} for s in AGIEVAL_ZH_MCQ}
    found = {s: f for s, f in found.items() if f["test"].exists()}
    if not found:
        raise FileNotFoundError(
            f"{root / 'agieval'}: none of the Chinese multiple-choice subsets "
            f"({', '.join(s + '.jsonl' for s in AGIEVAL_ZH_MCQ)})"
        )
    return found


def subjects(bench: str, data_dir: str | Path) -> dict[str, dict[str, Path]]:
    root = Path(data_dir)
    return agieval_subjects(root) if bench == "agieval" else csv_subjects(bench, root)


def csv_rows(path: Path) -> int:
    with open(path, encoding="utf-8", newline="") as f:
        return max(0, sum(1 for _ in csv.reader(f)) - 1)


# ---------------------------------------------------------------- AGIEval files


def agieval_item(rec: dict, where: str) -> dict | None:
    """A single-answer record in the task's fields, or None for a multi-answer one."""
    label = rec.get("label")
    labels = label if isinstance(label, list) else [label] if label else []
    options = rec.get("options") or []
    if len(options) < 2:
        raise ValueError(f"{where}: no options; only multiple-choice subsets can be scored")
    if len(labels) != 1:
        return None
    letters = list(LETTERS[: len(options)])
    gold = str(labels[0]).strip()
    if gold not in letters:
        raise ValueError(f"{where}: label {gold!r} is not one of the option letters {letters}")
    return {
        "passage": rec.get("passage") or "",
        "question": rec["question"],
        "options": [_OPTION_PREFIX.sub("", o, count=1) for o in options],
        "letters": letters,
        "label": gold,
    }


def agieval_split(path: str | Path, pool: int = FEWSHOT_POOL) -> tuple[list, list, int]:
    """(few-shot pool, scored items, multi-answer items skipped) of one AGIEval file.

    The pool is the first ``pool`` single-answer items in file order; it is never scored,
    at any shot count, so 0-shot and 5-shot accuracies are over the same items.
    """
    items = [agieval_item(rec, f"{path}:{line}") for line, rec in read_jsonl(path)]
    singles = [it for it in items if it is not None]
    if len(singles) <= pool:
        raise ValueError(
            f"{path}: {len(singles)} single-answer items; need more than {pool} "
            f"(the first {pool} are the few-shot pool)"
        )
    return singles[:pool], singles[pool:], len(items) - len(singles)


def agieval_dataset(path: str, **_: Any):
    """lm-eval ``custom_dataset`` for one AGIEval file: splits ``dev`` (pool) and ``test``."""
    from datasets import Dataset, DatasetDict

    dev, test, _skipped = agieval_split(path)
    return DatasetDict({"dev": Dataset.from_list(dev), "test": Dataset.from_list(test)})


# ---------------------------------------------------------------- task configs


def template(bench: str) -> dict:
    """The shipped task template, read by lm-eval's own YAML loader (resolves ``!function``)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    ref = resources.files("doit.eval").joinpath("benchmarks", f"{bench}.yaml")
    with resources.as_file(ref) as path:
        return load_yaml(path, resolve_func=True)


def task_name(bench: str, subject: str) -> str:
    return f"doit_{bench}_{subject}"


def task_config(bench: str, subject: str, files: dict[str, Path], base: dict) -> dict:
    """``base`` (the template) with this subject's task name and local files filled in."""
    cfg = copy.deepcopy(base)
    cfg["task"] = task_name(bench, subject)
    kwargs = cfg.get("dataset_kwargs") or {}
    if bench == "agieval":
        kwargs["path"] = str(files["test"])
    else:
        from datasets import Features, Value

        kwargs["data_files"] = {split: str(p) for split, p in files.items()}
        kwargs["features"] = Features({c: Value("string") for c in kwargs["usecols"]})
    cfg["dataset_kwargs"] = kwargs
    return cfg


def check_fewshot_pool(bench: str, files: dict[str, dict[str, Path]], shots: int) -> None:
    if shots > FEWSHOT_POOL:
        raise ValueError(f"shots: at most {FEWSHOT_POOL} (the dev splits hold {FEWSHOT_POOL})")
    if bench == "agieval" or shots == 0:
        return  # agieval_split checks its pool
    for f in files.values():
        if (n := csv_rows(f["dev"])) < shots:
            raise ValueError(f"{f['dev']}: {n} dev items, fewer than {shots} shots")


def build_configs(benchmarks, data_dir, max_shots: int) -> dict[str, dict[str, dict]]:
    """{bench: {subject: lm-eval task config}}."""
    out = {}
    for bench in benchmarks:
        files = subjects(bench, data_dir)
        check_fewshot_pool(bench, files, max_shots)
        base = template(bench)
        out[bench] = {s: task_config(bench, s, f, base) for s, f in files.items()}
    return out


# ---------------------------------------------------------------- running lm-eval


def make_lm(
    model_dir: str,
    adapter: str | None = None,
    dtype: str = "auto",
    batch_size: int = 16,
    chat_format: str | None = None,
    seed: int = 0,
):
    """lm-eval's HFLM around ``doit.models.load_for_inference``'s model and chat-template tokenizer
    (``chat_format`` and ``seed``: an untuned base rendered as its fine-tuned cells train).

    No BOS is added (``add_bos_token=False``): prompts are exactly the chat template's text,
    as in training and in ``doit.eval.predict``.
    """
    from lm_eval.models.huggingface import HFLM

    from doit.models import load_for_inference

    model, tokenizer = load_for_inference(model_dir, adapter, dtype, chat_format, seed)
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, add_bos_token=False)
    if not (letters := letter_tokens(lm))["next_token"]:
        warnings.warn(
            f"{model_dir}: option letters are not single tokens after the assistant marker "
            f"({letters['ids']}); a letter's score is the log-probability of its "
            "whole token sequence, not its next-token logit",
            stacklevel=2,
        )
    return lm


def letter_tokens(lm, letters: str = "ABCD") -> dict[str, Any]:
    """The token ids lm-eval scores for each letter right after the assistant marker.

    ``next_token`` is True when every letter is one distinct token after a prefix shared by
    all (e.g. a bare "▁"): then the letters' log-likelihoods rank exactly as their next-token
    logits. Otherwise lm-eval scores the letter's whole token sequence.
    """
    prompt = lm.apply_chat_template([{"role": "user", "content": "?"}])
    ids = {x: lm._encode_pair(prompt, x)[1] for x in letters}
    shared_prefix = len({tuple(c[:-1]) for c in ids.values()}) == 1
    distinct_last = len({c[-1] for c in ids.values() if c}) == len(ids)
    return {"ids": ids, "next_token": shared_prefix and distinct_last}


def evaluate_tasks(lm, configs: list[dict], shots: int, log_samples: bool = False) -> dict:
    """One lm-eval run of ``configs`` at ``shots``, rendered through the model's chat template."""
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    return simple_evaluate(
        model=lm,
        tasks=[{**cfg, "num_fewshot": shots} for cfg in configs],
        task_manager=TaskManager(include_defaults=False),
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        bootstrap_iters=0,
        log_samples=log_samples,
    )


def subject_score(results: dict, task: str) -> dict[str, float | int]:
    """{"acc": percent, "n": items} of one task in ``simple_evaluate``'s results."""
    return {
        "acc": 100.0 * results["results"][task]["acc,none"],
        "n": int(results["n-samples"][task]["effective"]),
    }


def aggregate(subject_scores: dict[str, dict]) -> dict[str, float]:
    """macro = mean of per-subject accuracies; micro = correct / items over all subjects."""
    accs = [s["acc"] for s in subject_scores.values()]
    items = sum(s["n"] for s in subject_scores.values())
    return {
        "macro": sum(accs) / len(accs),
        "micro": sum(s["acc"] * s["n"] for s in subject_scores.values()) / items,
    }


def score_benchmarks(lm, configs: dict[str, dict[str, dict]], shots: list[int]) -> dict:
    """{bench: {"<shots>": {"macro", "micro", "subjects"}}}: one lm-eval run per shot count."""
    flat = [cfg for subjects_ in configs.values() for cfg in subjects_.values()]
    out: dict[str, dict] = {bench: {} for bench in configs}
    for k in shots:
        results = evaluate_tasks(lm, flat, k)
        for bench, subjects_ in configs.items():
            scores = {s: subject_score(results, cfg["task"]) for s, cfg in subjects_.items()}
            out[bench][str(k)] = {**aggregate(scores), "subjects": scores}
    return out


PROTOCOL = {
    "scoring": (
        "lm-eval multiple_choice; choices = the option letters, continuation = the bare letter "
        "after the chat template's assistant marker; acc = argmax of the letters' next-token "
        "log-probabilities (= argmax of their logits when each letter is one token after the "
        "marker, letter_tokens.next_token; otherwise of the letter's whole token sequence)"
    ),
    "prompt": (
        "user turn = [passage + newline] question + newline-separated 'A. option' lines; "
        "assistant turn = the letter; rendered by the model's chat template, no system prompt"
    ),
    "fewshot": (
        "k solved examples as earlier user/assistant turns (fewshot_as_multiturn): CMMLU and "
        "C-Eval the first k rows of the subject's dev file; AGIEval the first k of the file's "
        "first 5 single-answer items, which are never scored (0- and k-shot score the same items)"
    ),
    "macro": "mean of per-subject accuracies (CMMLU's official number)",
    "micro": "correct / items, pooled over subjects",
    "ceval_split": "val (C-Eval's test answers are hidden)",
    "agieval_subsets": (
        "AGIEval's own Chinese multiple-choice subsets (AGIEVAL_ZH_MCQ) found in the data dir; "
        "English and cloze subsets are not read"
    ),
    "agieval_multi_answer": "items whose label is a set of letters are skipped (counts below)",
    "truncation": "a context longer than the model's max length is cut from the left (lm-eval)",
    "percent": "all accuracies are percentages 0-100",
}


def rules(configs: dict[str, dict[str, dict]], **run: Any) -> dict:
    """The rules above, this run's settings, and what the files held."""
    import lm_eval

    out = {**PROTOCOL, **run, "lm_eval_version": getattr(lm_eval, "__version__", "unknown")}
    if "agieval" in configs:
        out["agieval_multi_answer_skipped"] = {
            s: agieval_split(cfg["dataset_kwargs"]["path"])[2]
            for s, cfg in configs["agieval"].items()
        }
    return out


def benchmark_list(text: str) -> list[str]:
    """``--tasks``: comma-separated names from BENCHMARKS, in the order given."""
    names = list(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    if not names or any(n not in BENCHMARKS for n in names):
        raise ValueError(f"expected names from {BENCHMARKS}, got {text!r}")
    return names


def shot_list(text: str) -> list[int]:
    """``--shots``: comma-separated counts in 0..FEWSHOT_POOL."""
    shots = list(dict.fromkeys(int(x) for x in text.split(",") if x.strip()))
    if not shots or any(not 0 <= k <= FEWSHOT_POOL for k in shots):
        raise ValueError(f"expected shot counts in 0..{FEWSHOT_POOL}, got {text!r}")
    return shots


def run_bench(
    lm, data_dir: str | Path, benchmarks: list[str], shots: list[int], **run: Any
) -> dict:
    """The BENCH.json object for ``lm`` (an lm-eval LM) on the local benchmark files."""
    configs = build_configs(benchmarks, data_dir, max(shots))
    return {
        "benchmarks": score_benchmarks(lm, configs, shots),
        "rules": rules(configs, data_dir=str(data_dir), shots=shots, **run),
    }
