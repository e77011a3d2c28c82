"""Feature scores from the anchor embeddings, and the order they give (docs/method.md §5).

Words used throughout the package: a feature's **score** is a number, higher
is better; an **order** is the feature indices best first; a feature's
**rank** is its position in an order, 1 = best (scikit-learn's ``ranking_``).
"""

from __future__ import annotations

import numpy as np
import torch

from ._config import SCORE_NAMES
from ._model import ICLFSNetwork

__all__ = ["SCORE_NAMES", "embed", "feature_order", "feature_scores", "min_max", "rank_positions", "rank_score"]

WEIGHTED_SUM_H = 0.35  # the paper's ablation weights: 0.35 h~ + 0.65 z~


@torch.no_grad()
def embed(model: ICLFSNetwork, A: np.ndarray | torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Embed the anchor map once in eval mode: (H of shape (d, d_h), Z of shape (d, d_z)).

    The network is left in the mode it was in.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    anchor = torch.as_tensor(A, dtype=torch.float32, device=device)
    h, z = model(anchor)
    model.train(was_training)
    return h.float().cpu().numpy(), z.float().cpu().numpy()


def min_max(values: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; a constant vector maps to zeros."""
    values = np.asarray(values, dtype=np.float64)
    lo, hi = values.min(), values.max()
    span = hi - lo
    return np.zeros_like(values) if span <= 0 else (values - lo) / span


def feature_scores(h: np.ndarray, z: np.ndarray) -> dict[str, np.ndarray]:
    """The scores of docs/method.md §5 for every feature.

    Parameters
    ----------
    h : ndarray of shape (d, d_h)
        Encoder output of the anchor map.
    z : ndarray of shape (d, d_z)
        Projector output of the anchor map.

    Returns
    -------
    dict of str to ndarray of shape (d,)
        ``{name: (d,) float64}`` for every name in :data:`SCORE_NAMES`.
    """
    h_norm = np.linalg.norm(np.asarray(h, dtype=np.float64), axis=1)
    z_norm = np.linalg.norm(np.asarray(z, dtype=np.float64), axis=1)
    h_t, z_t = min_max(h_norm), min_max(z_norm)
    return {
        "z_norm": z_norm,
        "h_norm": h_norm,
        "weighted_sum": WEIGHTED_SUM_H * h_t + (1.0 - WEIGHTED_SUM_H) * z_t,
        "harmonic": 2.0 * h_t * z_t / (h_t + z_t + 1e-12),
    }


def feature_order(scores: np.ndarray) -> np.ndarray:
    """Feature indices by descending score, ties broken by the smaller index.

    NaN scores (which the pipeline never produces) sort last.
    """
    scores = np.asarray(scores, dtype=np.float64)
    key = np.where(np.isnan(scores), -np.inf, scores)
    # lexsort sorts by the last key first; it is stable, so equal keys keep index order.
    return np.lexsort((np.arange(len(key)), -key))


def rank_positions(order: np.ndarray) -> np.ndarray:
    """The inverse of an order: position[j] is feature j's rank, 1 = best (RFE's ``ranking_`` convention)."""
    order = np.asarray(order, dtype=np.int64)
    positions = np.empty_like(order)
    positions[order] = np.arange(1, len(order) + 1)
    return positions


def rank_score(scores: np.ndarray) -> np.ndarray:
    """1 - (mean rank - 1) / (d - 1) over the rows of ``scores`` (members, d): 1 = first everywhere."""
    scores = np.atleast_2d(scores)
    d = scores.shape[1]
    positions = np.array([rank_positions(feature_order(s)) for s in scores], dtype=np.float64)
    return 1.0 - (positions.mean(axis=0) - 1.0) / max(d - 1, 1)
