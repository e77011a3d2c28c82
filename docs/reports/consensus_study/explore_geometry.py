"""Is the shape of the learned embedding steadier between seeds than its norms? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_geometry.py ../shared/validation/lung_small.mat
    python docs/reports/consensus_study/explore_geometry.py synthetic   # the embedded default

The paper's score is the norm of a feature's embedding, which the objective
never sees: InfoNCE and the decorrelation term work on unit rows, so which
features end long is left to the initial weights ("where the seed's effect
lives", docs/consensus.md). The directions of the unit rows are what the
objective does set. This script scores each feature by where its unit row
lies among the others: ``density``, the mean cosine similarity to its K = 10
nearest unit rows (features the network finds hard to tell apart), and
``isolation``, its negative; from the projector's output z and from the
encoder's output h. It trains one 100-epoch ``fast`` run at each of the seeds
0-3 (not the decision seeds 42-44) and prints, per score, the Jaccard index of
the four runs' k = 50 selections (LGRC) and their best-k accuracy (method.md
§8). Controls: the same scores of each run's untrained network (what the
data's own correlations give), and the data's own density (the mean of each
feature's 10 largest absolute correlations, no network, the same every seed).
"""

import sys
import time

import numpy as np
import torch

from exploration import Dataset
from iclfs.method.runtime import compute_settings
from iclfs.method.scores import rank_features
from iclfs.method.training import Trainer, embed

SEEDS = (0, 1, 2, 3)
EPOCHS = 100
NEAREST = 10


def mean_of_nearest(similarity: np.ndarray) -> np.ndarray:
    """Each row's mean over its ``NEAREST`` largest entries off the diagonal, shape (d,); overwrites the diagonal."""
    np.fill_diagonal(similarity, -np.inf)
    return np.sort(similarity, axis=1)[:, -NEAREST:].mean(axis=1)


def density(rows: np.ndarray) -> np.ndarray:
    """Each row's mean cosine similarity to its ``NEAREST`` most similar other rows, shape (d,)."""
    unit = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return mean_of_nearest(unit @ unit.T)


def scores_of(trainer: Trainer) -> dict[str, np.ndarray]:
    h, z = embed(trainer.model, trainer.anchor)
    z_density, h_density = density(z.astype(np.float64)), density(h.astype(np.float64))
    return {"z_norm": np.linalg.norm(z, axis=1), "z density": z_density, "z isolation": -z_density,
            "h density": h_density, "h isolation": -h_density}


data = Dataset(sys.argv[1])
started = time.perf_counter()
trained, untrained = [], []
with compute_settings(torch.device("cpu"), "fp32", None):
    for seed in SEEDS:
        trainer = Trainer(data.A, seed=seed)
        untrained.append(scores_of(trainer))
        for _ in range(EPOCHS):
            trainer.step()
        trained.append(scores_of(trainer))
print(f"{len(SEEDS)} runs in {time.perf_counter() - started:.0f} s\n")
print(data.header("network", "score"))
for network, runs in (("trained", trained), ("untrained", untrained)):
    for name in runs[0]:
        print(data.row([rank_features(run[name]) for run in runs], network, name), flush=True)
data_density = mean_of_nearest(np.abs(np.corrcoef(data.X, rowvar=False)))
for name, values in (("data density", data_density), ("data isolation", -data_density)):
    print(data.row([rank_features(values)] * len(SEEDS), "none", name), flush=True)
