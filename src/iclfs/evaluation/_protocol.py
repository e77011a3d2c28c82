"""The k-means evaluation protocol, when labels exist (docs/method.md §8)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score


def clustering_accuracy(labels: np.ndarray, clusters: np.ndarray) -> float:
    """Accuracy under the best one-to-one matching of clusters to classes.

    Hungarian algorithm on the contingency table; clusters left unmatched
    (more clusters than classes, or vice versa) count as errors.
    """
    labels = np.asarray(labels)
    clusters = np.asarray(clusters)
    if labels.shape != clusters.shape:
        raise ValueError(f"labels {labels.shape} and clusters {clusters.shape} differ in shape")
    _, y = np.unique(labels, return_inverse=True)
    _, c = np.unique(clusters, return_inverse=True)
    table = np.zeros((c.max() + 1, y.max() + 1), dtype=np.int64)
    np.add.at(table, (c, y), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / len(labels))


def kmeans_scores(
    X: np.ndarray, labels: np.ndarray, n_runs: int = 20, seed: int = 42
) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy and NMI of ``n_runs`` k-means runs (random_state = seed + r).

    Parameters
    ----------
    X : ndarray of shape (n, k)
        Selected standardized columns.
    labels : ndarray of shape (n,)
        Integer class codes.

    Returns
    -------
    accuracies : ndarray of shape (n_runs,)
        The clustering accuracy of each run.
    nmis : ndarray of shape (n_runs,)
        The NMI of each run.
    """
    n_clusters = len(np.unique(labels))
    acc = np.empty(n_runs)
    nmi = np.empty(n_runs)
    for r in range(n_runs):
        clusters = KMeans(n_clusters=n_clusters, n_init=1, random_state=seed + r).fit_predict(X)
        acc[r] = clustering_accuracy(labels, clusters)
        nmi[r] = normalized_mutual_info_score(labels, clusters)
    return acc, nmi


def informative_recall(selection: Sequence[int], informative_features: Sequence[int]) -> tuple[int, float]:
    """(how many informative features are in ``selection``, that count / number of informative)."""
    truth = set(int(j) for j in informative_features)
    found = len(truth.intersection(int(j) for j in selection))
    return found, (found / len(truth) if truth else float("nan"))


def evaluate_selections(
    X: np.ndarray,
    labels: np.ndarray,
    selections: Mapping[int, Sequence[int]],
    n_runs: int = 20,
    seed: int = 42,
    informative_features: Sequence[int] | None = None,
) -> list[dict]:
    """Run the protocol for every k; one row per k (sorted by k).

    Each row: ``k, accuracy_mean, accuracy_std`` (population std),
    ``nmi_mean, nmi_std`` and, when ``informative_features`` is given,
    ``informative_recovered`` (how many of them are selected) and
    ``informative_recall`` (that count over the number of informative features).
    """
    rows = []
    for k in sorted(selections):
        columns = np.asarray(selections[k], dtype=np.int64)
        acc, nmi = kmeans_scores(X[:, columns], labels, n_runs=n_runs, seed=seed)
        row = {
            "k": int(k),
            "accuracy_mean": float(acc.mean()),
            "accuracy_std": float(acc.std()),
            "nmi_mean": float(nmi.mean()),
            "nmi_std": float(nmi.std()),
        }
        if informative_features is not None:
            row["informative_recovered"], row["informative_recall"] = informative_recall(columns, informative_features)
        rows.append(row)
    return rows


def best_k(rows: Sequence[Mapping]) -> Mapping:
    """The row with the highest mean accuracy; ties go to the smaller k."""
    if not rows:
        raise ValueError("no evaluation rows to choose from")
    return max(rows, key=lambda r: (r["accuracy_mean"], -r["k"]))
