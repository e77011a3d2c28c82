#!/bin/bash
cd $STUDY
export PYTHONPATH=$SNAPSHOT
PY=python
V=$SHARED/validation
for ds in lung_small ORL Isolet madelon; do
  $PY study_train.py $V/$ds.mat full 1.0 100 0,1,2,3,4,5
  $PY study_train.py $V/$ds.mat sub50 0.5 50 0,1,2,3,4,5
done
echo ALLDONE
#!/bin/bash
cd $STUDY
export PYTHONPATH=$SNAPSHOT
PY=python
V=$SHARED/validation
for ds in lung_small ORL Isolet madelon; do
  for s in 42 43 44; do
    $PY study_train.py $V/$ds.mat m50 0.5 20 $(seq -s, $((s*100)) $((s*100+7)))
  done
done
echo M50DONE
$PY study_train.py $V/madelon.mat full 1.0 100 0,1,2
echo ALLDONE4
