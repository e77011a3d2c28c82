"""Do members that each see a block of the features agree more between seeds? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_feature_blocks.py ../shared/validation/lung_small.mat [VARIANT ...]

The cost of an epoch grows with d² (attention over the features and the
InfoNCE terms), so a member that trains on d / m of the features costs about
1 / m² of a run. Here a run deals the features into m blocks c times over
(a fresh shuffle each time, from the run's seed), trains one 100-epoch
``fast`` member on every block (all the samples), turns each member's scores
into a rank score within its block (1 = its best feature, 0 = its worst) and
orders the features by their mean rank score over the c members that saw
them. Compared with one run at the seeds 0, 1 and 2 (not the decision seeds
42-44): best-k accuracy (method.md §8, LGRC at every k) over the seeds, the
Jaccard index of the k = 50 selections between the seeds, and wall time.
VARIANT names (e.g. "1x8") run only those rows, "members x blocks".
"""

import sys
import time

import numpy as np

from exploration import Dataset
from iclfs.method.config import RuntimeConfig
from iclfs.method.consensus import mean_pairwise_jaccard, rank_score
from iclfs.method.scores import feature_scores, rank_features
from iclfs.method.training import embed, train

SEEDS = (0, 1, 2)
# name: (blocks, deals); a deal is one member, so "2x4" is 2 members of 4 blocks each
VARIANTS = {"one run": (1, 1), "2x4": (4, 2), "4x8": (8, 4), "1x8": (8, 1)}
DEFAULT_VARIANTS = ("one run", "2x4", "4x8")
QUIET = RuntimeConfig(progress=False)


def block_scores(A: np.ndarray, blocks: int, deals: int, seed: int) -> np.ndarray:
    """(d,) mean within-block rank score of every feature over the deals (one run's raw score for 1 x 1)."""
    d = A.shape[0]
    if blocks == 1 and deals == 1:
        result = train(A, runtime=QUIET, seed=seed)
        return feature_scores(*embed(result.model, A))["z_norm"]
    rng = np.random.default_rng(seed)
    total = np.zeros(d)
    for deal in range(deals):
        for b, block in enumerate(np.array_split(rng.permutation(d), blocks)):
            A_block = np.ascontiguousarray(A[block])
            result = train(A_block, runtime=QUIET, seed=int(rng.integers(2**32)))
            total[block] += rank_score(feature_scores(*embed(result.model, A_block))["z_norm"])
    return total / deals


data = Dataset(sys.argv[1])
d, n = data.A.shape
print(f"{data.table.source}: d = {d}, n = {n}")
print("| ranking | best-k accuracy (mean ± std over seeds 0-2) | Jaccard@50 between seeds | seconds per seed |")
print("|---|---|---|---|")
for name in sys.argv[2:] or DEFAULT_VARIANTS:
    blocks, deals = VARIANTS[name]
    accuracies, selections, seconds = [], [], []
    for seed in SEEDS:
        started = time.perf_counter()
        ranking = rank_features(block_scores(data.A, blocks, deals, seed))
        seconds.append(time.perf_counter() - started)
        accuracy, selection = data.evaluate(ranking)
        accuracies.append(accuracy)
        selections.append(selection)
    print(f"| {name} | {np.mean(accuracies):.2f} ± {np.std(accuracies):.2f} | "
          f"{mean_pairwise_jaccard(selections):.3f} | {np.mean(seconds):.0f} |", flush=True)
