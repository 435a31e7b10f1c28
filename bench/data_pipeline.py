"""Time of the data pipeline: validate + subset + tokenise, on the micro corpus and on a
40k-record DoIT-sized corpus built from it (the real DoIT `full` pool sizes).

    python bench/data_pipeline.py [--micro data/generated/micro]

Budget: under 30 s for the 40k corpus on a 2-core machine. The DoIT-sized corpus repeats
micro items (new idx, a numbered suffix on the question so every record is distinct)
until each ability has the real `full` pool size (41.5k train items in all).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from transformers import AutoTokenizer

from doit.data.layout import SPLIT_DIRS
from doit.data.load import load_items
from doit.data.schema import to_record
from doit.data.subsets import build_subsets
from doit.data.validate import load_expectation, validate_path
from doit.io import write_jsonl
from doit.models.chat import prepare_tokenizer
from doit.train.sft.data import tokenise, training_template

_FULL = next(e for e in load_expectation("doit")[1]["files"] if "count_by_ability" in e)
DOIT_FULL = _FULL["count_by_ability"]  # the real `full` pool sizes (data/doit/expected.yaml)


def doit_sized(micro: Path, out: Path) -> Path:
    """A DoIT-layout corpus with the real pool sizes, made of (distinct) micro items."""
    pool = load_items(micro, "full")
    for key, n in DOIT_FULL.items():
        mine = [it for it in pool if it["ability"] == key]
        records = []
        for i in range(n):
            rec = to_record(mine[i % len(mine)])
            rec = json.loads(json.dumps(rec, ensure_ascii=False))
            rec["idx"] = i
            if i >= len(mine):
                rec["messages"][0]["content"] += f"（{i // len(mine)}）"
            records.append(rec)
        write_jsonl(out / SPLIT_DIRS["full"] / f"{key}_full.json", records)
        write_jsonl(out / SPLIT_DIRS["1000"] / f"{key}_1000.json", records[:1000])
    for split in ("valid", "test"):
        for f in sorted((micro / SPLIT_DIRS[split]).iterdir()):
            (out / SPLIT_DIRS[split]).mkdir(parents=True, exist_ok=True)
            (out / SPLIT_DIRS[split] / f.name).write_bytes(f.read_bytes())
    return out


def run(root: Path, tokenizer, template: str, pool: str, work: Path) -> dict[str, float]:
    times = {}
    start = time.perf_counter()
    report = validate_path(root)
    assert report.ok, report.errors[:3]
    times["validate"] = time.perf_counter() - start
    start = time.perf_counter()
    build_subsets(root, work / "subsets", sizes=(1, 4, 16, 64, 256, 1000), pool=pool)
    times["subset"] = time.perf_counter() - start
    start = time.perf_counter()
    items = load_items(root, pool)
    tokenise(items, tokenizer, template, max_length=2048, assistant_only=True)
    times["tokenise"] = time.perf_counter() - start
    times["records"] = report.n_items
    times["train_items_tokenised"] = len(items)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--micro", default="data/generated/micro", help="micro corpus (make demo builds it)"
    )
    a = p.parse_args()
    micro = Path(a.micro)
    tok = AutoTokenizer.from_pretrained(micro / "tokenizer")
    prepare_tokenizer(tok)
    template = training_template(tok)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        big = doit_sized(micro, tmp / "doit40k")
        rows = {
            "micro": run(micro, tok, template, "full", tmp / "w1"),
            "doit-sized": run(big, tok, template, "full", tmp / "w2"),
        }
    print(
        f"{'corpus':<12}{'records':>9}{'tokenised':>10}{'validate s':>12}{'subset s':>10}{'tokenise s':>12}{'total s':>9}"
    )
    for name, t in rows.items():
        total = t["validate"] + t["subset"] + t["tokenise"]
        print(
            f"{name:<12}{t['records']:>9}{t['train_items_tokenised']:>10}{t['validate']:>12.2f}"
            f"{t['subset']:>10.2f}{t['tokenise']:>12.2f}{total:>9.2f}"
        )
    big_total = sum(rows["doit-sized"][k] for k in ("validate", "subset", "tokenise"))
    print(
        f"DoIT-sized total {big_total:.1f} s (budget 30 s): {'OK' if big_total < 30 else 'OVER BUDGET'}"
    )


if __name__ == "__main__":
    main()
