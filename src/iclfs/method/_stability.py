"""How much selections agree: the Jaccard index and the stability estimator of Nogueira et al.

Every agreement the package reports is computed here: between a run's
members, between the seeds of a benchmark cell, between two refreshes of
a data source and between two deployments.

``nogueira`` is the estimator of S. Nogueira, K. Sechidis and G. Brown, "On
the stability of feature selection algorithms", JMLR 18(174), 2018: for M
selections of k_i features out of d, with p_f the share of the selections
that hold feature f,

    Phi = 1 - mean_f (M / (M - 1)) p_f (1 - p_f) / ((k/d) (1 - k/d)),

k the mean selection size. It is 1 for identical selections, about 0 for
selections drawn at random, and corrects for chance where the Jaccard index
does not. Its asymptotic variance (the paper's Theorem 9) gives a confidence
interval from three selections on: with two, each selection's term of the
variance is the same but for their sizes, so the estimate would be zero (or
reflect only the sizes) whatever the selections, and there is no interval.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm, spearmanr


def jaccard(a: Sequence, b: Sequence) -> float:
    """|a & b| / |a | b| of two selections (1 when both are empty)."""
    a, b = set(np.asarray(a).tolist()), set(np.asarray(b).tolist())
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def mean_pairwise_jaccard(selections: Sequence[Sequence]) -> float | None:
    """Mean Jaccard index over every pair of selections; None with fewer than two."""
    pairs = [jaccard(a, b) for a, b in itertools.combinations(selections, 2)]
    return float(np.mean(pairs)) if pairs else None


@dataclass(frozen=True)
class Stability:
    """Nogueira's Phi of M selections, its variance and its confidence interval.

    Attributes
    ----------
    phi : float
        The estimate (``nan`` when every selection is empty or holds every feature).
    variance : float
        Its estimated variance (``nan`` with two selections: it cannot be estimated from two).
    lower, upper : float
        The bounds of the ``level`` confidence interval, ``phi -/+ z sqrt(variance)``
        (``nan`` where the variance is).
    level : float
        The interval's confidence, 0.95 by default.
    selections : int
        M.
    """

    phi: float
    variance: float
    lower: float
    upper: float
    level: float
    selections: int

    def as_dict(self) -> dict:
        """The estimate for JSON: ``None`` for what could not be estimated (``nan``)."""
        return {"phi": _finite(self.phi), "lower": _finite(self.lower), "upper": _finite(self.upper),
                "level": self.level, "selections": self.selections}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def selection_matrix(selections: Sequence[Sequence], universe: Sequence) -> np.ndarray:
    """(M, d) boolean matrix: row i marks which items of ``universe`` selection i holds.

    Items of a selection that are not in ``universe`` are refused with their names.
    """
    position = {item: j for j, item in enumerate(universe)}
    Z = np.zeros((len(selections), len(position)), dtype=bool)
    for i, selection in enumerate(selections):
        unknown = [item for item in selection if item not in position]
        if unknown:
            raise ValueError(f"selection {i} holds {len(unknown)} item(s) not among the {len(position)} features, "
                             f"e.g. {unknown[0]!r}")
        Z[i, [position[item] for item in selection]] = True
    return Z


def nogueira(Z: np.ndarray, level: float = 0.95) -> Stability:
    """Nogueira's stability estimate of the selections in ``Z`` with its confidence interval.

    Parameters
    ----------
    Z : array of shape (M, d)
        Row i marks the features selection i holds (0/1 or boolean); M >= 2,
        and M >= 3 for an interval.
    level : float, default=0.95
        The confidence of the interval.

    Returns
    -------
    Stability
    """
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] < 2 or Z.shape[1] < 1:
        raise ValueError(f"the stability of selections needs an (M, d) matrix with M >= 2, got shape {Z.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    M, d = Z.shape
    sizes = Z.sum(axis=1)
    share = sizes.mean() / d  # k / d
    chance = share * (1.0 - share)
    if chance <= 0:  # every selection empty, or every one holds every feature: no spread to compare with
        nan = float("nan")
        return Stability(nan, nan, nan, nan, level, M)
    p = Z.mean(axis=0)
    phi = 1.0 - (M / (M - 1)) * np.mean(p * (1.0 - p)) / chance
    # Theorem 9: each selection's contribution phi_i; the variance is 4 / M^2 times their spread.
    agreement_i = 1.0 - sizes / d - share + (2.0 / d) * (Z @ p)
    expected_i = (1.0 - phi) * (share * sizes / d + (1.0 - share) * (1.0 - sizes / d))
    phi_i = (agreement_i - expected_i) / (2.0 * chance)
    if M == 2:  # agreement_i is the same for both, so phi_i differ by the sizes alone: no spread to estimate from
        nan = float("nan")
        return Stability(float(phi), nan, nan, nan, level, M)
    variance = float(4.0 / M**2 * np.sum((phi_i - phi_i.mean()) ** 2))
    half = float(norm.ppf(0.5 + level / 2.0)) * math.sqrt(variance)
    return Stability(float(phi), variance, float(phi - half), float(phi + half), level, M)


def nogueira_of(selections: Sequence[Sequence], universe: Sequence, level: float = 0.95) -> Stability:
    """:func:`nogueira` of selections given as lists of items (names or indices) out of ``universe``."""
    return nogueira(selection_matrix(selections, universe), level)


def compare_selections(previous: Sequence[str], current: Sequence[str]) -> dict:
    """Compare two ordered selections of feature names (best first).

    Returns
    -------
    dict
        ``jaccard`` (overlap / union), ``overlap`` (count), ``rank_correlation``
        (Spearman correlation of the ranks of the features in both; None when
        fewer than 2 are shared or the ranks are constant), ``entered`` (in the
        current selection only, in its order) and ``left`` (in the previous
        only, in its order).
    """
    prev, curr = list(previous), list(current)
    before = set(prev)
    shared = [name for name in curr if name in before]
    correlation = None
    if len(shared) >= 2:
        prev_rank = {name: i for i, name in enumerate(prev)}
        curr_rank = {name: i for i, name in enumerate(curr)}
        rho = spearmanr([prev_rank[n] for n in shared], [curr_rank[n] for n in shared]).statistic
        correlation = None if np.isnan(rho) else float(rho)
    return {
        "jaccard": jaccard(prev, curr),
        "overlap": len(shared),
        "rank_correlation": correlation,
        "entered": [name for name in curr if name not in before],
        "left": [name for name in prev if name not in set(curr)],
    }
