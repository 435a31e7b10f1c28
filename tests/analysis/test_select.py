"""select_checkpoints: the study's rule, its fallbacks, and the other rules."""

import pandas as pd
import pytest

from doit.analysis import select_checkpoints
from doit.grid.results import frame


def rows(cell, valid_by_epoch, construction="curated", n=16):
    out = []
    for epoch, scores in valid_by_epoch.items():
        for ability, v in zip(("biology", "code"), scores):
            common = dict(
                cell=cell,
                base="s",
                arch="llama",
                params=10**7,
                construction=construction,
                n_per_ability=n,
                n_total=10 * n,
                seed=0,
                epoch=epoch,
                step=int(epoch),
                ability=ability,
                n_items=10,
                chance=25.0,
            )
            out.append({**common, "split": "valid", "score": v})
            out.append({**common, "split": "test", "score": 100 * epoch / 20})
    return out


@pytest.fixture
def table():
    return frame(
        rows("a", {3.0: (99, 99), 5.0: (40, 50), 10.0: (60, 50), 15.0: (50, 40)})
        + rows("short", {1.0: (90, 90), 4.0: (10, 10)})
        + rows("base", {0.0: (30, 30)}, construction="base", n=0)
    )


def epochs(sel: pd.DataFrame, key=("cell",)) -> dict:
    return sel.drop_duplicates(list(key)).set_index(list(key))["epoch"].astype(float).to_dict()


def test_study_rule_picks_best_macro_valid_among_epochs_from_5_and_records_fallbacks(table):
    sel = select_checkpoints(table)
    assert epochs(sel) == {"a": 10.0, "short": 4.0, "base": 0.0}  # 3.0 is better but < 5
    assert set(sel["split"]) == {"test"} and set(sel["rule"]) == {"study"}
    fb = sel.drop_duplicates("cell").set_index("cell")["fallback"].to_dict()
    assert fb == {"a": False, "short": True, "base": True}
    assert (sel.loc[sel["cell"] == "a", "score"] == 50.0).all()  # the test score of epoch 10


def test_other_rules(table):
    assert epochs(select_checkpoints(table, "best-valid"))["a"] == 3.0
    assert epochs(select_checkpoints(table, "last")) == {"a": 15.0, "short": 4.0, "base": 0.0}
    per = epochs(select_checkpoints(table, "study-per-ability"), ("cell", "ability"))
    assert per[("a", "biology")] == 10.0 and per[("a", "code")] == 5.0  # tie 50/50: earliest
    with pytest.raises(ValueError, match="expected one of"):
        select_checkpoints(table, "best")


def test_valid_is_reported_only_under_the_last_rule(table):
    both = select_checkpoints(table, "last", splits=("valid", "test"))
    assert set(both["split"]) == {"valid", "test"}
    assert epochs(both) == {"a": 15.0, "short": 4.0, "base": 0.0}
    with pytest.raises(ValueError, match="chooses by the valid split"):
        select_checkpoints(table, "study", splits=("valid", "test"))


@pytest.mark.parametrize("lost", ["null", "absent"])
def test_an_epoch_lacking_an_abilitys_valid_score_has_no_macro_and_is_not_chosen(lost):
    """Epoch 10's code score is null (or its row absent): its macro is not biology's 90 alone
    (doit.data.macro), so the study rule keeps epoch 5, the one epoch scored on both."""
    table = rows("a", {5.0: (40, 50), 10.0: (90, None)})
    if lost == "absent":
        table = [r for r in table if not (r["epoch"] == 10.0 and r["ability"] == "code")]
    sel = select_checkpoints(frame(table))
    assert epochs(sel) == {"a": 5.0} and not sel["fallback"].any()
    assert epochs(select_checkpoints(frame(table), "best-valid")) == {"a": 5.0}
