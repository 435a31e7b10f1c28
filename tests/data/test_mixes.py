"""Mix YAML schema, fill arithmetic and sampling."""

from pathlib import Path

import pytest
import yaml

from doit.data import abilities as ab
from doit.data.load import load_items
from doit.data.mixes import MixError, build_mix, fill_equal, load_mix, parse_mix, resolve_counts
from tests.data.pools import DOIT_FULL, uniform, write_pool

MIXES = Path(__file__).parents[2] / "recipes" / "mixes"


def test_reconstruct_on_the_doit_pool_table():
    counts = resolve_counts(load_mix(MIXES / "reconstruct.yaml"), DOIT_FULL)
    assert sum(counts.values()) == 10_000
    assert counts["ethics"] == counts["role_play"] == 64 and counts["creative_writing"] == 1000
    assert counts["biology"] == 1042  # capped at its pool, overflow re-shared
    assert {
        counts[k] for k in ("history", "code", "chinese", "understanding", "reasoning", "math")
    } == {1305}


def test_fill_remainder_goes_in_registry_order():
    out = fill_equal(10, ("math", "biology", "code"), {"math": 99, "biology": 99, "code": 99})
    assert out == {"biology": 4, "code": 3, "math": 3}
    out = fill_equal(10, ("math", "biology"), {"math": 99, "biology": 2})
    assert out == {"biology": 2, "math": 8}


def test_shipped_mixes_parse():
    specs = {p.name: load_mix(p) for p in sorted(MIXES.glob("*.yaml"))}
    assert set(specs) == {
        "baseline.yaml",
        "reconstruct.yaml",
        "maximum.yaml",
        "maximum+2560.yaml",
        "maximum+40960.yaml",
    }
    assert (
        sum(resolve_counts(specs["baseline.yaml"], {k: 1000 for k in ab.ABILITY_KEYS}).values())
        == 10_000
    )
    maximum = resolve_counts(specs["maximum.yaml"], DOIT_FULL)
    assert maximum["math"] == 11501 and maximum["ethics"] == 64
    assert specs["maximum+40960.yaml"].synthetic == 40960


@pytest.mark.parametrize(
    "raw,where",
    [
        ({"counts": {"poetry": 3}}, "counts.poetry"),
        ({"counts": {"math": -1}}, "counts.math"),
        ({"counts": {"math": "lots"}}, "counts.math"),
        ({"source": "all"}, "source: expected 1000 or full"),
        ({"fill": {"total": 10, "rule": "proportional"}}, "fill.rule"),
        ({"counts": {"math": 3}, "exclude": ["math"]}, "exclude"),
        ({"sed": 1}, "sed"),
    ],
)
def test_bad_mix_names_file_and_key(raw, where):
    with pytest.raises(MixError, match=f"m.yaml: {where}"):
        parse_mix(raw, "m.yaml")


def test_count_over_pool_and_budget_errors():
    spec = parse_mix({"counts": {"math": 5000}}, "m.yaml")
    with pytest.raises(MixError, match="counts.math: 5000 exceeds the 1000 pool of 1000"):
        resolve_counts(spec, {"math": 1000})
    spec = parse_mix({"counts": {"math": 50}, "fill": {"total": 10}}, "m.yaml")
    with pytest.raises(MixError, match="fill.total"):
        resolve_counts(spec, {"math": 1000})


def test_build_mix_samples_randomly_with_exclude_and_synthetic(tmp_path):
    src = write_pool(tmp_path / "src", uniform(60), synthetic=50)
    path = tmp_path / "m.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "seed": 3,
                "counts": {"math": 10},
                "fill": {"total": 46},
                "exclude": ["ethics"],
                "synthetic": 5,
            }
        )
    )
    manifest = build_mix(src, load_mix(path), tmp_path / "out")
    items = load_items(tmp_path / "out", "train")
    counts = manifest["train_counts"]
    assert counts["math"] == 10 and "ethics" not in counts and counts[ab.SYNTHETIC] == 5
    assert sum(v for k, v in counts.items() if k != ab.SYNTHETIC) == 46
    math_ids = sorted(it["idx"] for it in items if it["ability"] == "math")
    assert math_ids != list(range(10))  # never first-k
    again = build_mix(src, load_mix(path), tmp_path / "out2")
    assert (
        again["files"]["curated/train/math.jsonl"] == manifest["files"]["curated/train/math.jsonl"]
    )


def reconstruct_from(source: str) -> dict:
    raw = yaml.safe_load((MIXES / "reconstruct.yaml").read_text(encoding="utf-8"))
    return {**raw, "source": source}


def test_fill_short_of_its_total_is_an_error_naming_the_capping_pools():
    spec = parse_mix(reconstruct_from("1000"), "r.yaml")
    with pytest.raises(MixError, match="r.yaml: fill.total: 10000") as e:
        resolve_counts(spec, {k: 1000 for k in ab.ABILITY_KEYS})
    msg = str(e.value)
    assert "8128" in msg and "short by 1872" in msg and "allow_short" in msg
    for key in ("biology", "history", "code", "chinese", "understanding", "reasoning", "math"):
        assert f"{key} 1000" in msg, key
    assert "ethics 1000" not in msg  # a fixed count, not a pool that caps the fill


def test_allow_short_records_the_shortfall_in_the_manifest(tmp_path):
    src = write_pool(tmp_path / "src", uniform(20))
    raw = {"counts": {"math": 5}, "fill": {"total": 300, "allow_short": True}}
    spec = parse_mix(raw, "m.yaml")
    assert sum(resolve_counts(spec, {k: 20 for k in ab.ABILITY_KEYS}).values()) == 185
    manifest = build_mix(src, spec, tmp_path / "out")
    assert sum(manifest["train_counts"].values()) == 185
    assert manifest["shortfall"] == {
        "total": 300,
        "resolved": 185,
        "short": 115,
        "capped_by": {k: 20 for k in ab.ABILITY_KEYS if k != "math"},
    }
    with pytest.raises(MixError, match="m.yaml: fill.allow_short"):
        parse_mix({"fill": {"total": 3, "allow_short": "yes"}}, "m.yaml")


def test_cells_are_mix_specs_built_by_constructors():
    from doit.data.mixes import per_ability_spec, synthetic_spec

    spec = per_ability_spec(16, seed=2, exclude=["ethics"])
    assert spec.cell == "n0016-no-ethics" and spec.seed == 2 and spec.exclude == ("ethics",)
    assert set(spec.counts) == set(ab.ABILITY_KEYS) - {"ethics"}
    assert set(spec.counts.values()) == {16} and spec.synthetic == 0
    some = per_ability_spec(4, abilities="math,code", source="full")
    assert some.counts == {"math": 4, "code": 4} and some.source == "full"
    syn = synthetic_spec(40)
    assert syn.cell == "s00040" and syn.synthetic == 40 and not syn.counts


def test_a_constructed_cell_names_the_flag_its_draw_overflows(tmp_path):
    from doit.data.mixes import per_ability_spec, sample_mix, synthetic_spec

    root = write_pool(tmp_path / "pool", uniform(3), synthetic=5)
    with pytest.raises(MixError, match=r"^n=4 exceeds the 'biology' pool of 3 items") as e:
        sample_mix(per_ability_spec(4), root)
    assert e.value.key == "per_ability"
    with pytest.raises(MixError, match=r"^6 exceeds the synthetic pool of 5 items") as e:
        sample_mix(synthetic_spec(6), root)
    assert e.value.key == "synthetic"


STAGED = {
    "seed": 4,
    "stages": [
        {"counts": {"math": 12, "code": 8}, "num_train_epochs": 2, "learning_rate": 1e-3},
        {"fill": {"total": 40}, "exclude": ["math", "code"], "replay": 5},
    ],
}


def test_a_staged_mix_draws_each_stage_and_replays_the_earlier_ones(tmp_path):
    from doit.data.mixes import sample_mix

    spec = parse_mix(STAGED, "s.yaml")
    assert [st.replay for st in spec.stages] == [0, 5] and spec.stages[1].spec.seed == 4
    assert spec.stages[0].schedule == {"num_train_epochs": 2, "learning_rate": 1e-3}
    assert spec.stages[1].schedule == {}
    root = write_pool(tmp_path / "pool", uniform(30))
    first, second = (sample_mix(spec, root, stage=k) for k in (1, 2))
    assert {it["ability"] for it in first} == {"math", "code"} and len(first) == 20
    own, replayed = second[:40], second[40:]
    assert not {it["ability"] for it in own} & {"math", "code"} and len(own) == 40
    ids = {(it["ability"], it["idx"]) for it in first}
    assert len(replayed) == 5 and {(it["ability"], it["idx"]) for it in replayed} <= ids
    assert sample_mix(spec, root) == first + second  # every stage, in order
    alone = sample_mix(parse_mix({"seed": 4, "counts": {"math": 12, "code": 8}}), root)
    assert alone == first  # a stage draws as the same mix would alone
    with pytest.raises(MixError, match="s.yaml: stages: stage 3 asked; the mix has 2"):
        sample_mix(spec, root, stage=3)


@pytest.mark.parametrize(
    "stages,where",
    [
        ([{"counts": {"math": 3}}], "stages: expected a list of two or more"),
        ([{"counts": {"math": 3}, "replay": 2}, {"counts": {"code": 3}}], r"stages\[1\]: replay"),
        ([{"counts": {"math": 3}}, {"seed": 2}], r"stages\[2\]: seed: unknown key"),
        ([{"counts": {"math": 3}}, {}], r"stages\[2\]: \(stage\): draws nothing"),
        (
            [{"counts": {"math": 3}}, {"replay": 1, "learning_rate": 0}],
            r"stages\[2\]: learning_rate",
        ),
        ([{"counts": {"poetry": 3}}, {"replay": 1}], r"stages\[1\]: counts.poetry"),
    ],
)
def test_a_bad_stage_names_the_file_the_stage_and_the_key(stages, where):
    with pytest.raises(MixError, match=f"s.yaml: {where}"):
        parse_mix({"stages": stages}, "s.yaml")
    with pytest.raises(MixError, match="s.yaml: counts: a staged mix draws in its stages"):
        parse_mix({"counts": {"math": 1}, "stages": STAGED["stages"]}, "s.yaml")


def test_a_replay_beyond_the_earlier_stages_is_an_error_and_a_staged_mix_is_no_cell(tmp_path):
    from doit.data.mixes import sample_mix

    root = write_pool(tmp_path / "pool", uniform(30))
    spec = parse_mix({"stages": [{"counts": {"math": 2}}, {"replay": 3}]}, "s.yaml")
    with pytest.raises(MixError, match=r"s.yaml: stages\[2\]: replay: 3 exceeds .* 2 items"):
        sample_mix(spec, root, stage=2)
    with pytest.raises(MixError, match="trained stage by stage"):
        build_mix(root, spec, tmp_path / "out")
