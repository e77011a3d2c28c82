"""Members branched from a shared warm start, and a stopping rule (an exploration, not a decision).

    python docs/reports/consensus_study/explore_warm_start.py ../shared/validation/lung_small.mat

Two ideas the consensus issue names, measured at the seeds 0, 1, 2 (not the
decision seeds 42-44) with 100-epoch ``fast`` networks on every sample:

Warm start
    One network (the trunk) trains for W epochs. It is then copied E times,
    weights and Adam state alike, and each copy (a branch) trains T more
    epochs with views and dropout drawn from a seed of its own. The branches'
    scores are combined by mean rank (``combine``). A branch copies its
    trunk exactly, so with T = 0 the consensus is the trunk's own ranking.
    The trunk of outer seed s is the plain run of seed s up to epoch W.
Stopping rule
    The plain run's top 50, scored every 5 epochs from epoch 20, is compared
    with its top 50 ten epochs before; the run stops at the first check where
    their Jaccard index is at least 0.8, else at epoch 100. The ranking it
    stops with is the plain run's at that epoch (scoring in eval mode draws
    nothing, so the training up to there is the plain run's).

Prints, per seed, the stopping rule's Jaccard index at a few epochs; then, per
variant: best-k accuracy (method.md §8, LGRC at every k) as mean ± std over
the seeds, the Jaccard index of the k = 50 selections between the seeds, and
the epochs trained per seed (the cost, in epochs of one network).
"""

import copy
import sys
import time

import numpy as np
import torch

from exploration import Dataset, z_norm_scores as scores
from iclfs.method.consensus import combine, jaccard, mean_pairwise_jaccard
from iclfs.method.runtime import compute_settings
from iclfs.method.scores import rank_features
from iclfs.method.training import Trainer

SEEDS = (0, 1, 2)
EPOCHS = 100
WARM_STARTS = {"W50 + 4 x 12": (50, 4, 12), "W80 + 4 x 5": (80, 4, 5), "W50 + 4 x 50": (50, 4, 50)}  # W, E, T
TRUNK_EPOCHS = {warm for warm, _, _ in WARM_STARTS.values()}
STOP_FROM, STOP_EVERY, STOP_LAG, STOP_AT = 20, 5, 10, 0.8


def branch(trunk: Trainer, seed: int, epochs: int) -> np.ndarray:
    """A copy of the trunk trained ``epochs`` more with its own views and dropout: its scores."""
    trainer = copy.deepcopy(trunk)
    trainer.generator.manual_seed(seed)
    torch.manual_seed(seed)  # dropout draws from torch's global generator
    for _ in range(epochs):
        trainer.step()
    return scores(trainer)


data = Dataset(sys.argv[1])
results = {name: [] for name in ["one run", "stopping rule", *WARM_STARTS]}
epochs_trained = {name: [] for name in results}
started = time.perf_counter()
with compute_settings(torch.device("cpu"), "fp32", None):
    for seed in SEEDS:
        trainer = Trainer(data.A, seed=seed)
        checkpoints, trunks, stopped, trace = {}, {}, None, {}
        for epoch in range(1, EPOCHS + 1):
            trainer.step()
            if epoch % STOP_EVERY == 0:
                checkpoints[epoch] = rank_features(scores(trainer))
                if epoch >= STOP_FROM:
                    trace[epoch] = jaccard(checkpoints[epoch][:50], checkpoints[epoch - STOP_LAG][:50])
                    if stopped is None and trace[epoch] >= STOP_AT:
                        stopped = epoch
            if epoch in TRUNK_EPOCHS:
                trunks[epoch] = copy.deepcopy(trainer)
        stopped = stopped or EPOCHS
        results["one run"].append(data.evaluate(checkpoints[EPOCHS]))
        epochs_trained["one run"].append(EPOCHS)
        results["stopping rule"].append(data.evaluate(checkpoints[stopped]))
        epochs_trained["stopping rule"].append(stopped)
        for name, (warm, members, more) in WARM_STARTS.items():
            branch_seeds = np.random.SeedSequence([seed, warm, more]).generate_state(members)
            member_scores = [branch(trunks[warm], int(s), more) for s in branch_seeds]
            results[name].append(data.evaluate(rank_features(combine(np.array(member_scores)))))
            epochs_trained[name].append(warm + members * more)
        print(f"seed {seed} done, {time.perf_counter() - started:.0f} s; stopping rule at epoch {stopped}; "
              f"Jaccard@50 with 10 epochs before: "
              + ", ".join(f"e = {e}: {trace[e]:.2f}" for e in (30, 50, 75, 90, 100)), flush=True)

print("| variant | best-k accuracy (mean ± std over seeds 0-2) | Jaccard@50 between seeds | epochs per seed |")
print("|---|---|---|---|")
for name, runs in results.items():
    accuracies, selections = zip(*runs)
    print(f"| {name} | {np.mean(accuracies):.2f} ± {np.std(accuracies):.2f} | "
          f"{mean_pairwise_jaccard(selections):.3f} | {', '.join(map(str, epochs_trained[name]))} |")
