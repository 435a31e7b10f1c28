"""doit.analysis.ladder (``doit analysis ladder``) on fabricated ladder metrics with known answers.

Losses follow L = 20 N^-0.2 (vanilla); resformer reaches a loss with 0.8 x the parameters
(L = 20 (N / 0.8)^-0.2), svformer needs 1.1 x (and its models are 0.9 x the size). Seed s
multiplies every loss by exp(E[s]) and resformer's also by exp(F[s]); both average to zero over
seeds, so the least-squares lines are exact and the equal-loss ratios are 0.8 and 1.1.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from doit.analysis import ladder as lad
from doit.analysis.cli import main
from doit.grid.pretraining import COLUMNS

SIZES = {"xs": 2e5, "s": 4e5, "m": 8e5}
SEEDS = (0, 1, 2)
E = (-0.01, 0.0, 0.01)  # shared seed effect
F = (0.002, -0.004, 0.002)  # resformer's own seed effect
ARCHS = {"vanilla": (1.0, 1.0), "resformer": (1.0, 0.8), "svformer": (0.9, 1.1)}  # size, ratio


def fabricated_loss(arch: str, size: str, seed: int) -> tuple[int, float]:
    scale, ratio = ARCHS[arch]
    n = int(SIZES[size] * scale)
    noise = E[seed] + (F[seed] if arch == "resformer" else 0.0)
    return n, 20 * (n / ratio) ** -0.2 * np.exp(noise)


@pytest.fixture(scope="module")
def ladder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ladder")
    for arch in ARCHS:
        for size in SIZES:
            for seed in SEEDS:
                n, loss = fabricated_loss(arch, size, seed)
                run = root / f"{arch}_{size}" / f"seed{seed}"
                run.mkdir(parents=True)
                end = {
                    "kind": "end",
                    "step": 272,
                    "tokens": 1_114_112,
                    "wall_s": 30.0,
                    "arch": arch,
                    "size": size,
                    "seed": seed,
                    "params_non_embedding": n,
                    "params_total": n + 185_000,
                    "valid_loss": loss,
                    "unigram_entropy": 5.7,
                    "unigram_valid_loss": 5.8,
                }
                start = {"kind": "start", "step": 0, "tokens": 0, "wall_s": 0.0}
                (run / "metrics.jsonl").write_text(
                    json.dumps(start) + "\n" + json.dumps(end) + "\n"
                )
    unfinished = root / "vanilla_l" / "seed0"  # no end row: left out with a warning
    unfinished.mkdir(parents=True)
    (unfinished / "metrics.jsonl").write_text(json.dumps({"kind": "start", "step": 0}) + "\n")
    return root


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def result(ladder, tmp_path_factory):
    """``doit analysis ladder LADDER --out OUT``: (out, stdout, logged warnings)."""
    out = tmp_path_factory.mktemp("analysis")
    log, stdout = Lines(), io.StringIO()
    logging.getLogger("doit.grid.pretraining").addHandler(log)  # the one reader's warnings
    try:
        with contextlib.redirect_stdout(stdout):
            assert main(["ladder", str(ladder), "--out", str(out), "--replicates", "300"]) == 0
    finally:
        logging.getLogger("doit.grid.pretraining").removeHandler(log)
    return out, stdout.getvalue(), log.lines


def test_table_matches_hand_computation(result):
    out = result[0]
    table = pd.read_csv(out / "table.csv").set_index(["arch", "size"])
    assert len(table) == 9 and (table.n_seeds == 3).all()
    for arch in ARCHS:
        for size in SIZES:
            row = table.loc[(arch, size)]
            losses = np.array([fabricated_loss(arch, size, s)[1] for s in SEEDS])
            assert row.params_non_embedding == fabricated_loss(arch, size, 0)[0]
            assert row.valid_loss_mean == pytest.approx(losses.mean(), abs=1e-12)
            assert row.valid_loss_sd == pytest.approx(losses.std(ddof=1), abs=1e-12)
            if arch == "vanilla":
                assert np.isnan(row.diff_vs_vanilla_mean)
                continue
            base = np.array([fabricated_loss("vanilla", size, s)[1] for s in SEEDS])
            assert row.diff_vs_vanilla_mean == pytest.approx((losses - base).mean(), abs=1e-12)
            assert row.diff_vs_vanilla_sd == pytest.approx((losses - base).std(ddof=1), abs=1e-12)
            assert bool(row.beyond_2sd)


def test_fits_and_equal_loss_ratio(result):
    out = result[0]
    fits = pd.read_csv(out / "fits.csv").set_index("arch")
    assert fits.slope.to_numpy() == pytest.approx([-0.2] * 3, abs=1e-9)
    assert fits.loc["vanilla", "intercept"] == pytest.approx(np.log(20), abs=1e-9)
    assert fits.loc["resformer", "n_ref"] == pytest.approx(4e5)  # geometric mean of 2e5..8e5
    assert fits.loc["resformer", "param_ratio"] == pytest.approx(0.8, abs=1e-9)
    assert fits.loc["resformer", "fewer_params_pct"] == pytest.approx(20.0, abs=1e-6)
    assert fits.loc["svformer", "param_ratio"] == pytest.approx(1.1, abs=1e-9)
    lo, hi = fits.loc["resformer", ["ratio_ci_low", "ratio_ci_high"]]
    assert lo < 0.8 < hi and hi - lo < 0.1
    # svformer's noise is only the shared seed effect: every resample gives the same ratio
    assert fits.loc["svformer", ["ratio_ci_low", "ratio_ci_high"]].to_numpy() == pytest.approx(
        [1.1, 1.1], abs=1e-9
    )


def test_outputs_and_verdict(result):
    out, stdout, logged = result
    assert (out / "loss_vs_params.png").stat().st_size > 10_000
    assert any("vanilla_l/seed0 is unfinished" in line for line in logged)
    verdict = (out / "verdict.txt").read_text()
    assert "verdict: resformer beats vanilla at micro scale" in verdict
    assert "verdict: svformer is worse than vanilla at micro scale" in verdict
    assert "per size: xs -0.0760 +- 0.0058, s -0.0662" in verdict
    assert "0.800 (20.0% fewer parameters than vanilla)" in verdict
    assert "1.100 (10.0% more parameters than vanilla)" in verdict
    assert verdict.strip() in stdout
    assert "PASS: every run >= 1 nat below the unigram baseline (5.700 nats)" in verdict
    for arch in ARCHS:
        assert f"PASS: {arch} mean loss falls with size: xs " in verdict


def test_a_runs_table_in_any_order_gives_what_the_run_folders_give(result, tmp_path):
    """runs.csv (the pretraining table's schema, one row per run folder), shuffled, as CSV and
    as parquet: the same files."""
    out = result[0]
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 27 and list(runs.columns) == list(COLUMNS)
    assert runs["base"].str.fullmatch(r"[a-z]+_[a-z]+").all() and runs["cell"].is_unique
    shuffled = runs.sample(frac=1, random_state=1)
    shuffled.to_csv(tmp_path / "pretraining.csv", index=False)
    shuffled.to_parquet(tmp_path / "pretraining.parquet", index=False)
    for table in ("pretraining.csv", "pretraining.parquet"):
        again = lad.analyse(lad.load_runs([tmp_path / table]), replicates=300)
        assert again.text + "\n" == (out / "verdict.txt").read_text()
        assert again.fits.to_csv(index=False) == (out / "fits.csv").read_text()
        assert again.table.to_csv(index=False) == (out / "table.csv").read_text()


GOOD = "cell,base,arch,size,seed,params_non_embedding,params_total,valid_loss,tokens,wall_s,"
GOOD += "unigram_loss\n"


def test_a_bad_runs_table_names_the_file_line_and_column(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(
        GOOD + "a,v,vanilla,xs,0,10,20,4.1,100,1.0,\nb,v,vanilla,s,0,20,30,oops,100,1.0,5.7\n"
    )
    with pytest.raises(
        ValueError, match=r"runs.csv:3: column 'valid_loss' is not a number: 'oops'"
    ):
        lad.load_runs([path])
    path.write_text(GOOD.replace(",wall_s", "") + "a,v,vanilla,xs,0,10,20,4.1,100,5.7\n")
    with pytest.raises(ValueError, match="missing column.s.: wall_s"):
        lad.load_runs([path])
    path.write_text(GOOD + "a,v,vanilla,xs,,10,20,4.1,100,1.0,5.7\n")
    with pytest.raises(ValueError, match="runs.csv:2: column 'seed' is empty"):
        lad.load_runs([path])
    path.write_text(GOOD + "a,v,vanilla,xs,0.5,10,20,4.1,100,1.0,5.7\n")
    with pytest.raises(ValueError, match="runs.csv:2: column 'seed' is not an integer: 0.5"):
        lad.load_runs([path])
    path.write_text(GOOD)
    with pytest.raises(ValueError, match="runs.csv: no finished pretraining runs"):
        lad.load_runs([path])
    assert main(["ladder", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 2


def test_a_run_folder_and_a_grid_cell_give_one_row_by_one_unigram_rule(tmp_path):
    """A ladder run folder is read by the grid's pretraining reader: the same row a grid cell's
    DONE gives (`pretraining.row`), so an end row that records one unigram baseline as null
    takes the other (the ladder's own copy of the rule took min() over a None: TypeError)."""
    from doit.grid import pretraining

    end = {
        "kind": "end",
        "step": 1,
        "tokens": 64,
        "wall_s": 2.0,
        "arch": "vanilla",
        "size": "xs",
        "seed": 0,
        "params_non_embedding": 10,
        "params_total": 20,
        "valid_loss": 1.5,
        "unigram_entropy": 5.7,
        "unigram_valid_loss": None,
    }
    run = tmp_path / "ladder" / "vanilla_xs" / "seed0"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text(json.dumps(end) + "\n")
    (got,) = lad.load_runs([tmp_path / "ladder"]).to_dict("records")
    assert got == pretraining.row(str(run), "vanilla_xs", end) and got["unigram_loss"] == 5.7
    (run / "metrics.jsonl").write_text(json.dumps({**end, "kind": "start"}) + "\n")
    with pytest.raises(ValueError, match="no finished run"):
        lad.load_runs([tmp_path / "ladder"])


def test_ladder_checks_fail_when_close_to_unigram_or_flat():
    df = pd.DataFrame(
        {
            "arch": ["vanilla"] * 4,
            "size": ["xs", "xs", "s", "s"],
            "seed": [0, 1] * 2,
            "params_non_embedding": [1, 1, 2, 2],
            "params_total": [3, 3, 4, 4],
            "valid_loss": [5.0, 4.0, 4.6, 4.6],
            "tokens": 1,
            "wall_s": 1.0,
            "unigram_loss": 5.5,
        }
    )
    text = lad.ladder_checks(df, lad.summarize(df))
    assert "FAIL: every run >= 1 nat below the unigram baseline" in text
    assert "the closest is vanilla xs seed 0 at 5.0000 (0.500 below)" in text
    assert "FAIL: vanilla mean loss falls with size: xs 4.5000 -> s 4.6000" in text


def test_verdict_within_2sd_and_one_seed():
    assert "within 2 SD" in lad.verdict_word("resformer", "vanilla", -0.01, 0.006, 3)
    assert "one seed only" in lad.verdict_word("resformer", "vanilla", -0.01, float("nan"), 1)


def test_ratio_note_flags_flat_lines_and_extrapolation():
    note = lad.ratio_note
    assert note(-0.2, -0.2, 3e5, 2e5, 8e5) == ""
    assert note(-0.02, +0.01, 3e5, 2e5, 8e5).startswith("not measurable")
    assert note(-0.02, -0.01, 9e6, 2e5, 8e5).startswith(
        "extrapolated: the arch would need N = 9,000,000"
    )
