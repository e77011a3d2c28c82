"""Round 1: the baselines' best-k accuracy at seed 42 on the validation sets (percent).

    python docs/reports/consensus_study/study_baselines.py lung_small ORL Isolet madelon

The benchmark's baseline cells (docs/reports/benchmark.md) measure the same
baselines at the three outer seeds; this is the quick seed-42 look round 1 had.
"""

import sys

import numpy as np

from study_eval import data
from iclfs.evaluation import baselines
from iclfs.evaluation.protocol import best_k, evaluate_selections


def best_k_accuracy(dataset, selections: dict) -> float:
    """Best-k accuracy of one selection per k; several rankings at a k score their mean."""
    rows = []
    for k, picks in selections.items():
        accuracy = np.mean([evaluate_selections(dataset.X, dataset.codes, {k: p})[0]["accuracy_mean"] for p in picks])
        rows.append(dict(k=k, accuracy_mean=accuracy))
    return 100 * best_k(rows)["accuracy_mean"]


for name in sys.argv[1:]:
    dataset = data(name)
    X, d = dataset.X.astype(np.float64), dataset.X.shape[1]
    classes = len(np.unique(dataset.codes))

    def by_k(rankings) -> float:
        return best_k_accuracy(dataset, {k: [r[:k] for r in rankings] for k in dataset.grid})

    mcfs = baselines.mcfs_selections(X, classes, dataset.grid, n_neighbors=5)
    accuracy = {
        "LS": by_k([baselines.rank_ascending(dataset.laplacian)]),
        "SPEC": by_k([baselines.spec_ranking(X)]),
        "NDFS": by_k([baselines.ndfs_ranking(X, classes, n_neighbors=5, alpha=1.0, beta=1.0, gamma=1e8, max_iter=50)]),
        "MCFS": best_k_accuracy(dataset, {k: [mcfs[k][:k]] for k in dataset.grid}),
        "random": by_k(list(baselines.random_rankings(d, 5, seed=42))),
        "all": 100 * evaluate_selections(dataset.X, dataset.codes, {d: np.arange(d)})[0]["accuracy_mean"],
    }
    print(name, {method: round(float(value), 2) for method, value in accuracy.items()}, flush=True)
