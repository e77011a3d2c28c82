"""Feature scores from the anchor embeddings, and the ranking (docs/method.md §5)."""

from __future__ import annotations

import numpy as np

from .config import SCORE_NAMES

__all__ = ["SCORE_NAMES", "correlated_features", "feature_scores", "min_max", "rank_features", "rank_positions",
           "rank_score", "smooth_over_correlated"]

WEIGHTED_SUM_H = 0.35  # the paper's ablation weights: 0.35 h~ + 0.65 z~


def min_max(values: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; a constant vector maps to zeros."""
    values = np.asarray(values, dtype=np.float64)
    lo, hi = values.min(), values.max()
    span = hi - lo
    return np.zeros_like(values) if span <= 0 else (values - lo) / span


def feature_scores(h: np.ndarray, z: np.ndarray, contrastive_loss: np.ndarray | None = None
                   ) -> dict[str, np.ndarray]:
    """The scores of docs/method.md §5 for every feature.

    Parameters
    ----------
    h : ndarray of shape (d, d_h)
        Encoder output of the anchor map.
    z : ndarray of shape (d, d_z)
        Projector output of the anchor map.
    contrastive_loss : ndarray of shape (d,), optional
        Each feature's mean InfoNCE term
        (:func:`iclfs.method.training.contrastive_losses`); its negative is
        the ``contrastive`` score.

    Returns
    -------
    dict of str to ndarray of shape (d,)
        ``{name: (d,) float64}`` for every name in :data:`SCORE_NAMES`
        (``contrastive`` only when ``contrastive_loss`` is given).
    """
    h_norm = np.linalg.norm(np.asarray(h, dtype=np.float64), axis=1)
    z_norm = np.linalg.norm(np.asarray(z, dtype=np.float64), axis=1)
    h_t, z_t = min_max(h_norm), min_max(z_norm)
    scores = {
        "z_norm": z_norm,
        "h_norm": h_norm,
        "weighted_sum": WEIGHTED_SUM_H * h_t + (1.0 - WEIGHTED_SUM_H) * z_t,
        "harmonic": 2.0 * h_t * z_t / (h_t + z_t + 1e-12),
    }
    if contrastive_loss is not None:
        scores["contrastive"] = -np.asarray(contrastive_loss, dtype=np.float64)
    return scores


def rank_features(scores: np.ndarray) -> np.ndarray:
    """Feature indices by descending score, ties broken by the smaller index.

    NaN scores (which the pipeline never produces) sort last.
    """
    scores = np.asarray(scores, dtype=np.float64)
    key = np.where(np.isnan(scores), -np.inf, scores)
    # lexsort sorts by the last key first; it is stable, so equal keys keep index order.
    return np.lexsort((np.arange(len(key)), -key))


def rank_positions(ranking: np.ndarray) -> np.ndarray:
    """The inverse of a ranking: position[j] is feature j's rank, 1 = best (RFE's ``ranking_`` convention)."""
    ranking = np.asarray(ranking, dtype=np.int64)
    positions = np.empty_like(ranking)
    positions[ranking] = np.arange(1, len(ranking) + 1)
    return positions


def rank_score(scores: np.ndarray) -> np.ndarray:
    """1 - (mean rank - 1) / (d - 1) over the rows of ``scores`` (members, d): 1 = first everywhere."""
    scores = np.atleast_2d(scores)
    d = scores.shape[1]
    positions = np.array([rank_positions(rank_features(s)) for s in scores], dtype=np.float64)
    return 1.0 - (positions.mean(axis=0) - 1.0) / max(d - 1, 1)


CORRELATION_BLOCK_ROWS = 1024  # rows of the d x d correlation held at once: 80 MB at d = 20,000


def correlated_features(X: np.ndarray, n_neighbors: int, block_rows: int = CORRELATION_BLOCK_ROWS) -> np.ndarray:
    """Each feature and its ``n_neighbors`` features of largest absolute correlation (docs/method.md §5).

    Parameters
    ----------
    X : array of shape (n, d)
        The standardized table (columns of mean 0; a flat column correlates
        with nothing).
    n_neighbors : int
        At least 0 and below d.

    Returns
    -------
    ndarray of shape (d, n_neighbors + 1)
        Row j: feature j first, then its neighbors by decreasing absolute
        correlation, ties by the smaller index. Computed ``block_rows``
        features at a time, so memory grows with d, not d².
    """
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    if not 0 <= n_neighbors < d:
        raise ValueError(f"n_neighbors must be in [0, {d - 1}] for {d} features, got {n_neighbors}")
    norms = np.linalg.norm(X, axis=0)
    unit = X / np.where(norms > 0, norms, 1.0)
    neighbors = np.empty((d, n_neighbors + 1), dtype=np.int64)
    for start in range(0, d, block_rows):
        stop = min(start + block_rows, d)
        correlation = np.abs(unit[:, start:stop].T @ unit)
        # The feature itself first, whatever a copy of it correlates.
        correlation[np.arange(stop - start), np.arange(start, stop)] = np.inf
        neighbors[start:stop] = _largest(correlation, n_neighbors + 1)
    return neighbors


def _largest(values: np.ndarray, m: int) -> np.ndarray:
    """Per row, the columns of the m largest values, largest first, ties by the smaller column.

    A partition finds them in O(d) per row; only a row with a tie across the
    m-th place (a flat feature's zeros) is sorted whole, to keep the smaller columns.
    """
    rows = np.arange(len(values))[:, None]
    if m < values.shape[1]:
        picked = np.argpartition(-values, m - 1, axis=1)[:, :m]
        threshold = values[rows, picked].min(axis=1, keepdims=True)
        tied = np.flatnonzero((values >= threshold).sum(axis=1) > m)
        picked[tied] = np.argsort(-values[tied], axis=1, kind="stable")[:, :m]
    else:
        picked = np.broadcast_to(np.arange(values.shape[1]), values.shape).copy()
    order = np.lexsort((picked, -values[rows, picked]), axis=1)
    return np.take_along_axis(picked, order, axis=1)


def smooth_over_correlated(scores: np.ndarray, neighbors: np.ndarray) -> np.ndarray:
    """Each feature's rank score averaged over it and its correlated features (a variant beyond the paper).

    Parameters
    ----------
    scores : array of shape (d,)
        One network's scores, higher is better.
    neighbors : array of shape (d, m)
        From :func:`correlated_features`.

    Returns
    -------
    ndarray of shape (d,)
        The mean of :func:`rank_score` over each row of ``neighbors``: a
        feature and its near-copies count alike, so runs that pick different
        members of one group of features agree more (docs/consensus.md).
    """
    return rank_score(scores)[np.asarray(neighbors)].mean(axis=1)
