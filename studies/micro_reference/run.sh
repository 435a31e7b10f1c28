#!/usr/bin/env bash
# The micro reference study (issue #30), from the repository root; resumable: a rerun reuses
# every finished cell (and the bases: vanilla_xs/s are the demo's, runs/bases/).
#   bash studies/micro_reference/run.sh              the budgeted study (README: what is cut)
#   ALL_SEEDS=1 bash studies/micro_reference/run.sh  also the value-residual bases' third seed
# Writes runs/study/micro_reference (cells, results), its analysis folder, and the committed
# outputs under studies/micro_reference/ (results.csv.gz, items.csv.gz, sensitivity.csv,
# grading.json / grading.md).
set -euo pipefail
PY=${PY:-.venv/bin/python}
WORKERS=${WORKERS:-2}
CORPUS=data/generated/micro_ref
STUDY=runs/study/micro_reference
HERE=studies/micro_reference
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

test -f $CORPUS/manifest.json || $PY -m doit.data micro --out $CORPUS   # default --held-out 400
$PY -m doit.grid plan $HERE/grid.yaml --out $STUDY --replan
run() { $PY -m doit.grid run $STUDY --max-parallel "$WORKERS" --threads 1 --cells "$1"; }
run 'pretrain-*'                     # the three new bases: vanilla_l on one worker, the
                                     # value-residual pair on the other (about as long)
run 'vanilla_*'                      # the fitted bases first: sensitivities and classes
run '*former_s-*-s[01]-*'            # the value-residual bases, seeds 0 and 1
if [ "${ALL_SEEDS:-0}" = 1 ]; then run '*'; fi

$PY -m doit.analysis run $STUDY --data $CORPUS --bases vanilla_xs,vanilla_s,vanilla_l \
  --out $STUDY/analysis --overwrite
$PY $HERE/grade.py $STUDY --data $CORPUS --out $HERE
