"""Does an objective that sets the embedding norm make the paper's score steadier between seeds? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_norm_objective.py ../shared/validation/lung_small.mat
    python docs/reports/consensus_study/explore_norm_objective.py synthetic   # the embedded default

The paper's score is the norm of a feature's anchor embedding z_j, and the
InfoNCE of method.md §4 works on unit rows, so no loss term ever sees that
norm: which features end long is left to the initial weights ("where the
seed's effect lives", docs/consensus.md). This script trains, next to the
paper's objective, a *norm-aware* one: in the InfoNCE only, the anchor's row j
is ``^za_j * ||za_j|| / mean_l ||za_l||`` (the positives and the negative stay
unit rows, as does the decorrelation term). The mean keeps the logits' overall
scale where the cosine puts it; a feature's relative norm becomes its own
inverse temperature, which the loss lengthens where the feature's views are
told apart from the others and shortens where they are not. It trains one
100-epoch ``fast`` run per objective at each of the seeds 0-3 (not the decision
seeds 42-44) and prints, per objective, the Jaccard index of the four runs'
k = 50 selections (LGRC on the z-norm) and their best-k accuracy (method.md §8).
"""

import contextlib
import sys
import time

import torch

from exploration import Dataset, z_norm_scores
from iclfs.method import losses
from iclfs.method.runtime import compute_settings
from iclfs.method.scores import rank_features
from iclfs.method.training import Trainer

SEEDS = (0, 1, 2, 3)
EPOCHS = 100
paper_unit_inputs = losses._unit_inputs


def norm_aware_inputs(z_anchor, z_positive, z_negative, block_rows):
    """The paper's unit rows, but the anchor's rows scaled by their norm over the mean norm (with gradients)."""
    za, zp, zn, block = paper_unit_inputs(z_anchor, z_positive, z_negative, block_rows)
    norms = torch.linalg.vector_norm(losses.at_least_float32(z_anchor), dim=1, keepdim=True)
    return za * (norms / norms.mean()), zp, zn, block


@contextlib.contextmanager
def objective(name: str):
    losses._unit_inputs = norm_aware_inputs if name == "norm-aware" else paper_unit_inputs
    try:
        yield
    finally:
        losses._unit_inputs = paper_unit_inputs


data = Dataset(sys.argv[1])
started = time.perf_counter()
rankings = {"paper": [], "norm-aware": []}
with compute_settings(torch.device("cpu"), "fp32", None):
    for name, runs in rankings.items():
        with objective(name):
            for seed in SEEDS:
                trainer = Trainer(data.A, seed=seed)
                for _ in range(EPOCHS):
                    trainer.step()
                runs.append(rank_features(z_norm_scores(trainer)))
print(f"{2 * len(SEEDS)} runs in {time.perf_counter() - started:.0f} s\n")
print(data.header("objective"))
for name, runs in rankings.items():
    print(data.row(runs, name), flush=True)
