"""The macro score: the one rule every consumer of scores uses (``doit.eval.score``'s
``macro_in_domain``, checkpoint selection, ``doit grid table``, the analysis and the
curriculum's validation).

- **Which abilities**: the in-domain ones (``ABILITY_KEYS``, the ten the study trains on; the
  C-Eval OOD sets are never among them) that are *expected*: all ten for one evaluation, and
  for a study the in-domain abilities it scores anywhere on the split (all ten unless its corpus
  holds fewer; a study of a few abilities has a macro over those).
- **A missing ability**: when any expected ability has no score (absent, or null because
  predictions were missing) the macro is null (None, NaN in a table), never the mean of the
  abilities that remain. A mean over fewer abilities is another quantity: checkpoint selection
  on the valid macro would prefer an epoch whose hardest ability failed to score, and two cells
  compared on different ability sets would differ by what they were asked, not by what they
  learnt. So a checkpoint without a macro is not eligible for selection (``select`` falls back
  as for a cell without an eligible epoch), a table shows it empty, and a difference of macros
  is null.

``overall`` (the ten and the three C-Eval sets) follows the same completeness rule
(``complete_mean``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from doit.data.abilities import ABILITY_KEYS


def in_domain(abilities: Iterable[str] = ABILITY_KEYS) -> tuple[str, ...]:
    """The in-domain abilities among ``abilities``, in registry order: what a macro averages."""
    present = set(abilities)
    return tuple(k for k in ABILITY_KEYS if k in present)


def complete(have: Iterable[str], keys: Iterable[str]) -> bool:
    """Whether every one of ``keys`` is among ``have`` (the abilities with a score): the
    condition for a macro (or overall) to exist."""
    keys = tuple(keys)
    return bool(keys) and set(keys) <= set(have)


def complete_mean(scores: Mapping[str, float | None], keys: Iterable[str]) -> float | None:
    """The mean of ``scores`` over ``keys``; None when one of them is missing or null."""
    keys = tuple(keys)
    have = [k for k in keys if _known(scores.get(k))]
    if not complete(have, keys):
        return None
    return sum(scores[k] for k in keys) / len(keys)


def macro(scores: Mapping[str, float | None], expected: Iterable[str] = ABILITY_KEYS):
    """The macro of one checkpoint's ``scores`` (ability -> score or None) over the in-domain
    abilities of ``expected``; None when one of them is missing or null (module docstring)."""
    return complete_mean(scores, in_domain(expected))


def macro_by(rows, by: list[str], expected: Iterable[str] | None = None):
    """A pandas frame with a row per group of ``by``: ``score`` the macro of the group's
    ``rows`` (a pandas frame, columns ``ability`` and ``score``, a row per ability), NaN when
    one of the in-domain abilities of ``expected`` (default: those among ``rows``) is missing
    or null there. A group without in-domain rows is absent."""
    keys = in_domain(rows["ability"] if expected is None else expected)
    mine = rows[rows["ability"].isin(keys)]
    out = mine.groupby(by, as_index=False, sort=True)["score"].mean()
    scored = mine[mine["score"].notna()].groupby(by, sort=True)["ability"].nunique()
    have = out.merge(scored.rename("have").reset_index(), on=by, how="left")["have"]
    have = have.fillna(0).to_numpy()
    out.loc[have < len(keys), "score"] = math.nan
    return out


def _known(score) -> bool:
    return score is not None and not (isinstance(score, float) and math.isnan(score))
