"""Round 1 of the consensus study: train members and keep their feature scores at checkpoints.

    STUDY=<scratch> python docs/reports/consensus_study/study_train.py ../shared/validation/lung_small.mat full 1.0 100 0,1,2

Arguments: the table, a name for the configuration, the fraction of the
samples each member trains on, the epochs, and the members' seeds. Each
member is saved to ``$STUDY/study/<dataset>__<configuration>__<seed>.npz``
with its z-norm and h-norm scores (method.md §6) after each epoch in
CHECKPOINTS. A member trained for t epochs is exactly the checkpoint at t of
a longer run: the epochs before t draw the same views and dropout. Members
already saved are skipped. One torch thread per member, as the study ran.
"""

import os
import sys
import time

import numpy as np

from study_eval import MEMBERS, member_path
from iclfs.io.tables import read_feature_table
from iclfs.method.config import RuntimeConfig, TrainingConfig
from iclfs.method.model import select_regime
from iclfs.method.preprocessing import invert, prepare
from iclfs.method.runtime import compute_settings
from iclfs.method.scores import feature_scores
from iclfs.method.training import Trainer, embed

CHECKPOINTS = (0, 1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50, 75, 100)


def member(A: np.ndarray, seed: int, epochs: int, subsample: float) -> dict:
    """Train one member on its subsample of the columns of ``A`` (d, n); its scores at each checkpoint.

    The layer sizes are those of all n samples, whatever the subsample.
    """
    d, n = A.shape
    if subsample < 1:
        columns = np.sort(np.random.default_rng(seed).choice(n, size=max(4, round(subsample * n)), replace=False))
        A = np.ascontiguousarray(A[:, columns])
    training = TrainingConfig(epochs=epochs, regime=select_regime(n).name)
    trainer = Trainer(A, training, runtime=RuntimeConfig(device="cpu", progress=False), seed=seed)
    z, h, seconds = [], [], []

    def keep() -> None:
        scores = feature_scores(*embed(trainer.model, trainer.anchor))
        z.append(scores["z_norm"])
        h.append(scores["h_norm"])

    with compute_settings(trainer.device, trainer.precision, 1):
        keep()
        for epoch in range(1, epochs + 1):
            seconds.append(trainer.step()["seconds"])
            if epoch in CHECKPOINTS:
                keep()
    return dict(z=np.array(z), h=np.array(h), checkpoints=np.array([c for c in CHECKPOINTS if c <= epochs]),
                seconds=np.array(seconds))


if __name__ == "__main__":
    path, config, subsample, epochs = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    seeds = [int(s) for s in sys.argv[5].split(",")]
    name = os.path.basename(path).split(".")[0]
    A = invert(prepare(read_feature_table(path)).standardized)
    os.makedirs(MEMBERS, exist_ok=True)
    for seed in seeds:
        out = member_path(name, config, seed)
        if os.path.exists(out):
            continue
        started = time.time()
        saved = member(A, seed, epochs, subsample)
        np.savez(out + ".tmp.npz", **saved)
        os.replace(out + ".tmp.npz", out)
        print(name, config, seed, f"{time.time() - started:.1f}s", flush=True)
