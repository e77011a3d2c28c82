"""Round 1: the candidates C1-C4 fixed in docs/consensus.md against one run, on one validation set.

    STUDY=<scratch> python docs/reports/consensus_study/study_decide.py lung_small

One run: the ``full`` members after 100 epochs. Candidates: the ``m50``
members of outer seed s (seeds 100 s to 100 s + 7, on half the samples)
after T epochs, the first E of them, combined by mean rank and, with a
Laplacian weight w, fused with the Laplacian score's rank score.

Round 1 fused the mean-rank score itself: (1 - w) c + w r_laplacian, with c
the members' mean rank scaled to [0, 1]. ``iclfs.method.consensus.
fuse_laplacian``, which the package and the benchmark run, re-ranks c first
(docs/consensus.md, step 4): a mean of nearly independent ranks bunches near
the middle, and re-ranking spreads it over [0, 1], so the network's side
weighs more there than it did in round 1. The candidates with a Laplacian
weight are printed both ways: as round 1 measured them, and, marked
"fuse_laplacian", as the package computes them. Prints and saves
``$STUDY/decide_<dataset>.json``: (mean accuracy, std, Jaccard@50 between
the outer seeds, number of seeds) per method, with ``laplacian`` the
Laplacian score's own ranking through the same protocol; and, under
``overlap_with_laplacian``, each fused candidate's mean Jaccard@50 with the
Laplacian score's selection, which tells how much of its agreement between
seeds is the Laplacian score's.
"""

import json
import os
import sys

import numpy as np

from study_eval import STUDY, at, data, load, member_path
from iclfs.method.consensus import combine, fuse_laplacian, jaccard, mean_pairwise_jaccard
from iclfs.method.scores import rank_features

OUTER_SEEDS = (42, 43, 44)
CANDIDATES = {"C1": (8, 10, 0.0), "C2": (8, 10, 0.5), "C3": (4, 20, 0.0), "C4": (4, 20, 0.5)}  # E, T, w

name = sys.argv[1]
dataset = data(name)


def summary(results: list) -> tuple:
    accuracies, selections = zip(*results)
    return float(np.mean(accuracies)), float(np.std(accuracies)), mean_pairwise_jaccard(selections), len(results)


def member_scores(seed: int, epochs: int) -> np.ndarray:
    saved = np.load(member_path(name, "m50", seed))
    return saved["z"][list(saved["checkpoints"]).index(epochs)]


laplacian_rank_score = fuse_laplacian(np.zeros_like(dataset.laplacian), dataset.laplacian, 1.0)  # its side alone


def round1_fusion(consensus: np.ndarray, weight: float) -> np.ndarray:
    if weight == 0:
        return consensus
    return (1 - weight) * consensus + weight * laplacian_rank_score


out = {"single": summary([dataset.evaluate(rank_features(at(m, 100))) for m in load(name, "full").values()])}
laplacian_accuracy, laplacian_selection = dataset.evaluate(rank_features(laplacian_rank_score))
out["laplacian"] = (laplacian_accuracy, 0.0, None, 1)
overlap = {}
for candidate, (members, epochs, weight) in CANDIDATES.items():
    consensus = {outer: combine([member_scores(100 * outer + i, epochs) for i in range(members)])
                 for outer in OUTER_SEEDS}
    fusions = {candidate: round1_fusion}
    if weight:
        fusions[f"{candidate} fuse_laplacian"] = lambda c, w: fuse_laplacian(c, dataset.laplacian, w)
    for label, fuse in fusions.items():
        results = [dataset.evaluate(rank_features(fuse(c, weight))) for c in consensus.values()]
        out[label] = summary(results)
        line = f"{name} {label} {out[label]}"
        if weight:
            overlap[label] = float(np.mean([jaccard(selection, laplacian_selection) for _, selection in results]))
            line += f" Jaccard@50 with the Laplacian score's selection {overlap[label]:.2f}"
        print(line, flush=True)
print(name, "single", out["single"], flush=True)
print(name, "laplacian", out["laplacian"], flush=True)
with open(os.path.join(STUDY, f"decide_{name}.json"), "w") as f:
    json.dump({**out, "overlap_with_laplacian": overlap}, f)
