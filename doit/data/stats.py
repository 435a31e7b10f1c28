"""Corpus statistics per ability and split, and a length histogram grid."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from doit.data import abilities as ab
from doit.data.layout import SPLIT_DIRS, SYNTHETIC_DIR
from doit.data.load import load_items
from doit.io import OutputKind, atomic_path

STAT_SPLITS = ("1000", "full", "train", "valid", "test", ab.SYNTHETIC)


def conversation_text(item: dict) -> str:
    return "\n".join(m["content"] for m in item["messages"])


def load_all(root: Path) -> dict[str, list[dict]]:
    """Items of every split present under ``root`` (``train`` only for doit cells)."""
    out = {}
    for split in STAT_SPLITS:
        folder = root / SPLIT_DIRS.get(split, SYNTHETIC_DIR)
        if folder.is_dir():
            items = load_items(root, split)
            if items:
                out[split] = items
    return out


def stats_table(splits: dict[str, list[dict]], tokenizer=None) -> pd.DataFrame:
    rows = []
    for split, items in splits.items():
        frame = pd.DataFrame(
            {
                "ability": [it["ability"] for it in items],
                "kind": [it["answer_kind"] or "-" for it in items],
                "turns": [len(it["messages"]) // 2 for it in items],
                "chars": [len(conversation_text(it)) for it in items],
            }
        )
        if tokenizer is not None:
            texts = [conversation_text(it) for it in items]
            frame["tokens"] = [
                len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]
            ]
        for key, g in frame.groupby("ability", sort=True):
            row = {
                "split": split,
                "ability": key,
                "n": len(g),
                "kinds": ",".join(f"{k}:{v}" for k, v in sorted(g["kind"].value_counts().items())),
                "turns_mean": round(g["turns"].mean(), 2),
            }
            for col in [c for c in ("chars", "tokens") if c in g]:
                for q in (50, 90, 99):
                    row[f"{col}_p{q}"] = int(np.percentile(g[col], q))
            rows.append(row)
    return pd.DataFrame(rows)


PLOT_STAMP = "doit data stats --plot"  # written into the figure: a rerun may replace it
STAMPED = (".png", ".pdf", ".svg")  # formats whose metadata carries the stamp


def is_length_plot(path: Path) -> bool:
    """Whether ``path`` is a figure `plot_lengths` wrote (its metadata carries the stamp)."""
    try:
        return PLOT_STAMP.encode() in Path(path).read_bytes()
    except OSError:
        return False


LENGTH_PLOT = OutputKind("length plot", "file", is_length_plot, f"no {PLOT_STAMP!r} stamp")


def plot_lengths(splits: dict[str, list[dict]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = {it["ability"] for items in splits.values() for it in items}
    keys = [k for k in (*(a.key for a in ab.ALL), ab.SYNTHETIC) if k in present]
    cols = 4
    fig, axes = plt.subplots(
        (len(keys) + cols - 1) // cols,
        cols,
        figsize=(4 * cols, 2.6 * ((len(keys) + cols - 1) // cols)),
        squeeze=False,
    )
    for ax, key in zip(axes.flat, keys):
        for split, items in splits.items():
            lengths = [len(conversation_text(it)) for it in items if it["ability"] == key]
            if lengths:
                ax.hist(lengths, bins=30, alpha=0.5, label=split)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("characters", fontsize=8)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    stamp = {"Creator": PLOT_STAMP} if path.suffix.lower() in STAMPED else None
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=90, metadata=stamp)
    plt.close(fig)
    return path
