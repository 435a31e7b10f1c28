"""A programmatic DoIT-layout corpus of any size, for subset/mix/split tests."""

import json
import random
from pathlib import Path

from doit.data import abilities as ab
from doit.data import kinds as ak

# The real DoIT `full` pools (recipes/mixes/README.md): what the shipped mixes resolve against.
DOIT_FULL = dict(
    biology=1042,
    history=1893,
    code=4968,
    creative_writing=1000,
    chinese=1450,
    understanding=4885,
    role_play=1000,
    reasoning=12751,
    math=11501,
    ethics=1000,
)


def record(key: str, i: int, tag: str = "") -> dict:
    kinds = ab.get(key).answer_kinds
    q = f"{key} question {tag}{i}"
    if ak.OPEN in kinds:
        gold = f"answer {i}"
        return {
            "messages": [{"role": "user", "content": q}, {"role": "assistant", "content": gold}],
            "idx": i,
            "type": key,
            "question_format": 1,
            "choices": [gold, f"fine {i}", f"coarse {i}"],
        }
    rec = {"idx": i, "type": key, "question_format": 0}
    if ak.MATH in kinds:
        rec.update(
            answer=str(i),
            messages=[
                {"role": "user", "content": q},
                {"role": "assistant", "content": f"so \\boxed{{{i}}}"},
            ],
        )
        return rec
    gold = "AC" if ak.MULTISELECT in kinds else "ABCD"[i % 4]
    opts = "\nA. a\nB. b\nC. c\nD. d"
    rec["messages"] = [
        {"role": "user", "content": q + opts},
        {"role": "assistant", "content": gold},
    ]
    return rec


def write_pool(
    root: Path,
    sizes: dict[str, int],
    shuffle_seed: int | None = None,
    eval_size: int = 3,
    synthetic: int = 0,
) -> Path:
    """Write curated/full (sizes), curated/1000 (same), valid/test (eval_size) and synthetic.
    ``shuffle_seed`` shuffles the line order of every file."""

    def dump(path: Path, recs: list[dict]):
        if shuffle_seed is not None:
            recs = recs[:]
            random.Random(shuffle_seed).shuffle(recs)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8"
        )

    for key, n in sizes.items():
        recs = [record(key, i) for i in range(n)]
        dump(root / f"curated/full/{key}_full.json", recs)
        dump(root / f"curated/1000/{key}_1000.json", recs[:1000])
        dump(
            root / f"curated/valid/{key}_valid.json",
            [record(key, i, "v") for i in range(eval_size)],
        )
        dump(
            root / f"curated/test/{key}_test.json", [record(key, i, "t") for i in range(eval_size)]
        )
    if synthetic:
        recs = [
            {
                "messages": [
                    {"role": "user", "content": f"hi {i}"},
                    {"role": "assistant", "content": f"yo {i}"},
                ]
            }
            for i in range(synthetic)
        ]
        dump(root / "synthetic/40960/general_instruction_gpt4_41k.json", recs)
    return root


def uniform(n: int) -> dict[str, int]:
    return {k: n for k in ab.ABILITY_KEYS}
