#!/bin/bash
# Round 1's members (docs/reports/consensus_study.md), for the validation sets named (default: all four).
# STUDY: a scratch folder for the members; SHARED: the folder holding validation/.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
V=${SHARED:-../shared}/validation
datasets=("$@")
[ ${#datasets[@]} -gt 0 ] || datasets=(lung_small ORL Isolet madelon)
for ds in "${datasets[@]}"; do
  python "$HERE/study_train.py" "$V/$ds.mat" full 1.0 100 0,1,2,3,4,5
  python "$HERE/study_train.py" "$V/$ds.mat" sub50 0.5 50 0,1,2,3,4,5
  for s in 42 43 44; do
    python "$HERE/study_train.py" "$V/$ds.mat" m50 0.5 20 "$(seq -s, $((s*100)) $((s*100+7)))"
  done
done
