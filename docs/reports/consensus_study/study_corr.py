"""Round 1: how alike the members' scores are (mean pairwise Spearman correlation) after t epochs.

    STUDY=<scratch> python docs/reports/consensus_study/study_corr.py lung_small

For the ``full`` and ``sub50`` members: z-norm against z-norm, h-norm against
h-norm, and each member's z-norm against the negated Laplacian score.
"""

import itertools
import sys

import numpy as np
from scipy.stats import spearmanr

from study_eval import at, data, load

name = sys.argv[1]
laplacian = data(name).laplacian


def mean_pairwise_rho(scores: list) -> float:
    return float(np.mean([spearmanr(a, b).statistic for a, b in itertools.combinations(scores, 2)]))


for config in ("full", "sub50"):
    members = load(name, config)
    for t in next(iter(members.values()))["checkpoints"]:
        z = [at(m, t) for m in members.values()]
        h = [at(m, t, "h") for m in members.values()]
        with_laplacian = np.mean([spearmanr(s, -laplacian).statistic for s in z])
        print(f"{config} t={t:3d} member-member rho z={mean_pairwise_rho(z):.3f} h={mean_pairwise_rho(h):.3f}  "
              f"z vs -LS {with_laplacian:.3f}")
