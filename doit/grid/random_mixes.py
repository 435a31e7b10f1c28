"""The ``random_mixes`` data axis: RegMix-style random mixtures at a fixed budget.

```yaml
data:
  random_mixes: {count: 24, total: 2560, concentration: 1.0, seed: 0, source: "1000",
                 bases: [vanilla_s]}
```

Mixture i draws proportions p ~ Dirichlet(concentration * K * prior), ``prior`` being each
ability's share of the ``source`` pool (the pool prior, as RegMix centres its Dirichlet on the
token distribution: equal pools give a symmetric Dirichlet, and concentration 1 then the flat
distribution over the simplex; a larger concentration keeps the mixtures nearer the prior).
``counts`` turns p into integers that sum to ``total`` exactly: p * total, an ability over its
pool capped and its overflow spread over the others in proportion to p, then floors and the
largest remainders. An ability drawn 0 items is left out (the mix's ``exclude``).

``write_mixes`` writes mixture i at plan time as ``STUDY/mixes/random-s<seed>-<i>.yaml`` (the
`doit.data.mixes` schema, its draw in ``provenance``); each becomes a cell as a ``data.mix``
file does (construction ``mix``, mix ``random-s<seed>-<i>``), and the results table records its
counts in ``n_own``. The draw depends only on the axis's keys and the pool sizes, so planning
again writes the same files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from doit.data import abilities as ab

MIXES_DIR = "mixes"


def draw(pools: dict[str, int], count: int, total: int, concentration: float, seed: int):
    """``count`` mixtures (ability -> items, abilities with a pool only, zeros included) drawn
    around the pool prior; ValueError when ``total`` exceeds the pools."""
    keys = [k for k in ab.ABILITY_KEYS if pools.get(k, 0) > 0]
    caps = np.array([pools[k] for k in keys], float)
    if total > caps.sum():
        raise ValueError(f"total {total} exceeds the pools' {int(caps.sum())} items")
    rng = np.random.default_rng(seed)
    alpha = concentration * len(keys) * caps / caps.sum()
    return [dict(zip(keys, counts(rng.dirichlet(alpha), total, caps))) for _ in range(count)]


def counts(p: np.ndarray, total: int, caps: np.ndarray) -> list[int]:
    """Integer counts in proportion to ``p`` that sum to ``total``, none above its cap."""
    x = p * total
    for _ in range(len(p)):  # each round caps at least one more ability
        over = x > caps
        if not over.any():
            break
        spill = (x[over] - caps[over]).sum()
        x[over] = caps[over]
        room = ~over & (x < caps)
        weight = np.where(room, p, 0.0)
        x += spill * (weight / weight.sum() if weight.sum() > 0 else room / room.sum())
    out = np.minimum(np.floor(x + 1e-9), caps).astype(int)
    short = total - int(out.sum())
    order = np.argsort(-(x - out), kind="stable")  # largest remainders first
    for i in order:
        if short == 0:
            break
        if out[i] < caps[i]:
            out[i] += 1
            short -= 1
    return [int(v) for v in out]


def mix_name(seed: int, i: int) -> str:
    return f"random-s{seed}-{i:03d}"


def write_mixes(axis, doit_dir, study) -> list[tuple[str, Path]]:
    """Write the axis's mix files into ``STUDY/mixes/`` and return (name, path) per mixture."""
    from doit.data.cells import pool_sizes
    from doit.data.load import load_items
    from doit.io import atomic_write_text

    pools = pool_sizes(load_items(doit_dir, axis.source))
    out = []
    for i, mix in enumerate(draw(pools, axis.count, axis.total, axis.concentration, axis.seed)):
        name = mix_name(axis.seed, i)
        path = Path(study) / MIXES_DIR / f"{name}.yaml"
        atomic_write_text(path, mix_yaml(mix, axis, i))
        out.append((name, path))
    return out


def mix_yaml(mix: dict[str, int], axis, index: int) -> str:
    """One mixture in the mix schema, with a comment on each key."""
    body = {
        "seed": axis.seed,
        "source": axis.source,
        "counts": {k: n for k, n in mix.items() if n > 0},
        "exclude": [k for k, n in mix.items() if n == 0],
        "provenance": {
            "random_mixes": {
                "count": axis.count,
                "total": axis.total,
                "concentration": axis.concentration,
                "seed": axis.seed,
                "index": index,
            }
        },
    }
    head = (
        "# A random mixture of the grid's random_mixes axis (doit.grid.random_mixes), written\n"
        "# at plan time. seed: sampling seed; source: the train pool; counts: items per\n"
        "# ability; exclude: abilities drawn 0 items; provenance: the draw.\n"
    )
    return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
