"""Laplacian-Gated Ranking Correction (LGRC), per target k (docs/method.md §7)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ._config import SelectionConfig
from ._scores import rank_positions


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


# -- every k, and the hold to the last lists --------------------------------------

#: The band a list holds within (the refresh study's second and third rounds, benchmarks/results/): a feature of
#: the last list stays while it is among the first HOLD x k this run would select, and a feature among the first
#: k / ADMIT always enters.
HOLD = 3.0
ADMIT = 2.0


def select_every_k(order: np.ndarray, laplacian: np.ndarray, selection: SelectionConfig,
                   k_values: Sequence[int]) -> dict[int, np.ndarray]:
    """The selected features at every k of the grid: LGRC, or the first k with ``use_lgrc: false``."""
    return {k: np.asarray(select_features(order, laplacian, k, use_lgrc=selection.use_lgrc, alpha=selection.alpha,
                                          quantile=selection.quantile), dtype=np.int64)
            for k in k_values}


def hold(previous: Sequence[str] | None, wider: np.ndarray, feature_names: Sequence[str], k: int,
         admit: float = ADMIT) -> np.ndarray:
    """The k features a run hands on when its data source's last list at k was ``previous``.

    A list that holds still keeps a feature while it stays near the top, rather
    than swapping it whenever a refresh nudges it a few places down: a feature
    of the last list stays on while it is in ``wider``, this run's selection of
    :data:`HOLD` x k features; the places of those that left go to the best
    features of ``wider`` not on the last list. Features of the last list no
    longer in the table are dropped (by name).

    The band has a second edge, so that a list does not keep an early chance
    choice against the members' clear ones: a feature among the first
    ceil(k / ``admit``) of ``wider`` always enters, and the held features this
    run ranks lowest make way.

    Parameters
    ----------
    previous : sequence of str or None
        The last list at k, by name; None (or empty) when there is none.
    wider : ndarray of shape (w,), w >= k
        This run's selection at the wider k, feature indices into ``feature_names``, best first.
    feature_names : sequence of str
        The table's feature names.
    k : int
    admit : float >= 1, default=ADMIT
        Infinite: no feature is forced in.

    Returns
    -------
    ndarray of shape (k,)
        Feature indices, in ``wider``'s order; ``wider[:k]`` without a last list.
    """
    wider = np.asarray(wider, dtype=np.int64)
    if not 1 <= k <= len(wider):
        raise ValueError(f"k must be in 1..{len(wider)} (the wider selection's size), got {k}")
    if not admit >= 1:
        raise ValueError(f"admit must be at least 1 (infinite: no forced entry), got {admit}")
    if not previous:
        return wider[:k]
    kept = set(map(str, previous))
    on_list = np.array([str(feature_names[j]) in kept for j in wider], dtype=bool)
    admitted = np.arange(len(wider)) < admitted_k(admit, k)
    # Places go first to the admitted, then to the last list's features, then to the rest, each best first.
    priority = np.where(admitted, 0, np.where(on_list, 1, 2))
    chosen = wider[np.argsort(priority, kind="stable")[:k]]
    return wider[np.isin(wider, chosen)]


def admitted_k(admit: float, k: int) -> int:
    """How many of this run's first features :func:`hold` lets into a list of k, whatever the last list was."""
    return 0 if math.isinf(admit) else min(k, math.ceil(k / admit))


def held_k(hold_factor: float, k: int, n_features: int) -> int:
    """The size of the wider selection :func:`hold` keeps the last list's features within."""
    return min(n_features, max(k, round(hold_factor * k)))


def held_selections(order: np.ndarray, laplacian: np.ndarray, selection: SelectionConfig, k_values: Sequence[int],
                    previous: Mapping[int, Sequence[str]] | None, feature_names: Sequence[str],
                    hold_factor: float = HOLD, admit: float = ADMIT) -> dict[int, np.ndarray]:
    """:func:`select_every_k`, each list held to ``previous``, the last list at its k by name (:func:`hold`);
    :func:`select_every_k` itself without a hold or a last list."""
    if hold_factor <= 1 or not previous:
        return select_every_k(order, laplacian, selection, k_values)
    d = len(order)
    wider = select_every_k(order, laplacian, selection, sorted({held_k(hold_factor, k, d) for k in k_values}))
    return {k: hold(previous.get(k), wider[held_k(hold_factor, k, d)], feature_names, k, admit) for k in k_values}


def most_chosen(order: np.ndarray, frequency: np.ndarray, k: int) -> np.ndarray:
    """The k features of highest ``frequency``, ties by their place in ``order``, in ``order``'s order.

    Another method is not corrected by LGRC: its selection at k is its own (a run of it alone marks its
    selection with frequency 1) or, with kept members, the features its members chose most.
    """
    position = rank_positions(order)
    chosen = np.lexsort((position, -np.asarray(frequency, dtype=np.float64)))[:k]
    return chosen[np.argsort(position[chosen])]


def gate(order: np.ndarray, laplacian: np.ndarray, frequency: Mapping[int, np.ndarray], selection: SelectionConfig,
         k_values: Sequence[int], feature_names: Sequence[str],
         previous: Mapping[int, Sequence[str]] | None = None) -> dict[int, np.ndarray]:
    """The LGRC step: the selection at every k of the grid, each held to the last list at its k.

    Parameters
    ----------
    order : ndarray of shape (d,)
        The ranking's order, best first.
    laplacian : ndarray of shape (d,)
        The Laplacian scores LGRC gates by (kept members' mean, ``Ranking.gate``, when there is one).
    frequency : dict of int to ndarray of shape (d,)
        The ranking's member frequency per k: another method's selection is its members' most chosen.
    selection : SelectionConfig
    k_values : sequence of int
    feature_names : sequence of str
    previous : dict of int to sequence of str, optional
        The last lists handed on, by name (ICLFS only); None: no hold.

    Returns
    -------
    dict of int to ndarray of shape (k,)
        Feature indices, best first.
    """
    if selection.method != "iclfs":
        return {k: most_chosen(order, frequency[k], k) for k in k_values}
    return held_selections(order, laplacian, selection, k_values, previous, feature_names)
