"""Round 1: one run's quality and agreement after t epochs, and the mean-rank consensus of its members.

    STUDY=<scratch> python docs/reports/consensus_study/study_report1.py lung_small

Needs the ``full`` (six 100-epoch members) and ``sub50`` (six 50-epoch
members on half the samples) configurations of run_study.sh. Per checkpoint:
the members' best-k accuracy (mean ± std, percent), the Jaccard index of
their k = 50 selections, the consensus of members 0-2 and of 3-5 (their
accuracies and the Jaccard index between them) and that of all six.
"""

import sys

import numpy as np

from study_eval import at, data, load
from iclfs.method.consensus import combine, jaccard, mean_pairwise_jaccard
from iclfs.method.scores import rank_features

name = sys.argv[1]
dataset = data(name)
full, sub = load(name, "full"), load(name, "sub50")
print(name, "members full", len(full), "sub", len(sub))
for config, members, epochs in (("full", full, [0, 5, 10, 20, 30, 50, 100]), ("sub50", sub, [0, 5, 10, 20, 30, 50])):
    for t in epochs:
        accuracies, selections = zip(*(dataset.evaluate(rank_features(at(m, t))) for m in members.values()))
        groups = [dataset.evaluate(rank_features(combine([at(members[i], t) for i in group])))
                  for group in ([0, 1, 2], [3, 4, 5])]
        all_six = dataset.evaluate(rank_features(combine([at(members[i], t) for i in range(6)])))[0]
        print(f"{config:6s} t={t:3d} single {np.mean(accuracies):.2f}±{np.std(accuracies):.2f} "
              f"J50={mean_pairwise_jaccard(selections):.2f} | cons3 {np.mean([g[0] for g in groups]):.2f} "
              f"({', '.join(f'{g[0]:.1f}' for g in groups)}) J50={jaccard(groups[0][1], groups[1][1]):.2f} "
              f"| cons6 {all_six:.2f}", flush=True)
