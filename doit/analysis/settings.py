"""What an analysis is asked for: ``Settings``, each setting with its one default, and the
``doit analysis`` flags built from them (as TRL's and LitGPT's parsers are built from their
dataclasses): `add_flags` adds a flag per field, with a command's own defaults where they
differ (the curriculum fits on valid under ``last``) and its help saying so; `from_args`
reads them back.

Data an analysis reads beside its study (Complexity, ground truth, extra feature columns) are
inputs of `doit.analysis.pipeline.Analysis`, not settings."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from doit.analysis.bootstrap import REPLICATES
from doit.analysis.formulation import CHOSEN_ON, FORMULATION_RULES, MAX
from doit.analysis.select import SELECTION_RULES
from doit.analysis.sensitivity import DELTA
from doit.data.kinds import FORMULATIONS
from doit.flags import at_least

SPLITS = ("test", "valid")  # the splits a fit can be made on


def base_names(text: str) -> tuple[str, ...]:
    """``--bases a,b``: the names, in order, none empty or repeated."""
    names = tuple(n.strip() for n in text.split(","))
    if not all(names) or len(set(names)) != len(names):
        raise ValueError(f"--bases: expected comma-separated distinct names, got {text!r}")
    return names


@dataclass(frozen=True)
class Settings:
    """One analysis's settings; a field's ``metadata`` is its flag's (``choices`` or ``type``,
    ``help``). Values outside the choices are a ValueError naming the field."""

    rule: str = field(
        default="study",
        metadata={"choices": SELECTION_RULES, "help": "checkpoint selection (select.py)"},
    )
    split: str = field(
        default="test",
        metadata={"choices": SPLITS, "help": "the split fitted (valid only under --rule last)"},
    )
    replicates: int = field(
        default=REPLICATES, metadata={"type": at_least(1), "help": "bootstrap replicates"}
    )
    delta: float = field(
        default=DELTA,
        metadata={"type": at_least(0, float), "help": "equivalence margin, points"},
    )
    seed: int = field(default=0, metadata={"type": int, "help": "bootstrap seed"})
    seed_sd: float | None = field(
        default=None,
        metadata={
            "type": at_least(0, float),
            "help": "a prior for the training-seed SD (logit units, bootstrap.py) used where "
            "no grid point has >= 2 seeds; none by default: intervals then cover item "
            "sampling only (the micro models measured 0.091 on the demo's recipe: "
            "doit/analysis/README.md, Seed variance)",
        },
    )
    seed_corr: float = field(
        default=1.0,
        metadata={
            "type": float,
            "help": "the correlation (0-1) of one training's seed effects across its abilities: "
            "1 (default), one draw moves them all (conservative for a macro); the micro runs "
            "measured about 0.05 (doit/analysis/README.md, Seed variance)",
        },
    )
    formulation: str = field(
        default=MAX,
        metadata={
            "choices": FORMULATION_RULES,
            "help": "which scoring of a checkpoint scored in several formulations is read: "
            "max (OLMES's rule) or one formulation's",
        },
    )
    formulation_split: str = field(
        default=CHOSEN_ON,
        metadata={
            "choices": SPLITS,
            "help": "the split the max rule chooses each ability's formulation on (then read "
            "on every split)",
        },
    )
    cell_formulation: str | None = field(
        default=None,
        metadata={
            "choices": FORMULATIONS,
            "help": "the cells trained in this formulation (needed when the table holds "
            "several: a grid's formulation axis)",
        },
    )

    bases: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "type": base_names,
            "help": "comma-separated base names: analyse only their cells (e.g. the vanilla "
            "ladder of a study that also holds other architectures); none: every base",
        },
    )

    def __post_init__(self):
        for f in fields(self):
            value, choices = getattr(self, f.name), f.metadata.get("choices")
            if choices and value is not None and value not in choices:
                raise ValueError(
                    f"settings: {f.name}: {value!r} is not one of {', '.join(choices)}"
                )
        if not self.replicates >= 1 or not self.delta >= 0:
            raise ValueError(
                f"settings: replicates {self.replicates} (>= 1), delta {self.delta} (>= 0)"
            )
        if self.seed_sd is not None and not self.seed_sd >= 0:
            raise ValueError(f"settings: seed_sd {self.seed_sd} (>= 0)")
        if not 0 <= self.seed_corr <= 1:
            raise ValueError(f"settings: seed_corr {self.seed_corr} (0-1)")


def add_flags(parser, defaults: Settings = Settings(), why: str = "") -> None:
    """A flag per setting (``--cell-formulation`` for ``cell_formulation``) with ``defaults``'
    values; where one differs from `Settings`' own, its help says so, and ``why``."""
    standard = Settings()
    for f in fields(Settings):
        meta, value = f.metadata, getattr(defaults, f.name)
        shown = "" if value is None else f" (default {value})"
        if value != getattr(standard, f.name):
            shown = f" (default {value}, not the analysis's {getattr(standard, f.name)}: {why})"
        kind = {"choices": meta["choices"]} if "choices" in meta else {"type": meta["type"]}
        parser.add_argument(
            "--" + f.name.replace("_", "-"), default=value, help=meta["help"] + shown, **kind
        )


def from_args(args) -> Settings:
    """The settings a command's parsed flags (`add_flags`) give."""
    return Settings(**{f.name: getattr(args, f.name) for f in fields(Settings)})
