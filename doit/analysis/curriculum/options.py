"""What a curriculum is asked for (``Options``), and the one error it raises (``CurriculumError``:
one line naming the fix; the CLI exits 2 on it, before anything is written)."""

from __future__ import annotations

from dataclasses import dataclass, field

from doit.analysis.settings import Settings
from doit.data import abilities as ab

UNITS = ("items", "tokens")
TRANSFER = ("auto", "on", "off")
MODELS = ("auto", "linear", "lightgbm")
# Evidence-bounded by default (#32): marginal and regression give an ability at most REACH x the
# largest n observed for it, unless the study's own held-out one-step prediction error for it
# (`doit.analysis.predict`'s largest_n holdout on the target) is below EXTRAPOLATE_BELOW points:
# then one 4x step further (FURTHER x). `--reach R` sets every ability's bound instead.
REACH = 1.0
FURTHER = 4.0
EXTRAPOLATE_BELOW = 2.0  # points: the ladder work's "within 2 points" (predict.LADDER_WITHIN)
# The objective's risk aversion: marginal maximises sum_a w_a (mean_a - RISK x SD_a), SD_a the
# replicates' SD of S_a at its count. Chosen on the planted studies (bench/curriculum_oracle.py,
# doit/analysis/README.md): of 0, 0.5 and 1, lambda = 1 earned the most in every setting.
RISK = 1.0
# The staged policies (#32): DMT (Dong et al., ACL 2024) trains its specialist abilities first
# (theirs: math and code), then the rest with a small replay share of the specialists' items
# (they tried 1/256 to all of them). REPLAY_SHARE of the first stage's items is this toolkit's
# default, not the paper's tuned value: `--replay K` sets it.
SPECIALISTS = ("math", "code")
REPLAY_SHARE = 1 / 16
# The analysis settings a curriculum is fitted under unless asked otherwise: the valid split
# under the rule `last` (the one rule that may report valid), so test stays untouched for
# comparing the policies (`--validate`).
SETTINGS = Settings(rule="last", split="valid")
WHY = "the curriculum fits on valid, keeping test for comparing the policies"


class CurriculumError(ValueError):
    """A curriculum that cannot be made as asked; the message is one line naming the fix."""


@dataclass
class Options:
    """A curriculum request (the CLI's flags; defaults as documented in README.md)."""

    budget: int  # items (or assistant tokens with unit tokens) every equal-budget policy spends
    policies: tuple[str, ...] = ("marginal",)  # which policies (uniform always comes along)
    base: str | None = None  # the target base; None: the study's largest
    fit_base: str | None = None  # the base whose curves choose (None: the target); trains on both
    params: float | None = None  # a target outside the study, by non-embedding parameters
    pools: dict[str, int] | None = None  # ability -> items the mix can draw (None: from data)
    data: str | None = None  # the corpus the mix draws from (pools), if pools are not given
    pool: str = "1000"  # its train pool: "1000" | full (written as the mix's `source`)
    floors: dict[str, int] = field(default_factory=dict)  # ability -> fewest items (default 1)
    caps: dict[str, int] = field(default_factory=dict)  # ability -> most items (default: pool)
    weights: dict[str, float] = field(default_factory=dict)  # macro weights (default 1)
    unit: str = "items"  # items | tokens: what the budget counts
    transfer: str = "auto"  # auto: LOO cells if any; on: required; off: ignored
    model: str = "auto"  # regression's model: auto (by cross-validation) | linear | lightgbm
    reach: float | None = None  # None: evidence-bounded (REACH, FURTHER); a number: every ability
    risk: float = RISK  # lambda of the risk-aware objective (see RISK); 0: the plug-in optimum
    no_loss: bool = False  # no ability predicted below uniform by more than its MDE
    transfer_from: str | None = None  # a base other than the target whose LOO cells give T_a
    crossfit: bool = True  # predicted gains cross-fitted over two halves of valid's items
    specialist: tuple[str, ...] = SPECIALISTS  # dmt: the abilities its first stage trains
    replay: int | None = None  # staged policies: stage 1 items replayed (None: REPLAY_SHARE)
    settings: Settings = SETTINGS  # the analysis the curves are fitted by (see SETTINGS)


def parse_pairs(text: str | None, flag: str, kind=int) -> dict:
    """``ability=value,...`` (``--pools``, ``--floors``, ``--caps``, ``--weights``)."""
    out = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        try:
            (name,) = ab.parse_keys([key.strip()])
            number = kind(value)
        except ValueError as e:
            raise CurriculumError(f"{flag} {part!r}: expected ability=number ({e})") from None
        if not sep or not number >= 0:  # NaN too
            raise CurriculumError(f"{flag} {part!r}: expected ability=number >= 0")
        out[name] = number
    return out
