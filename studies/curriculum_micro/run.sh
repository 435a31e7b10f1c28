#!/usr/bin/env bash
# The curriculum's micro validation (issue #32), from the repository root; resumable (a rerun
# reuses every finished cell, and the demo's bases in runs/bases/).
#   bash studies/curriculum_micro/run.sh
# 1. grid.yaml: the uniform grid on vanilla_xs and vanilla_s (n = 4..256, seeds 0 and 1, all
#    400 test items), leave-one-out cells at n = 64 on both (seed 0), 12 random mixtures of
#    1,280 items on vanilla_s (seed 0);
# 2. the policies at 1,280 items on vanilla_s (uniform, marginal, regression, dmt, staged),
#    each trained for seeds 0, 1, 2 and compared with uniform on test (--validate);
# 3. the decision across sizes: marginal chosen on vanilla_xs, trained on both (--fit-base).
# Copies the small outputs into studies/curriculum_micro/result/.
set -euo pipefail
PY=${PY:-.venv/bin/python}
STUDY=${STUDY:-runs/study/curriculum_micro}
OUT=${OUT:-runs/curriculum/micro}
HERE=studies/curriculum_micro
CORPUS=data/generated/micro_ref
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

test -f $CORPUS/manifest.json || $PY -m doit.data micro --out $CORPUS   # default --held-out 400
$PY -m doit.grid plan $HERE/grid.yaml --out $STUDY --replan
run() { $PY -m doit.grid run $STUDY --max-parallel 2 --threads 1 --cells "$1"; }
run 'pretrain-*'                        # the demo's bases, if they are not there yet
run '*-n[0-9][0-9][0-9][0-9]-text-s*'   # the uniform grid and the untuned bases
run '*-n0064-no_*-text-s0-*'            # leave-one-out at n = 64, seed 0
run '*mix_random*-text-s0-*'            # the random mixtures, seed 0
cur() { $PY -m doit.analysis curriculum $STUDY --budget 1280 --base vanilla_s --data $CORPUS \
  --validate --seeds 0,1,2 --max-parallel 2 --threads 1 --overwrite "$@"; }
cur --policy uniform,marginal,regression,dmt,staged --out $OUT/s
cur --policy marginal --fit-base vanilla_xs --out $OUT/xs_to_s

rm -rf "$HERE/result" && mkdir -p "$HERE/result/mixes" "$HERE/result/decision"
cp "$OUT"/s/curriculum.csv "$OUT"/s/transfer.csv "$OUT"/s/regression.csv "$OUT"/s/curriculum.md "$HERE/result/"
cp "$OUT"/s/mixes/*.yaml "$HERE/result/mixes/"
cp "$OUT"/s/validate/*.csv "$HERE/result/"
cp "$OUT"/xs_to_s/curriculum.csv "$OUT"/xs_to_s/validate/*.csv "$HERE/result/decision/"
tables() { $PY $HERE/tables.py "$@"; }   # results and per-item rows, stages included, gzip
tables $STUDY "$HERE/result" grid_results
tables $OUT/s/validate/study "$HERE/result" validate_results
tables $OUT/xs_to_s/validate/study "$HERE/result/decision" validate_s_results
tables $OUT/xs_to_s/validate/fit-vanilla_xs/study "$HERE/result/decision" validate_xs_results
