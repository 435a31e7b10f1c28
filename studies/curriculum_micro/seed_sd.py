"""The micro models' training-seed SD, read from this study's recorded result: a value for
`doit analysis run --seed-sd` (doit/analysis/README.md, Seed variance).

`reconstruct` trained uniform's mix with uniform's seeds 0 and 1 and scored uniform's numbers,
so the old seed resampling's interval on its difference (`issue22/differences.csv`) is about
+-|S0 - S1|, the two seeds' gap on the same 100 test items. Per in-domain ability the method
of moments of doit.analysis.bootstrap gives the seed variance on the score's logit scale,
gap^2 / 2 - p (1 - p) / 100 over (p (1 - p))^2, pooled over the ten abilities (1 df each).

    python studies/curriculum_micro/seed_sd.py
"""

from pathlib import Path

import numpy as np
import pandas as pd

from doit.data.abilities import ABILITY_KEYS

RESULT = Path(__file__).with_name("issue22") / "differences.csv"  # the 2,560-item study
TEST_ITEMS = 100  # test items per in-domain ability in the micro corpus


def seed_sd(differences: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Per ability (score, the seeds' gap in points, its seed SD) and the pooled seed SD."""
    same = differences[
        (differences["policy"] == "reconstruct")
        & (differences["split"] == "test")
        & differences["ability"].isin(ABILITY_KEYS)
    ]
    p = same["uniform"].to_numpy(float) / 100
    gap = (same["diff_hi"] - same["diff_lo"]).to_numpy(float) / 200
    spread = p * (1 - p)
    net = gap**2 / 2 - spread / TEST_ITEMS
    per_ability = pd.DataFrame(
        {
            "ability": same["ability"].to_numpy(),
            "score": 100 * p,
            "gap": 100 * gap,
            "seed_sd": np.sqrt(np.maximum(net, 0) / spread**2).round(2),
        }
    )
    return per_ability, float(np.sqrt(max(net.sum(), 0) / (spread**2).sum()))


if __name__ == "__main__":
    table, pooled = seed_sd(pd.read_csv(RESULT))
    print(table.to_string(index=False))
    print(f"pooled seed_sd {pooled:.3f} logit over {len(table)} abilities (1 df each)")
