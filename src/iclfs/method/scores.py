"""Feature scores from the anchor embeddings, and the ranking (docs/method.md §5)."""

from __future__ import annotations

import numpy as np

from .config import SCORE_NAMES

__all__ = ["SCORE_NAMES", "feature_scores", "min_max", "rank_features", "rank_positions"]

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
