"""Does averaging a run's scores over each feature's most correlated features steady them? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_smoothing.py ../shared/validation/lung_small.mat
    python docs/reports/consensus_study/explore_smoothing.py synthetic   # the embedded default

Runs from different seeds pick different features of the same kind: on the
embedded default each run's first 50 hold about 30 of the 60 informative and
redundant columns, but not the same 30 (explore_scores.py). A feature and its
near-copies should matter alike, so this script replaces each feature's log
z-norm by its mean over the feature and its K features of largest absolute
correlation with it (from the standardized data, no labels; the package's
``correlated_features``), for K = 5, 10
and 20 (and, in the rows marked "rank scores", its rank score, 1 = first,
0 = last, which any score has). It trains one 100-epoch ``fast`` run at each of the seeds 0-3 (not
the decision seeds 42-44) and prints, per K, the Jaccard index of the four
runs' k = 50 selections (LGRC) and their best-k accuracy (method.md §8); on
the embedded default, also how many of each run's first 50 features are
informative or redundant (60 of 800; chance 3.75). As a control, the same
smoothing of each run's untrained network's scores (before its first epoch)
says how much of any agreement is the data's correlations rather than what
the networks learned.
"""

import sys
import time

import numpy as np
import torch

from exploration import Dataset, z_norm_scores
from iclfs.method.consensus import rank_score
from iclfs.method.runtime import compute_settings
from iclfs.method.scores import correlated_features, rank_features
from iclfs.method.training import Trainer

SEEDS = (0, 1, 2, 3)
EPOCHS = 100
NEIGHBORS = (0, 5, 10, 20)


data = Dataset(sys.argv[1])
started = time.perf_counter()
with compute_settings(torch.device("cpu"), "fp32", None):
    trained, untrained = [], []
    for seed in SEEDS:
        trainer = Trainer(data.A, seed=seed)
        untrained.append(np.log(z_norm_scores(trainer)))
        for _ in range(EPOCHS):
            trainer.step()
        trained.append(np.log(z_norm_scores(trainer)))
print(f"{len(SEEDS)} runs in {time.perf_counter() - started:.0f} s\n")
print(data.header("network", "K"))
rank_scores = [rank_score(s) for s in trained]
for network, scores in (("trained", trained), ("trained, rank scores", rank_scores), ("untrained", untrained)):
    for k in NEIGHBORS:
        neighbors = correlated_features(data.X, k)
        print(data.row([rank_features(s[neighbors].mean(axis=1)) for s in scores], network, k), flush=True)
