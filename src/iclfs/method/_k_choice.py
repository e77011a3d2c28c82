"""The k handed on: ``selection.k``, or with ``auto`` the largest k the members agree on (docs/members.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ._config import SelectionConfig

#: k auto: the largest k whose selection the members agree on at least this much.
AUTO_FREQUENCY = 0.5


@dataclass(frozen=True)
class KChoice:
    """The k chosen, and why."""

    k: int
    reason: str
    agreement: dict[int, float]  # with ``auto``, per k: median chance-corrected member frequency of the selection


def agreement(frequency: np.ndarray, selection: np.ndarray, k: int, d: int) -> float:
    """Median over the ``selection`` of its features' member top-k frequency, corrected for chance.

    A feature in a random top k out of d has frequency k / d on average, so
    ``(frequency - k/d) / (1 - k/d)`` is 0 for members that agree by chance
    and 1 for members that all select it.
    """
    chance = k / d
    if chance >= 1:
        return 1.0
    return float(np.median((np.asarray(frequency)[selection] - chance) / (1.0 - chance)))


def agreed_k(agreements: Mapping[int, float], threshold: float) -> KChoice:
    """The largest k whose selection the members agree on at least ``threshold``.

    Without one, the smallest k: the members agree on no list of that size,
    and the shortest list is the one to check first.
    """
    ks = sorted(agreements)
    agreed = [k for k in ks if agreements[k] >= threshold]
    shown = ", ".join(f"k = {k}: {agreements[k]:.2f}" for k in ks)
    if agreed:
        k = agreed[-1]
        reason = (f"k = {k} is the largest k whose selected features the members agree on at least "
                  f"{threshold:g} (median chance-corrected top-k frequency; {shown})")
    else:
        k = ks[0]
        reason = (f"no k reaches the agreement threshold {threshold:g} ({shown}); the smallest k, {k}, is used: "
                  "the members disagree, so treat the list with care")
    return KChoice(k, reason, dict(agreements))


def choose_k(selections: Mapping[int, np.ndarray], frequency: Mapping[int, np.ndarray], selection: SelectionConfig,
             n_features: int) -> KChoice:
    """k and why: ``selection.k``, or with ``auto`` the members' agreement (:func:`agreed_k`)."""
    if selection.k != "auto":
        return KChoice(int(selection.k), f"selection.k = {selection.k}", {})
    # Selecting every feature is no selection: its agreement is 1 by construction.
    candidates = [k for k in selections if k < n_features] or list(selections)
    agreements = {k: agreement(frequency[k], selections[k], k, n_features) for k in candidates}
    return agreed_k(agreements, AUTO_FREQUENCY)
