"""Does one run get steadier if its ranking averages its own late epochs? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_snapshots.py ../shared/validation/lung_small.mat

Trains one 100-epoch ``fast`` run at each of the seeds 0, 1, 2 (not the
decision seeds 42-44), scores every feature after each epoch from 51 on, and
compares the final epoch's ranking with the mean rank over the last 10, 25
and 50 epochs: best-k accuracy (method.md §8, LGRC at every k) over the seeds
and the Jaccard index of the k = 50 selections between the seeds. Scoring in
eval mode draws nothing and updates nothing, so the run's training is that of
a plain run and its final ranking is the plain run's.
"""

import sys

import numpy as np

from exploration import Dataset, z_norm_scores
from iclfs.method.consensus import jaccard, mean_pairwise_jaccard, rank_score
from iclfs.method.scores import rank_features
from iclfs.method.training import Trainer

SEEDS = (0, 1, 2)
VARIANTS = {"final epoch": (100, 101), "last 10": (91, 101), "last 25": (76, 101), "last 50": (51, 101)}

data = Dataset(sys.argv[1])
snapshots = {}
for seed in SEEDS:
    trainer = Trainer(data.A, seed=seed)
    snapshots[seed] = {}
    for epoch in range(1, 101):
        trainer.step()
        if epoch > 50:
            snapshots[seed][epoch] = z_norm_scores(trainer)
print("| ranking | best-k accuracy (mean ± std over seeds 0-2) | Jaccard@50 between seeds |")
print("|---|---|---|")
for name, (first, stop) in VARIANTS.items():
    accuracies, selections = [], []
    for seed in SEEDS:
        accuracy, selection = data.evaluate(rank_features(rank_score(
            np.array([snapshots[seed][e] for e in range(first, stop)]))))
        accuracies.append(accuracy)
        selections.append(selection)
    agreement = mean_pairwise_jaccard(selections)
    print(f"| {name} | {np.mean(accuracies):.2f} ± {np.std(accuracies):.2f} | {agreement:.3f} |")
last = snapshots[SEEDS[0]]
print("\nSeed 0, Jaccard@50 of the ranking after epoch e with the final one:",
      ", ".join(f"e = {e}: {jaccard(rank_features(last[e])[:50], rank_features(last[100])[:50]):.2f}"
                for e in (51, 75, 90, 95, 99)))
