"""Read the between-seed score gap of each ability from curriculum_micro's reconstruct-vs-uniform
rows (the same mix and seeds, so the old seed resampling's interval is about +-|S0 - S1|), and
the method-of-moments seed SD on the score-logit scale (attenuation 1, as a prior is applied)."""

import numpy as np, pandas as pd
from doit.data.abilities import ABILITY_KEYS

d = pd.read_csv("studies/curriculum_micro/result/differences.csv")
r = d[(d.policy == "reconstruct") & (d.split == "test") & d.ability.isin(ABILITY_KEYS)]
p = r.uniform / 100
gap = (r.diff_hi - r.diff_lo) / 2 / 100
pq = p * (1 - p)
net = gap**2 / 2 - pq / 100  # m = 100 test items per in-domain ability
per = np.sqrt(np.maximum(net, 0) / pq**2)
print(
    pd.DataFrame(
        {"ability": r.ability, "score": r.uniform, "gap": 100 * gap, "sd": per.round(2)}
    ).to_string(index=False)
)
print("pooled", np.sqrt(max(net.sum(), 0) / (pq**2).sum()).round(3), "df", len(r))
