"""Laplacian-Gated Ranking Correction (LGRC), per target k (docs/method.md §7)."""

from __future__ import annotations

import heapq

import numpy as np


def laplacian_gate(laplacian_scores: np.ndarray, quantile: float = 0.75) -> float:
    """gamma: the ``quantile`` (numpy linear) of the finite scores; +inf if none is finite."""
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {quantile!r}")
    finite = np.asarray(laplacian_scores, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    return float(np.quantile(finite, quantile)) if finite.size else float("inf")


def lgrc_select(
    order: np.ndarray,
    laplacian_scores: np.ndarray,
    k: int,
    alpha: float = 1.5,
    quantile: float = 0.75,
) -> np.ndarray:
    """Correct the first k of ``order`` with the Laplacian gate.

    Pool = first ``p = min(d, round(alpha k))`` features of the order. While reserve
    features remain, the pool member with the largest Laplacian score is
    swapped for the next reserve feature if its score exceeds gamma. The pool
    is then put back in its order and cut to k. Among pool members with
    equal largest scores, the one ranked lowest is dropped first.

    Parameters
    ----------
    order : ndarray of shape (d,)
        Feature indices, best first.
    laplacian_scores : ndarray of shape (d,)
        Laplacian score of each feature (by index).
    k : int
        Number of features to return, 1 <= k <= d.

    Returns
    -------
    ndarray of shape (k,)
        Feature indices, best first.
    """
    order = np.asarray(order, dtype=np.int64)
    scores = np.asarray(laplacian_scores, dtype=np.float64)
    d = len(order)
    if not 1 <= k <= d:
        raise ValueError(f"k must be in 1..{d}, got {k}")
    if alpha < 1:
        raise ValueError(f"alpha must be >= 1, got {alpha!r}")
    gamma = laplacian_gate(scores, quantile)
    p = min(d, round(alpha * k))
    # Max-heap on (score, rank position); the pool is tracked by rank position
    # so the final re-ordering is a sort of positions.
    heap = [(-scores[order[pos]], -pos) for pos in range(p)]
    heapq.heapify(heap)
    for pos in range(p, d):
        neg_score, neg_pos = heap[0]
        if -neg_score <= gamma:
            break
        heapq.heapreplace(heap, (-scores[order[pos]], -pos))
    kept_positions = np.sort(np.array([-neg_pos for _, neg_pos in heap], dtype=np.int64))
    return order[kept_positions[:k]]


def select_features(
    order: np.ndarray,
    laplacian_scores: np.ndarray,
    k: int,
    use_lgrc: bool = True,
    alpha: float = 1.5,
    quantile: float = 0.75,
) -> np.ndarray:
    """The k features selected from ``order``: :func:`lgrc_select`'s, or with
    ``use_lgrc=False`` the first k of the order (the paper's "without LGRC", WL).

    Returns
    -------
    ndarray of shape (k,)
        Feature indices, best first.
    """
    if not use_lgrc:
        return np.asarray(order)[:k]
    return lgrc_select(order, laplacian_scores, k, alpha=alpha, quantile=quantile)
