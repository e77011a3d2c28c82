"""Where the seed's effect lives: the initial weights, or the views and dropout? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_init.py ../shared/validation/lung_small.mat
    python docs/reports/consensus_study/explore_init.py ../shared/validation/ORL.mat sources longer

A run's seed seeds two things (method.md §4): the initial weights (torch's
global generator, when the network is built) and what the training draws
(the views, from the trainer's own generator, and the dropout masks, from
torch's global generator, reseeded here after the build). This script seeds
them apart, with four 100-epoch ``fast`` runs per row on every sample, at
seeds that are not the decision seeds 42-44. Each row gives the Jaccard
index of the four runs' k = 50 selections (LGRC), their best-k accuracy
(method.md §8) and the Jaccard index of each run's top 50 before training
(its untrained network's scores) with its top 50 at the end.

Parts (all by default):

``sources``
    Both seeds varying (0-3), the weights' seed fixed (0) with the
    training's varying (10-13), and the training's seed fixed (0) with the
    weights' varying (20-23).
``layers``
    Both seeds varying (0-3), but one group of layers starting from the
    same weights in every run (those of a network built with seed 999):
    which layers carry the seed's effect.
``longer``
    The four runs of both seeds varying trained 400 epochs: their agreement
    after 25, 50, 100, 200 and 400 epochs.
"""

import sys
import time

import numpy as np
import torch

from exploration import Dataset, z_norm_scores
from iclfs.method.consensus import jaccard, mean_pairwise_jaccard
from iclfs.method.runtime import compute_settings
from iclfs.method.scores import rank_features
from iclfs.method.training import Trainer

EPOCHS = 100
SOURCES = {
    "both seeds vary": [(s, s) for s in (0, 1, 2, 3)],
    "weights fixed, views and dropout vary": [(0, s) for s in (10, 11, 12, 13)],
    "views and dropout fixed, weights vary": [(s, 0) for s in (20, 21, 22, 23)],
}
LAYERS = {
    "attention": ("attention.",),
    "encoder": ("encoder.",),
    "first encoder layer": ("encoder.0.",),
    "projector": ("project_",),
    "encoder and projector": ("encoder.", "project_"),
}
FIXED_WEIGHTS_SEED = 999
LONGER = (25, 50, 100, 200, 400)


def ranking(trainer: Trainer) -> np.ndarray:
    return rank_features(z_norm_scores(trainer))


def run(weights_seed: int, training_seed: int, epochs: int = EPOCHS, fixed: dict | None = None,
        checkpoints: tuple[int, ...] = ()) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """One run: its untrained ranking, and its rankings at ``checkpoints`` (and at ``epochs``).

    ``fixed`` replaces those entries of the freshly built network's state.
    """
    trainer = Trainer(data.A, seed=weights_seed)
    if fixed:
        trainer.model.load_state_dict({**trainer.model.state_dict(), **fixed})
    untrained = ranking(trainer)
    trainer.generator.manual_seed(training_seed)
    torch.manual_seed(training_seed)
    rankings = {}
    for epoch in range(1, epochs + 1):
        trainer.step()
        if epoch in checkpoints or epoch == epochs:
            rankings[epoch] = ranking(trainer)
    return untrained, rankings


def row(name: str, untrained: list[np.ndarray], final: list[np.ndarray]) -> str:
    accuracies, selections = zip(*(data.evaluate(r) for r in final))
    kept = np.mean([jaccard(u[:50], r[:50]) for u, r in zip(untrained, final, strict=True)])
    return (f"| {name} | {mean_pairwise_jaccard(selections):.3f} | {np.mean(accuracies):.2f} ± "
            f"{np.std(accuracies):.2f} | {kept:.2f} |")


data = Dataset(sys.argv[1])
parts = sys.argv[2:] or ["sources", "layers", "longer"]
started = time.perf_counter()
header = ("| runs | Jaccard@50 between the four | best-k accuracy | Jaccard@50 of the untrained top 50 "
          "with the final |\n|---|---|---|---|")
with compute_settings(torch.device("cpu"), "fp32", None):
    if "sources" in parts:
        print(header)
        for name, seeds in SOURCES.items():
            runs = [run(w, t) for w, t in seeds]
            print(row(name, [u for u, _ in runs], [r[EPOCHS] for _, r in runs]), flush=True)
        print(f"({time.perf_counter() - started:.0f} s)\n")
    if "layers" in parts:
        reference = Trainer(data.A, seed=FIXED_WEIGHTS_SEED).model.state_dict()
        print(header.replace("| runs |", "| starting from the same weights |"))
        for name, prefixes in LAYERS.items():
            fixed = {k: v for k, v in reference.items() if k.startswith(prefixes)}
            runs = [run(s, s, fixed=fixed) for s in (0, 1, 2, 3)]
            print(row(name, [u for u, _ in runs], [r[EPOCHS] for _, r in runs]), flush=True)
        print(f"({time.perf_counter() - started:.0f} s)\n")
    if "longer" in parts:
        runs = [run(s, s, epochs=LONGER[-1], checkpoints=LONGER)[1] for s in (0, 1, 2, 3)]
        print("| epochs | Jaccard@50 between the four | best-k accuracy |\n|---|---|---|")
        for epoch in LONGER:
            accuracies, selections = zip(*(data.evaluate(r[epoch]) for r in runs))
            print(f"| {epoch} | {mean_pairwise_jaccard(selections):.3f} | {np.mean(accuracies):.2f} ± "
                  f"{np.std(accuracies):.2f} |")
        print(f"({time.perf_counter() - started:.0f} s)")
