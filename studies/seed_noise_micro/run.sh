#!/usr/bin/env bash
# The seed-noise lever (issue #30), from the repository root; resumable (a rerun reuses every
# finished cell). README.md beside this file says what it measures and what it found.
#   bash studies/seed_noise_micro/run.sh      (about 25 minutes on 2 idle cores)
# Writes runs/study/seed_noise_micro/{demo,tenth,zero} (three arms of grid.yaml, on the one
# vanilla_s base in runs/bases) and, here, seed_noise.csv (compare.py) and check.txt (whether
# this base and recipe reproduce the reference study's committed per-item rows).
set -euo pipefail
PY=${PY:-.venv/bin/python}
WORKERS=${WORKERS:-2}
CORPUS=data/generated/micro_ref
OUT=runs/study/seed_noise_micro
HERE=studies/seed_noise_micro
REF=studies/micro_reference
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

test -f $CORPUS/manifest.json || $PY -m doit.data micro --out $CORPUS   # default --held-out 400
recipe() {  # the sft key: the demo's recipe with lr_scheduler_kwargs $1 ("" = the config's)
  echo "sft={config: recipes/configs/sft/micro/full.yaml, overrides: {num_train_epochs: 3,
    learning_rate: 3.0e-4, eval_strategy: 'no'${1:+, lr_scheduler_kwargs: $1}}}"
}
plan() { $PY -m doit.grid plan $HERE/grid.yaml --out "$OUT/$1" --replan "${@:2}"; }
run() { $PY -m doit.grid run "$OUT/$1" --max-parallel "$WORKERS" --threads 1; }
plan demo --set "$(recipe '')"                              # the demo's recipe: lr_end 1e-4
plan tenth                                                  # the grid as written: lr_end 3e-5
plan zero --set "$(recipe '{lr_end: 0.0, power: 1.0}')"     # lr_end 0
for arm in demo tenth zero; do run $arm; done

# The demo arm's cells have the reference's ids: do they answer as its committed rows?
mkdir -p $OUT/reference
for f in results.csv results.items.csv; do gunzip -c $REF/$f.gz > $OUT/reference/$f; done
$PY - "$OUT" > $HERE/check.txt <<'PY'
import sys
from doit.grid.results import read_results
out = sys.argv[1]
mine = read_results(f"{out}/demo", per_item=True)
ref = read_results(f"{out}/reference/results.items.csv", per_item=True)
keys = ["cell", "split", "ability", "idx"]
both = mine[keys + ["correct"]].merge(ref[keys + ["correct"]], on=keys)
for cell, b in both.groupby("cell"):
    same = int((b["correct_x"] == b["correct_y"]).sum())
    print(f"{cell}: {same} of {len(b)} items answered as in the reference study's rows")
PY
cat $HERE/check.txt
$PY $HERE/compare.py demo=$OUT/demo tenth=$OUT/tenth zero=$OUT/zero --out $HERE
