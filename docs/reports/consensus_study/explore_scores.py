"""Which score of a trained network is steadiest between seeds? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_scores.py ../shared/validation/lung_small.mat
    python docs/reports/consensus_study/explore_scores.py synthetic   # the embedded default

Trains one 100-epoch ``fast`` run at each of the seeds 0-3 (not the decision
seeds 42-44) and scores every feature with each score of method.md §5, as the
package computes them (``iclfs.method.consensus.train_member``): the paper's
four embedding norms and ``contrastive``, each feature's own InfoNCE term in
eval mode, negated. Prints, per score, the Jaccard index of the four runs'
k = 50 selections (LGRC) and their best-k accuracy (method.md §8); on the
embedded default (``synthetic``), also how many of each run's first 50
features are informative or redundant copies of them (60 of its 800; 50
random features would hold 3.75 of them on average).
"""

import sys
import time

from exploration import Dataset
from iclfs.method.config import SCORE_NAMES, RuntimeConfig, TrainingConfig, ViewConfig
from iclfs.method.scores import feature_scores, rank_features
from iclfs.method.training import contrastive_losses, embed, train

SEEDS = (0, 1, 2, 3)

data = Dataset(sys.argv[1])
started = time.perf_counter()
rankings = {name: [] for name in SCORE_NAMES}
scoring_seconds, training_seconds = 0.0, 0.0
for seed in SEEDS:
    result = train(data.A, TrainingConfig(), ViewConfig(), RuntimeConfig(device="cpu", progress=False), seed)
    training_seconds += result.seconds
    scored = time.perf_counter()
    losses = contrastive_losses(result.model, data.A, ViewConfig(), TrainingConfig().temperature, seed)
    scoring_seconds += time.perf_counter() - scored
    for name, values in feature_scores(*embed(result.model, data.A), losses).items():
        rankings[name].append(rank_features(values))
print(f"{len(SEEDS)} runs in {time.perf_counter() - started:.0f} s; the contrastive score took "
      f"{scoring_seconds / training_seconds:.3f} of the training time\n")
print(data.header("score"))
for name, runs in rankings.items():
    print(data.row(runs, name), flush=True)
