"""What the exploration scripts beside this file share: one validation set (or the embedded default), ready, and the protocol on a ranking."""

import numpy as np

from iclfs.evaluation.protocol import best_k, evaluate_selections
from iclfs.io.synthetic import make_synthetic
from iclfs.io.tables import read_feature_table
from iclfs.method.config import LaplacianConfig, SelectionConfig
from iclfs.method.laplacian import laplacian_scores
from iclfs.method.lgrc import select_features
from iclfs.method.preprocessing import invert, prepare
from iclfs.method.scores import feature_scores
from iclfs.method.training import Trainer, embed


class Dataset:
    """A labelled table standardized (``X``, n x d) and inverted (``A``, d x n), with its Laplacian scores."""

    def __init__(self, path: str) -> None:
        # "synthetic": the embedded default, whose informative and redundant columns are known.
        self.table = make_synthetic() if path == "synthetic" else read_feature_table(path)
        self.X = prepare(self.table).standardized
        self.A = invert(self.X)
        self.codes = np.unique(np.asarray(self.table.y), return_inverse=True)[1]
        self.laplacian = laplacian_scores(self.X, n_neighbors=LaplacianConfig().n_neighbors)
        self.grid = [k for k in SelectionConfig().k_values if k < self.X.shape[1]]

    def selection(self, ranking: np.ndarray, k: int) -> np.ndarray:
        """The k features LGRC selects from ``ranking`` (method.md §7)."""
        return select_features(ranking, self.laplacian, k)

    def evaluate(self, ranking: np.ndarray) -> tuple[float, np.ndarray]:
        """Best-k accuracy in percent (method.md §8, LGRC at every k) and the k = 50 selection."""
        picks = {k: self.selection(ranking, k) for k in self.grid}
        return 100 * best_k(evaluate_selections(self.X, self.codes, picks))["accuracy_mean"], picks[50]


def z_norm_scores(trainer: Trainer) -> np.ndarray:
    """The paper's score of every feature from the trainer's network as it is now (eval mode; draws nothing)."""
    return feature_scores(*embed(trainer.model, trainer.anchor))["z_norm"]
