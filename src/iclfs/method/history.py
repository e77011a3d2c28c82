"""The member history of a data source: the carried consensus of scheduled refreshes (docs/consensus.md).

A scheduled ``select`` on a data source is a stream of whole runs on nearly
the same data. Each run adds its member(s) to the source's history, and the
features are ordered by combining every member kept, each weighted by its age
in runs, ``2^(-age / half_life)`` (age 0 for this run's members). The
agreement that many whole runs give at once is then earned over the
refreshes, at the cost of one run each.

**Alignment by name.** Members are kept by feature name, never by column
position: each member's scores are re-ranked among the features it shares
with the current table, a feature no longer in the table is dropped, and a
feature that is new is ordered from the members that saw it (at first, this
run's alone). Per feature, over the members that saw it:

``mean_rank``
    the weighted mean of their rank scores (1 = first, 0 = last among the
    features each shares with the table);
``frequency``
    the weighted share of them whose first k* include it (k* the smallest k
    of the grid), ties broken by ``mean_rank``.

**Seeds.** The history counts every member ever added; member i gets
:func:`member_seed` ``(seed, i)``, so carried members are independent draws,
and replaying the same tables from an empty history gives the same lists.

Everything here is numpy only; the Kedro dataset that stores a history is
:class:`iclfs.io.datasets.MemberHistoryDataset`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .scores import feature_order, rank_positions

RULES = ("mean_rank", "frequency")


class HistoryError(ValueError):
    """A member history cannot be used; the message says why (the run then starts afresh)."""


def member_seed(seed: int, index: int) -> int:
    """The seed of the ``index``-th member ever added to a history of runs seeded ``seed``.

    Member 0 is the run's own seed, so the first run on a data source is the
    run ``seed`` gives without a history; each later member is an independent
    draw from ``numpy.random.SeedSequence([seed, index])``.
    """
    if index < 0:
        raise ValueError(f"a member index is >= 0, got {index}")
    if index == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


def rank_scores(scores: np.ndarray) -> np.ndarray:
    """Each feature's rank score among ``scores``: 1 for the best, 0 for the worst, ties by index."""
    scores = np.asarray(scores, dtype=np.float64)
    d = len(scores)
    return 1.0 - (rank_positions(feature_order(scores)) - 1.0) / max(d - 1, 1)


@dataclass(frozen=True)
class Member:
    """One carried member: the features it saw, by name, and its rank score of each.

    Attributes
    ----------
    run : int
        The run of the history that added it (its age is the current run's number minus this).
    index : int
        Its number among every member ever added to the history (its seed's).
    seed : int
    feature_names : tuple of str
    scores : ndarray of shape (len(feature_names),)
        Rank scores in [0, 1], 1 = best.
    seconds : float
        Its training and scoring time.
    fingerprint : str
        The fingerprint of the table it was trained on.
    """

    run: int
    index: int
    seed: int
    feature_names: tuple[str, ...]
    scores: np.ndarray = field(repr=False)
    seconds: float = 0.0
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if len(self.feature_names) != len(self.scores):
            raise ValueError(f"member {self.index}: {len(self.feature_names)} feature names but "
                             f"{len(self.scores)} scores")


@dataclass(frozen=True)
class MemberHistory:
    """The members a data source has carried so far, oldest first.

    Attributes
    ----------
    members : tuple of Member
    runs : int
        Runs recorded so far: the next run is number ``runs``.
    next_index : int
        Members ever added (those dropped by the cap included): the next member's number.
    lists : tuple of tuple of str
        The lists the last runs handed on (names at their production k), oldest first.
    data_source : str or None
        The data source the history belongs to.
    version : str or None
        The stored version it was read from (None for a new one).
    """

    members: tuple[Member, ...] = ()
    runs: int = 0
    next_index: int = 0
    lists: tuple[tuple[str, ...], ...] = ()
    data_source: str | None = None
    version: str | None = None

    def add_run(self, members: Sequence[tuple[int, Sequence[str], np.ndarray, float, str]],
                max_members: int) -> MemberHistory:
        """This history with one more run's members, ``(seed, feature names, raw scores, seconds,
        fingerprint)`` each, numbered from ``next_index``; only the ``max_members`` newest are kept."""
        if max_members < 1:
            raise ValueError(f"max_members must be >= 1, got {max_members}")
        added = tuple(Member(self.runs, self.next_index + i, int(seed), tuple(map(str, names)),
                             rank_scores(scores), float(seconds), str(fingerprint))
                      for i, (seed, names, scores, seconds, fingerprint) in enumerate(members))
        kept = (self.members + added)[-max_members:]
        return replace(self, members=kept, runs=self.runs + 1, next_index=self.next_index + len(added))

    def add_list(self, names: Sequence[str], keep: int) -> MemberHistory:
        """This history with the list a run handed on, keeping the ``keep`` newest lists."""
        return replace(self, lists=(self.lists + (tuple(map(str, names)),))[-keep:])

    def check_for(self, feature_names: Sequence[str]) -> None:
        """Raise :class:`HistoryError` when the history shares no feature with the table."""
        if not self.members:
            return
        current = set(map(str, feature_names))
        if not any(current.intersection(m.feature_names) for m in self.members):
            raise HistoryError(f"the member history ({len(self.members)} member(s)) shares no feature name with "
                               f"this table's {len(current)}")


def age_weights(members: Sequence[Member], current_run: int, half_life: float) -> np.ndarray:
    """``2^(-age / half_life)`` per member, age = ``current_run - member.run``; all 1 for an infinite half-life."""
    ages = np.array([current_run - m.run for m in members], dtype=np.float64)
    if math.isinf(half_life):
        return np.ones(len(ages))
    return np.exp2(-ages / half_life)


@dataclass
class CarriedConsensus:
    """The carried members combined over the current table's features.

    Attributes
    ----------
    scores : ndarray of shape (d,)
        What orders the features: the weighted mean rank score (``mean_rank``),
        or the weighted top-k* share (``frequency``).
    mean_rank : ndarray of shape (d,)
        The weighted mean rank score over the members that saw each feature.
    order : ndarray of shape (d,)
        Feature indices of the current table, best first.
    frequency : dict of int to ndarray of shape (d,)
        Per k: the weighted share of the members that saw a feature whose first k include it.
    seen : ndarray of shape (d,)
        How many members saw each feature.
    weights : ndarray of shape (members,)
        Each member's age weight.
    member_orders : list of ndarray
        Each member's order of the current features it saw (indices of the current table).
    """

    scores: np.ndarray
    mean_rank: np.ndarray
    order: np.ndarray
    frequency: dict[int, np.ndarray]
    seen: np.ndarray
    weights: np.ndarray
    member_orders: list[np.ndarray]


def combine_history(history: MemberHistory, feature_names: Sequence[str], half_life: float,
                    k_values: Sequence[int], rule: str = "mean_rank") -> CarriedConsensus:
    """Combine every member of ``history`` over the table's ``feature_names`` (module docstring).

    The current run's members are the history's last run (``history.runs - 1``).
    """
    if rule not in RULES:
        raise ValueError(f"unknown history rule {rule!r}; use {' or '.join(RULES)}")
    if not history.members:
        raise HistoryError("the member history is empty: nothing to combine")
    names = [str(n) for n in feature_names]
    position = {name: j for j, name in enumerate(names)}
    d = len(names)
    weights = age_weights(history.members, history.runs - 1, half_life)
    weighted = np.zeros(d)
    covered = np.zeros(d)
    seen = np.zeros(d, dtype=np.int64)
    counts = {int(k): np.zeros(d) for k in k_values}
    orders = []
    for member, weight in zip(history.members, weights, strict=True):
        columns = np.array([position.get(name, -1) for name in member.feature_names], dtype=np.int64)
        shared = columns >= 0
        if not shared.any():
            orders.append(np.empty(0, dtype=np.int64))
            continue
        at = columns[shared]
        ranked = rank_scores(member.scores[shared])  # re-ranked among the features it shares with the table
        weighted[at] += weight * ranked
        covered[at] += weight
        seen[at] += 1
        order = at[feature_order(ranked)]
        orders.append(order)
        for k, count in counts.items():
            count[order[:k]] += weight
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_rank = np.where(covered > 0, weighted / np.where(covered > 0, covered, 1.0), 0.0)
        frequency = {k: np.where(covered > 0, c / np.where(covered > 0, covered, 1.0), 0.0)
                     for k, c in counts.items()}
    if rule == "mean_rank":
        scores = mean_rank
        order = feature_order(mean_rank)
    else:
        scores = frequency[min(counts)] if counts else mean_rank
        # lexsort: the last key sorts first; the index breaks what both leave tied
        order = np.lexsort((np.arange(d), -mean_rank, -scores))
    return CarriedConsensus(scores, mean_rank, order, frequency, seen, weights, orders)
