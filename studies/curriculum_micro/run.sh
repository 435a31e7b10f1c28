#!/usr/bin/env bash
# The curriculum's micro validation (issue #22), from the repository root: recipes/grids/micro.yaml
# (text formulation, the demo's two bases) with leave-one-out cells at n = 64 and 24 random
# mixtures of 2,560 items on vanilla_s; then `doit analysis curriculum --validate`: uniform,
# reconstruct, marginal and regression at 2,560 items on vanilla_s, two training seeds, compared
# on test. ~1 h on 2 idle cores when the micro study's cells are already done (studies/micro_study).
set -euo pipefail
PY=${PY:-.venv/bin/python}
STUDY=${STUDY:-runs/study/curriculum}
OUT=${OUT:-runs/curriculum/micro}
HERE=studies/curriculum_micro

test -f data/generated/micro/manifest.json || $PY -m doit.data micro --out data/generated/micro
$PY -m doit.grid plan recipes/grids/micro.yaml --out "$STUDY" --replan --set \
  'data={per_ability: [1, 4, 16, 64, 256], loo: {values: [64], bases: [vanilla_s]}, random_mixes: {count: 24, total: 2560, bases: [vanilla_s]}}'
run() { $PY -m doit.grid run "$STUDY" --max-parallel 2 --threads 1 --cells "$1"; }
run '*-n[0-9][0-9][0-9][0-9]-text-s*'   # the uniform grid and the untuned bases, seeds 0 and 1
run '*-n0064-no_*-text-s0-*'            # leave-one-out at n = 64, seed 0 (the transfer shares)
run '*mix_random*-text-s0-*'            # the 24 random mixtures, seed 0 (the regression's data)
$PY -m doit.analysis curriculum "$STUDY" --budget 2560 --base vanilla_s \
  --policy uniform,reconstruct,marginal,regression --data data/generated/micro \
  --validate --seeds 0,1 --max-parallel 2 --threads 1 --out "$OUT"
mkdir -p "$HERE/result/mixes" "$HERE/result/figures"
cp "$OUT"/*.csv "$OUT"/curriculum.md "$HERE/result/"
cp "$OUT"/mixes/*.yaml "$HERE/result/mixes/"
cp "$OUT"/figures/curriculum.png "$HERE/result/figures/"
cp "$OUT"/validate/differences.csv "$OUT"/validate/calibration.csv "$HERE/result/"
