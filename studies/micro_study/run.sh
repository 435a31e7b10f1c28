#!/usr/bin/env bash
# Rerun the micro study behind studies/micro_study/README.md (from the repository root).
#   studies/micro_study/run.sh              the text formulation (#21): recipes/grids/micro.yaml's
#                                            per-ability cells (no leave-one-out; ~25 min)
#   LETTER=1 studies/micro_study/run.sh     also #12's letter study (grid_letter.yaml, ~20 min)
#   PRACTICE=1 studies/micro_study/run.sh   also #12's practice lever (grid_practice.yaml, ~20 min)
# Each writes its table and target checks under studies/micro_study/<name>/.
set -euo pipefail
PY=${PY:-.venv/bin/python}
WORKERS=${WORKERS:-2}

study() {  # study GRID OUT NAME CORPUS CELL-GLOB [TARGETS-ARGS...]
  $PY -m doit.grid plan "$1" --out "$2" --replan
  $PY -m doit.grid run "$2" --max-parallel "$WORKERS" --threads 1 --cells "$5"
  $PY studies/micro_study/targets.py "$2" --data "$4" --out "studies/micro_study/$3" "${@:6}"
}

test -f data/generated/micro/manifest.json || $PY -m doit.data micro --out data/generated/micro
study recipes/grids/micro.yaml runs/study/micro_text text data/generated/micro \
  '*-n[0-9][0-9][0-9][0-9]-text-s*' --targets text
$PY studies/micro_study/norms.py runs/study/micro_text --out studies/micro_study/text
$PY -m doit.analysis run runs/study/micro_text --data data/generated/micro \
  --out runs/study/micro_text/analysis

if [ "${LETTER:-0}" = 1 ]; then
  study studies/micro_study/grid_letter.yaml runs/study/micro shipped data/generated/micro \
    '*-n[0-9][0-9][0-9][0-9]-s*'
fi

if [ "${PRACTICE:-0}" = 1 ]; then
  test -f data/generated/micro_practice/manifest.json ||
    $PY -m doit.data micro --out data/generated/micro_practice --practice-fraction 1.0
  study studies/micro_study/grid_practice.yaml runs/study/micro_practice practice \
    data/generated/micro_practice '*'
  for base in runs/bases/practice/vanilla_xs/seed0 runs/bases/practice/vanilla_s/seed0; do
    $PY studies/micro_study/probes.py recall "$base" --data data/generated/micro_practice
  done
fi
