"""How many planted classes a design can recover at all: the bench's classes beside an oracle's.

    .venv/bin/python bench/class_oracle.py KEEP_DIR [--rows b-sd0.4,b-sd0]

KEEP_DIR is a ``bench/coverage.py --keep`` folder (``worlds/<row>/w*/planted.csv`` and
``after/<row>/w*/sensitivity.csv``). Per ability and axis, the oracle knows the planted value v
and the fit's own standard error se (the bootstrap SD, read back from ``mde_*`` = delta +
(z_0.975 + z_0.8) se, `sensitivity.power`), and draws the estimate from a calibrated normal,
N(v, se^2). It applies the package's class rules (`sensitivity.classify`: responsive when the
95% lower bound > delta, harmed when the upper < -delta, resistant when the 90% interval lies
inside (-delta, delta)), so its recovery rate is

    responsive: Phi((v - delta) / se - z_0.975)      harmed: Phi((-delta - v) / se - z_0.975)
    resistant:  Phi((delta - v) / se - z_0.95) - Phi((-delta - v) / se + z_0.95)  (0 if negative)

the best any engine with that SE can do on average. The bench's recovery far below it is the
engine's loss; at it, the design's (more items, seeds or bases decide more).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest, norm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from doit.stats.power import POWER_Z, Z_EQUIVALENCE, Z  # noqa: E402


def oracle_rate(value, se, delta: float, planted: str) -> np.ndarray:
    """The probability that a calibrated normal estimate N(value, se^2) is classed ``planted``."""
    value, se = np.asarray(value, float), np.asarray(se, float)
    if planted == "responsive":
        return norm.cdf((value - delta) / se - Z)
    if planted == "harmed":
        return norm.cdf((-delta - value) / se - Z)
    inside = norm.cdf((delta - value) / se - Z_EQUIVALENCE) - norm.cdf(
        (-delta - value) / se + Z_EQUIVALENCE
    )
    return np.clip(inside, 0.0, 1.0)


def rows_of(keep: Path, row: str) -> pd.DataFrame:
    """Every (world, ability) of one bench row: planted values and classes, the fit's classes
    and its SE per axis."""
    parts = []
    for folder in sorted((keep / "worlds" / row).glob("w*")):
        got = keep / "after" / row / folder.name / "sensitivity.csv"
        if got.is_file():
            truth = pd.read_csv(folder / "planted.csv")
            parts.append(truth.merge(pd.read_csv(got), on="ability", suffixes=("_true", "")))
    if not parts:
        raise SystemExit(f"{keep}: no analysed worlds for row {row!r}")
    return pd.concat(parts, ignore_index=True)


def share(k: float, n: int) -> str:
    ci = binomtest(int(round(k)), n).proportion_ci(0.95, method="wilson")
    return f"{k / n:.2f} [{ci.low:.2f}, {ci.high:.2f}]"


def summary(m: pd.DataFrame) -> dict:
    """The bench's class recovery per axis (Wilson 95%), the oracle's expected rate and the
    fits' median SE."""
    out, delta = {}, float(m["delta"].iloc[0])
    for axis in ("data", "size"):
        se = ((m[f"mde_{axis}"] - delta) / POWER_Z).to_numpy()
        value, planted = m[f"{axis}_sensitivity_true"].to_numpy(), m[f"{axis}_class_true"]
        rate = np.zeros(len(m))
        for kind in ("responsive", "harmed", "resistant"):
            is_ = (planted == kind).to_numpy()
            rate[is_] = oracle_rate(value[is_], se[is_], delta, kind)
        got = int((m[f"{axis}_class_true"] == m[f"{axis}_class"]).sum())
        out[f"{axis} class"] = share(got, len(m))
        out[f"{axis} oracle"] = f"{rate.mean():.2f}"
        out[f"{axis} median se"] = f"{np.nanmedian(se):.2f}"
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("keep", type=Path, help="a bench/coverage.py --keep folder")
    p.add_argument("--rows", default="b-sd0,b-sd0.4", help="bench rows (Row.name), comma-separated")
    args = p.parse_args()
    table = []
    for row in [r.strip() for r in args.rows.split(",") if r.strip()]:
        m = rows_of(args.keep, row)
        table.append({"row": row, "n": len(m), **summary(m)})
    out = pd.DataFrame(table)
    print("| " + " | ".join(out.columns) + " |")
    print("|" + "---|" * len(out.columns))
    for r in out.itertuples(index=False):
        print("| " + " | ".join(map(str, r)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
