"""The ``replay`` data axis: each staged mix of ``data.mix`` trained at several replay counts.

```yaml
data:
  mix: [recipes/mixes/dmt.yaml]   # staged mixes (doit.data.mixes, ``stages:``)
  replay: [0, 16, 64]             # each mix at each count: one cell apiece
```

A staged mix's ``replay`` (per later stage: items drawn again from the earlier stages' draws)
decides how much it forgets (DMT, Dong et al., ACL 2024, tried 1/256 of the first stage to all
of it). The axis writes, at plan time, one copy of every mix per value into ``STUDY/mixes/``,
``<stem>-replay<K>.yaml``, with every stage after the first replaying K items (0: none), and
plans it as a mix cell ``mix_<stem>-replay<K>`` whose results rows carry ``mix`` =
``<stem>-replay<K>``. The mix file's own ``replay`` values are not a cell of their own.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from doit.grid.random_mixes import MIXES_DIR
from doit.io import atomic_write_text, read_yaml


def replayed_name(path, replay: int) -> str:
    """The name of ``path``'s copy at ``replay`` (its file's stem, its cells' ``mix``)."""
    return f"{Path(path).stem}-replay{replay}"


def replayed(raw: dict, replay: int) -> dict:
    """The staged mix ``raw`` with every stage after the first replaying ``replay`` items."""
    stages = [dict(s) for s in raw["stages"]]
    for stage in stages[1:]:
        stage.pop("replay", None)
        if replay:
            stage["replay"] = replay
    return {**raw, "stages": stages}


def write_replayed(mixes, values, study) -> dict[str, list[tuple[str, Path]]]:
    """Each mix path -> [(name, path)] of its copies at ``values``, written into
    ``STUDY/mixes/``."""
    out = {}
    for mix in mixes:
        raw = read_yaml(mix)
        out[mix] = []
        for k in values:
            name = replayed_name(mix, k)
            path = Path(study) / MIXES_DIR / f"{name}.yaml"
            head = (
                f"# {mix} with every stage after the first replaying {k} items (the grid's\n"
                "# data.replay axis, doit.grid.replay), written at plan time.\n"
            )
            body = yaml.safe_dump(replayed(raw, k), sort_keys=False, allow_unicode=True)
            atomic_write_text(path, head + body)
            out[mix].append((name, path))
    return out
