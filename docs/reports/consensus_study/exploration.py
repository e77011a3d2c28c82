"""What the exploration scripts beside this file share: one validation set (or the embedded default), ready, and the protocol on a ranking."""

import numpy as np

from iclfs.evaluation.protocol import best_k, evaluate_selections
from iclfs.io.synthetic import make_synthetic
from iclfs.io.tables import read_feature_table
from iclfs.method.config import LaplacianConfig, SelectionConfig
from iclfs.method.consensus import mean_pairwise_jaccard
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

    @property
    def signal(self) -> set[int]:
        """The informative and redundant columns of the embedded default (empty for a real dataset)."""
        metadata = self.table.metadata or {}
        return set(self.table.informative_features or ()) | set(metadata.get("redundant_features", ()))

    def header(self, *names: str) -> str:
        """The Markdown header of :meth:`row`'s table, after the columns ``names``."""
        columns = [*names, "Jaccard@50 between the seeds", "best-k accuracy (mean ± std over the seeds)"]
        if self.signal:
            columns.append("signal features in the first 50 (per seed)")
        return "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)

    def row(self, rankings: list[np.ndarray], *names: object) -> str:
        """One table row: ``names``, then the rankings' Jaccard@50, best-k accuracy and, on the embedded default, signal found."""
        accuracies, selections = zip(*(self.evaluate(r) for r in rankings))
        cells = [*map(str, names), f"{mean_pairwise_jaccard(selections):.3f}",
                 f"{np.mean(accuracies):.2f} ± {np.std(accuracies):.2f}"]
        if self.signal:
            cells.append(", ".join(str(sum(int(j) in self.signal for j in r[:50])) for r in rankings))
        return "| " + " | ".join(cells) + " |"


def z_norm_scores(trainer: Trainer) -> np.ndarray:
    """The paper's score of every feature from the trainer's network as it is now (eval mode; draws nothing)."""
    return feature_scores(*embed(trainer.model, trainer.anchor))["z_norm"]
