"""Do wider layers make the paper's score steadier between seeds? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_width.py ../shared/validation/lung_small.mat
    python docs/reports/consensus_study/explore_width.py synthetic   # the embedded default

Most of the seed's effect lives in the initial weights ("where the seed's
effect lives", docs/consensus.md), and the paper's score is the norm of a
16-wide embedding z_j behind a 16-wide first encoder layer. The norm of a few
coordinates of a random network is itself random; over many coordinates it
concentrates on what the inputs alone decide (a wide network's output tends
to a Gaussian process whose kernel depends on the inputs, not on the draw).
So a wider network may rank the features alike from any seed. This script trains
four 100-epoch ``fast`` runs at the seeds 0-3 (not the decision seeds 42-44)
for each set of layer sizes and prints their Jaccard index of the k = 50
selections (LGRC on the z-norm), their best-k accuracy (method.md §8) and
the seconds per run. The rows after the first widen d_z alone (the score's
coordinates), d_e and d_z (the two narrow layers), or every layer.
"""

import dataclasses
import sys
import time

import torch

from exploration import Dataset, z_norm_scores
from iclfs.method import training
from iclfs.method.runtime import compute_settings
from iclfs.method.scores import rank_features
from iclfs.method.training import Trainer

SEEDS = (0, 1, 2, 3)
EPOCHS = 100
paper_select_regime = training.select_regime


def widened(**sizes):
    """A ``select_regime`` that returns the paper's regime with ``sizes`` multiplied."""
    def select_regime(*args, **kwargs):
        regime = paper_select_regime(*args, **kwargs)
        return dataclasses.replace(regime, **{name: getattr(regime, name) * factor for name, factor in sizes.items()})
    return select_regime


WIDTHS = {
    "the paper's sizes": {},
    "d_z x 4": {"d_z": 4},
    "d_z x 8": {"d_z": 8},
    "d_z x 32": {"d_z": 32},
    "d_e and d_z x 8": {"d_e": 8, "d_z": 8},
    "every layer x 4": {"d_e": 4, "d_h": 4, "d_p": 4, "d_z": 4},
}
chosen = sys.argv[2:] or list(WIDTHS)

data = Dataset(sys.argv[1])
print(data.header("layer sizes", "seconds per run"))
with compute_settings(torch.device("cpu"), "fp32", None):
    for name in chosen:
        training.select_regime = widened(**WIDTHS[name])
        try:
            started = time.perf_counter()
            runs = []
            for seed in SEEDS:
                trainer = Trainer(data.A, seed=seed)
                for _ in range(EPOCHS):
                    trainer.step()
                runs.append(rank_features(z_norm_scores(trainer)))
            seconds = (time.perf_counter() - started) / len(SEEDS)
        finally:
            training.select_regime = paper_select_regime
        sizes = trainer.regime
        label = f"{name} ({sizes.d_e}, {sizes.d_h}, {sizes.d_p}, {sizes.d_z})"
        print(data.row(runs, label, f"{seconds:.1f}"), flush=True)
