"""Combining the members' scores into one order (docs/consensus.md).

``mean_rank``
    Each member's scores are turned into ranks; the consensus orders the
    features by their mean rank. Ranks ignore how each member scales its
    scores, which varies from seed to seed.
``mean_score``
    The mean of the members' min-max scaled scores.

``consensus.laplacian_weight`` > 0 mixes in the rank of the Laplacian score
(a variant beyond the paper). One member is the paper's single run: its own
score orders the features, whatever the rule.

Per feature it keeps the consensus score, every member's order and, at each
k, the share of the members that put the feature in their first k; the
members' agreement at each k is their mean pairwise Jaccard index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .config import LAPLACIAN_FUSIONS, ConsensusConfig
from .scores import feature_order, min_max, rank_positions, rank_score
from .stability import mean_pairwise_jaccard


def combine(member_scores: np.ndarray, rule: str = "mean_rank") -> np.ndarray:
    """One consensus score per feature (higher is better) from the members' scores.

    Parameters
    ----------
    member_scores : array of shape (members, d)
        Each member's score of every feature (higher is better).
    rule : {"mean_rank", "mean_score"}

    Returns
    -------
    ndarray of shape (d,)
        With one member, its scores unchanged. Else ``mean_rank``: 1 minus the
        mean rank scaled to [0, 1] (1 = ranked first by every member);
        ``mean_score``: the mean of the min-max scaled scores.
    """
    member_scores = np.atleast_2d(np.asarray(member_scores, dtype=np.float64))
    if member_scores.shape[0] == 1:
        return member_scores[0].copy()
    if rule == "mean_rank":
        return rank_score(member_scores)
    if rule == "mean_score":
        return np.mean([min_max(s) for s in member_scores], axis=0)
    raise ValueError(f"unknown consensus rule {rule!r}; use mean_rank or mean_score")


RECIPROCAL_OFFSET = 60  # Cormack, Clarke and Buettcher (SIGIR 2009): reciprocal rank fusion's constant


def fuse_laplacian(scores: np.ndarray, laplacian_scores: np.ndarray, weight: float,
                   fusion: str = "rank_mean") -> np.ndarray:
    """Scores (higher is better) that fuse the order of ``scores`` with that of the Laplacian score.

    ``rank_mean``: ``(1 - weight)`` times the rank score of ``scores`` plus
    ``weight`` times that of the Laplacian score (both as
    :func:`~iclfs.method.scores.rank_score`). ``reciprocal_rank``: reciprocal
    rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009), ``(1 - weight) /
    (60 + p) + weight / (60 + p_laplacian)`` with p a feature's position (1 =
    first) in each order. Where the two orders' heads differ, the rank mean's
    head is the features placed fairly well by both, a crowded middle that
    small changes reorder; reciprocal rank's head is the heads of both. A
    lower Laplacian score is better and a non-finite one ranks last.
    ``weight = 0`` returns ``scores`` unchanged.

    Returns
    -------
    ndarray of shape (d,)
    """
    if fusion not in LAPLACIAN_FUSIONS:
        raise ValueError(f"unknown Laplacian fusion {fusion!r}; use {' or '.join(LAPLACIAN_FUSIONS)}")
    if weight == 0:
        return np.asarray(scores, dtype=np.float64)
    ls = np.asarray(laplacian_scores, dtype=np.float64)
    ls = -np.where(np.isfinite(ls), ls, np.inf)  # higher is better; a non-finite score ranks last
    if fusion == "rank_mean":
        return (1.0 - weight) * rank_score(scores) + weight * rank_score(ls)
    own = rank_positions(feature_order(scores))
    laplacian = rank_positions(feature_order(ls))
    return (1.0 - weight) / (RECIPROCAL_OFFSET + own) + weight / (RECIPROCAL_OFFSET + laplacian)


def member_orders(member_scores: np.ndarray) -> np.ndarray:
    """Each member's order, (members, d) feature indices best first."""
    return np.array([feature_order(s) for s in np.atleast_2d(member_scores)], dtype=np.int64)


def top_k_frequency(orders: np.ndarray, k: int, weights: np.ndarray | None = None) -> np.ndarray:
    """(d,) share of the members whose first k include each feature (weighted, with ``weights``)."""
    orders = np.atleast_2d(orders)
    weights = np.ones(len(orders)) if weights is None else np.asarray(weights, dtype=np.float64)
    counts = np.zeros(orders.shape[1])
    for order, weight in zip(orders, weights, strict=True):
        counts[order[:k]] += weight
    return counts / weights.sum()


def member_jaccard(orders: np.ndarray, k: int) -> float | None:
    """Mean pairwise Jaccard of the members' first k; None with one member."""
    return mean_pairwise_jaccard([order[:k] for order in np.atleast_2d(orders)])


@dataclass
class Consensus:
    """The members' scores combined into one order.

    Attributes
    ----------
    scores : ndarray of shape (d,)
        The score that orders the features (higher is better): with one member
        its ``ranking.score``, else the consensus of the members' (and the
        Laplacian score's, with ``consensus.laplacian_weight``).
    order : ndarray of shape (d,)
        Feature indices, best first (ties by index).
    member_orders : ndarray of shape (members, d), or list of arrays
        Each member's order, best first; carried members
        (:func:`iclfs.method.history.combine_history`) order only the current
        features they saw.
    frequency : dict of int to ndarray of shape (d,)
        Per k: the (age-weighted, for carried members) share of the members
        whose first k include each feature.
    member_jaccard : dict of int to float or None
        Per k: the mean pairwise Jaccard index of the members' first k (None with one member).
    seen : ndarray of shape (d,) or None
        Carried members only: how many members saw each feature.
    weights : ndarray of shape (members,) or None
        Carried members only: each member's age weight.
    gate : ndarray of shape (d,) or None
        Carried ICLFS members only: the Laplacian scores LGRC gates by
        (:func:`iclfs.method.history.gate_laplacian`), computed once for the
        order and the lists.
    """

    scores: np.ndarray
    order: np.ndarray
    member_orders: np.ndarray | list[np.ndarray]
    frequency: dict[int, np.ndarray]
    member_jaccard: dict[int, float | None]
    seen: np.ndarray | None = None
    weights: np.ndarray | None = None
    gate: np.ndarray | None = None


def combine_members(member_scores: np.ndarray, consensus: ConsensusConfig, laplacian: np.ndarray | None,
                    k_values: Sequence[int]) -> Consensus:
    """Combine the members' scores (members, d) into one order.

    With one member the order is that member's own score (the paper's run;
    with feature blocks, the rank within its block), whatever
    ``consensus.laplacian_weight``; ``laplacian`` (the Laplacian scores) is
    needed only for a consensus with ``laplacian_weight`` > 0.
    """
    member_scores = np.atleast_2d(np.asarray(member_scores, dtype=np.float64))
    scores = combine(member_scores, consensus.combine)
    # The fusion is part of combining members: one member is the paper's run, its raw score.
    if len(member_scores) > 1 and consensus.laplacian_weight > 0:
        if laplacian is None:
            raise ValueError("consensus.laplacian_weight > 0 needs the Laplacian scores")
        scores = fuse_laplacian(scores, laplacian, consensus.laplacian_weight)
    orders = member_orders(member_scores)
    return Consensus(
        scores=scores,
        order=feature_order(scores),
        member_orders=orders,
        frequency={k: top_k_frequency(orders, k) for k in k_values},
        member_jaccard={k: member_jaccard(orders, k) for k in k_values},
    )
