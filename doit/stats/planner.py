"""What a design can decide, per ability: the table `doit grid plan` prints and keeps in
plan.json and `doit analysis design` ranks designs by.

Per ability, from the variance model's expected standard errors (`doit.stats.variance`) and
the one power definition (`doit.stats.power.power`): ``se_data``, ``mde_data``,
``resistant_data`` (resistance reachable) for data_sensitivity (points per 4x), the same for
size_sensitivity (points per doubling; empty with one base) and, for a design with a policy
(LOO or mix cells), ``se_policy``/``mde_policy``: a policy's mix vs the uniform cell at one
base and budget (a paired difference; at the ability's score level the SE does not depend on
the budget). A ``macro`` row holds the macro difference's. ``inputs`` says where the
variance inputs came from (a pilot, or the priors).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from doit.data import abilities as ab
from doit.stats import variance as V
from doit.stats.power import DELTA, power
from doit.stats.variance import (
    Inputs,
    Shape,
    data_se,
    difference_se,
    macro_difference_se,
    size_se,
)

COLUMNS = [
    "ability",
    "items",
    "seeds",
    "score",
    "item_corr",
    "seed_sd",
    "inputs",
    "se_data",
    "mde_data",
    "resistant_data",
    "se_size",
    "mde_size",
    "resistant_size",
    "se_policy",
    "mde_policy",
]


def _r(value: float, digits: int = 2):
    return None if value is None or not np.isfinite(value) else round(float(value), digits)


def power_rows(
    shape: Shape,
    by_ability: dict[str, Inputs],
    sources: dict[str, str],
    delta: float = DELTA,
    policy: bool = False,
) -> list[dict]:
    """One row per ability (and a ``macro`` row with a policy): module docstring's columns."""
    rows = []
    for ability, inputs in by_ability.items():
        inputs.check(ability)
        row = dict(
            ability=ability,
            items=shape.items,
            seeds=shape.seeds,
            score=_r(inputs.score, 1),
            item_corr=_r(inputs.item_corr),
            seed_sd=_r(inputs.seed_sd),
            inputs=sources.get(ability, "prior"),
        )
        for axis, se in (("data", data_se(shape, inputs)), ("size", size_se(shape, inputs))):
            mde, reachable = power(se, delta)
            row |= {f"se_{axis}": _r(se), f"mde_{axis}": _r(mde)}
            row[f"resistant_{axis}"] = bool(reachable) if np.isfinite(se) else None
        se = difference_se(inputs, shape.items, shape.seeds, shape.seeds) if policy else np.nan
        row |= {"se_policy": _r(se), "mde_policy": _r(power(se, delta).mde)}
        rows.append(row)
    if policy and by_ability:
        se = macro_difference_se(by_ability, shape.items, shape.seeds, shape.seeds)
        blank = {c: None for c in COLUMNS}
        rows.append(
            blank
            | dict(ability="macro", items=shape.items, seeds=shape.seeds, inputs="-")
            | {"se_policy": _r(se), "mde_policy": _r(power(se, delta).mde)}
        )
    return rows


def card_items() -> tuple[dict[str, int], dict[str, int]]:
    """(test items, every item) per ability from the DoIT dataset card's expected counts
    (``data/doit/expected.yaml``: the test split, and the full train pool + valid + test)."""
    from doit.data.validate import load_expectation

    path, spec = load_expectation("doit")
    counts = {}
    for entry in spec["files"]:
        for key, split in (
            ("curated/test/{ability}_test.json", "test"),
            ("curated/valid/{ability}_valid.json", "valid"),
            ("curated/full/{ability}_full.json", "full"),
        ):
            if entry.get("path") == key:
                by = entry.get("count_by_ability") or {}
                counts[split] = {a: int(by.get(a, entry.get("count", 0))) for a in ab.ABILITY_KEYS}
    if "test" not in counts or "full" not in counts:
        raise ValueError(f"{path}: no test or full-pool counts")
    valid = counts.get("valid", dict.fromkeys(ab.ABILITY_KEYS, 0))
    total = {a: counts["full"][a] + valid[a] + counts["test"][a] for a in ab.ABILITY_KEYS}
    return counts["test"], total


def parse_levels(text: str | None) -> dict[str, float]:
    """``--score-levels``: one value (every ability) or ``ability=p,...`` (points); {} for None."""
    if not text:
        return {}
    if "=" not in text:
        return {a: _number("--score-levels", text) for a in ab.ABILITY_KEYS}
    out = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        try:
            (ability,) = ab.parse_keys(key)
        except ValueError as e:
            raise ValueError(f"--score-levels: {e}") from None
        out[ability] = _number("--score-levels", value)
    return out


def _number(flag: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{flag}: {text!r} is not a number") from None


def ability_inputs(
    pilot=None,
    levels: dict | None = None,
    item_corr: float | None = None,
    seed_sd: float | None = None,
    design_effect: float = 1.0,
    abilities=ab.ABILITY_KEYS,
) -> tuple[dict[str, V.Inputs], dict[str, str]]:
    """(ability -> Inputs, ability -> what they came from): the pilot's measurements where it
    has the ability (a prior flag given overrides it), else the priors."""
    levels, by, said = levels or {}, {}, {}
    for a in abilities:
        if pilot and a in pilot:
            inputs, info = pilot[a]
            if a in levels:
                inputs = replace(inputs, score=levels[a], scores={})
            if item_corr is not None:  # the user's pairing, for every pair of cells
                inputs = replace(inputs, item_corr=item_corr, difficulty_sd=None)
            said[a] = f"pilot ({info['items']} items, seed sd: {info['seed_source']})"
        else:
            inputs = V.Inputs(
                score=levels.get(a, V.SCORE_PRIOR),
                item_corr=V.ITEM_CORR_PRIOR if item_corr is None else item_corr,
                seed_sd=V.SEED_SD_PRIOR if seed_sd is None else seed_sd,
                design_effect=design_effect,
            )
            said[a] = "priors" + (" (not in the pilot)" if pilot else "")
        by[a] = inputs
    return by, said


def decided(row: dict, targets: dict[str, float]) -> bool:
    """Whether a row meets every target (axis -> largest acceptable MDE, points; ``policy``
    for the policy difference; a target on an axis the design lacks is unmet)."""
    for axis, target in targets.items():
        mde = row.get(f"mde_{axis}")
        if mde is None or mde > target:
            return False
    return True


def format_rows(rows: list[dict], delta: float) -> str:
    """The table for people: per ability the MDEs and whether resistance is reachable."""

    def cell(value, yes="yes", no="no"):
        if value is None:
            return "-"
        if isinstance(value, bool):
            return yes if value else no
        return f"{value:g}"

    policy = any(r.get("mde_policy") is not None for r in rows)
    head = f"{'ability':<17} {'items':>5} {'seeds':>5} {'score':>5} {'rho':>5} {'seed_sd':>7}"
    head += f" {'mde_data':>8} {'resist':>6} {'mde_size':>8} {'resist':>6}"
    head += f" {'mde_policy':>10}" if policy else ""
    lines = [head + "  inputs"]
    for r in rows:
        line = (
            f"{r['ability']:<17} {cell(r['items']):>5} {cell(r['seeds']):>5} "
            f"{cell(r['score']):>5} {cell(r['item_corr']):>5} {cell(r['seed_sd']):>7} "
            f"{cell(r['mde_data']):>8} {cell(r['resistant_data']):>6} "
            f"{cell(r['mde_size']):>8} {cell(r['resistant_size']):>6}"
        )
        line += f" {cell(r['mde_policy']):>10}" if policy else ""
        lines.append(f"{line}  {r['inputs']}")
    lines.append(
        f"mde: the smallest true effect called responsive (95% lower bound > {delta:g}) with "
        f"80% probability (points per 4x n, per doubling, policy - uniform); resist: the 90% "
        f"interval's expected half-width is below {delta:g} (resistant is reachable)"
    )
    return "\n".join(lines)
