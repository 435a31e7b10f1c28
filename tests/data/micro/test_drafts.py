"""``weighted_choice``: the one weighted pick of the micro generators."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from doit.data.micro.drafts import weighted_choice


class Rolls:
    """A stand-in RNG whose ``random()`` returns the given rolls in turn."""

    def __init__(self, *rolls: float):
        self.rolls = list(rolls)

    def random(self) -> float:
        return self.rolls.pop(0)


FAMILIES = (("rule", 30), ("plan", 25), ("change", 25), ("who", 20))


@pytest.mark.parametrize(
    ("roll", "picked"),
    [
        (0.0, "rule"),
        (0.2999999, "rule"),
        (0.3, "plan"),
        (0.5499999, "plan"),
        (0.55, "change"),
        (0.7999999, "change"),
        (0.8, "who"),
        (0.9999999, "who"),
    ],
)
def test_a_roll_picks_the_first_option_whose_cumulative_share_exceeds_it(roll, picked):
    rng = Rolls(roll, 0.0)
    assert weighted_choice(rng, FAMILIES) == picked
    assert rng.rolls == [0.0]  # exactly one draw per pick


def test_shares_are_the_exact_thresholds_the_generators_compared_against():
    """Weights 30/25/25/20 pick exactly as ``roll < 0.3 / 0.55 / 0.8`` did: same bytes."""
    rng, ladder_rng = random.Random(7), random.Random(7)
    for _ in range(20_000):
        roll = ladder_rng.random()
        expected = (
            "rule" if roll < 0.3 else "plan" if roll < 0.55 else "change" if roll < 0.8 else "who"
        )
        assert weighted_choice(rng, FAMILIES) == expected


def test_frequencies_follow_the_weights():
    rng = random.Random(0)
    counts = Counter(weighted_choice(rng, (("a", 7), ("b", 2), ("c", 1))) for _ in range(20_000))
    assert abs(counts["a"] / 20_000 - 0.7) < 0.02 and abs(counts["c"] / 20_000 - 0.1) < 0.01


@pytest.mark.parametrize(
    ("weighted", "message"),
    [
        ((), "no options"),
        ((("a", 3), ("b", 0)), "'b'.*weight 0"),
        ((("a", 2.5),), "'a'.*weight 2.5"),
    ],
)
def test_bad_weights_are_refused_naming_the_option(weighted, message):
    with pytest.raises(ValueError, match=message):
        weighted_choice(random.Random(0), weighted)
