"""Does dividing out the initial weights' share of the z-norm steady the ranking? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_gain.py ../shared/validation/lung_small.mat
    python docs/reports/consensus_study/explore_gain.py synthetic   # the embedded default

Most of the seed's effect lives in the initial weights (explore_init.py), and
the objective never sees the z-norm. If a feature whose embedding starts long
tends to end long, the trained z-norm carries its initial draw. This script
trains one 100-epoch ``fast`` run at each of the seeds 0-3 (not the decision
seeds 42-44) and compares, by the Jaccard index of the four runs' k = 50
selections (LGRC) and their best-k accuracy (method.md §8):

``trained``
    the paper's score, log z-norm of the trained network;
``untrained``
    the log z-norm of the same network before its first epoch;
``gain``
    trained minus untrained: what training changed, per network;
``untrained mean``
    the mean log z-norm of 16 untrained networks (seeds 1000-1015), no training at all;
``trained minus untrained mean``
    trained minus that mean: the data's share of an untrained network's score removed.

It also prints the Spearman correlation of each run's trained and untrained
scores. On the embedded default (``synthetic``) it counts how many of each
run's first 50 features are informative or redundant (60 of 800; chance 3.75).
"""

import sys
import time

import numpy as np
import torch
from scipy.stats import spearmanr

from exploration import Dataset, z_norm_scores
from iclfs.method.runtime import compute_settings
from iclfs.method.scores import rank_features
from iclfs.method.training import Trainer

SEEDS = (0, 1, 2, 3)
EPOCHS = 100
UNTRAINED_SEEDS = range(1000, 1016)

data = Dataset(sys.argv[1])
started = time.perf_counter()
with compute_settings(torch.device("cpu"), "fp32", None):
    untrained_mean = np.mean([np.log(z_norm_scores(Trainer(data.A, seed=s))) for s in UNTRAINED_SEEDS], axis=0)
    scores = {"trained": [], "untrained": [], "gain": [], "untrained mean": [], "trained minus untrained mean": []}
    correlations = []
    for seed in SEEDS:
        trainer = Trainer(data.A, seed=seed)
        before = np.log(z_norm_scores(trainer))
        for _ in range(EPOCHS):
            trainer.step()
        after = np.log(z_norm_scores(trainer))
        correlations.append(spearmanr(before, after).statistic)
        scores["trained"].append(after)
        scores["untrained"].append(before)
        scores["gain"].append(after - before)
        scores["untrained mean"].append(untrained_mean)
        scores["trained minus untrained mean"].append(after - untrained_mean)
print(f"{len(SEEDS)} runs in {time.perf_counter() - started:.0f} s; Spearman correlation of each run's "
      f"trained and untrained scores: {', '.join(f'{c:.2f}' for c in correlations)}\n")
print(data.header("score"))
for name, runs in scores.items():
    print(data.row([rank_features(s) for s in runs], name), flush=True)
