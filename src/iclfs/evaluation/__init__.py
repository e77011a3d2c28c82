"""The k-means protocol (docs/method.md §8), the benchmark's cells and its report, the paper's numbers."""

from ._benchmark import cell_key, evaluate_cell, gather, method_name
from ._protocol import best_k, evaluate_selections, kmeans_scores

__all__ = ["best_k", "cell_key", "evaluate_cell", "evaluate_selections", "gather", "kmeans_scores", "method_name"]
