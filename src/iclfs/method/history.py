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

from .config import HISTORY_RULES, HistoryConfig
from .consensus import Consensus, fuse_laplacian
from .scores import feature_order, rank_positions
from .stability import mean_pairwise_jaccard



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
    method : str
        The method that scored it (``selection.method``).
    laplacian : ndarray of shape (len(feature_names),) or None
        The Laplacian scores of the table it was trained on (None when not recorded).
    """

    run: int
    index: int
    seed: int
    feature_names: tuple[str, ...]
    scores: np.ndarray = field(repr=False)
    seconds: float = 0.0
    fingerprint: str = ""
    method: str = "iclfs"
    laplacian: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if len(self.feature_names) != len(self.scores):
            raise ValueError(f"member {self.index}: {len(self.feature_names)} feature names but "
                             f"{len(self.scores)} scores")
        if self.laplacian is not None and len(self.laplacian) != len(self.scores):
            raise ValueError(f"member {self.index}: {len(self.feature_names)} feature names but "
                             f"{len(self.laplacian)} Laplacian scores")


@dataclass(frozen=True)
class MemberHistory:
    """The members a data source has carried so far, oldest first.

    Attributes
    ----------
    members : tuple of Member
    runs : int
        Runs that added members so far: the next such run is number ``runs``.
    next_index : int
        Members ever added (those dropped by the cap included): the next member's number.
    data_source : str or None
        The data source the history belongs to.
    version : str or None
        The stored version it was read from (None for a new one).
    read_runs : int
        ``runs`` when it was read: the members of later runs are this run's own,
        the ones a save adds to whatever history it finds stored then.
    problem : str or None
        Why the stored history cannot be used (set by the reader; the run then starts afresh).
    afresh : bool
        The run set the stored history aside: its save starts a new history
        rather than adding to what is stored.
    max_members : int or None
        The cap of the last :meth:`add_run` (a merge keeps it).
    lists : dict of int to tuple of str
        The lists the run that stored the history handed on, by name, at every k
        (what :func:`hold` holds the next run's lists to; empty when not recorded).
    """

    members: tuple[Member, ...] = ()
    runs: int = 0
    next_index: int = 0
    data_source: str | None = None
    version: str | None = None
    read_runs: int = 0
    problem: str | None = None
    afresh: bool = False
    max_members: int | None = None
    lists: dict[int, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def add_run(self, members: Sequence[tuple[int, Sequence[str], np.ndarray, float, str]],
                max_members: int, method: str = "iclfs", laplacian: np.ndarray | None = None) -> MemberHistory:
        """This history with one more run's members, ``(seed, feature names, raw scores, seconds,
        fingerprint)`` each, scored by ``method``, numbered from ``next_index``; only the ``max_members``
        newest are kept. ``laplacian``, the Laplacian scores of the run's table (its members share one
        table), is recorded with each new member.

        A member already carried (the same seed on the same table: a stage run
        of ``ranking`` alone, or a concurrent run that trained the same member)
        is not added twice; when none is new the history is returned unchanged.
        """
        if max_members < 1:
            raise ValueError(f"max_members must be >= 1, got {max_members}")
        carried = {(m.seed, m.fingerprint) for m in self.members}
        new = [(int(seed), names, scores, seconds, str(fingerprint))
               for seed, names, scores, seconds, fingerprint in members
               if (int(seed), str(fingerprint)) not in carried]
        if not new:
            return replace(self, max_members=max_members)
        if laplacian is not None:
            laplacian = np.asarray(laplacian, dtype=np.float64)
        added = tuple(Member(self.runs, self.next_index + i, seed, tuple(map(str, names)), rank_scores(scores),
                             float(seconds), fingerprint, method, laplacian)
                      for i, (seed, names, scores, seconds, fingerprint) in enumerate(new))
        kept = (self.members + added)[-max_members:]
        return replace(self, members=kept, runs=self.runs + 1, next_index=self.next_index + len(added),
                       max_members=max_members)

    @property
    def own(self) -> tuple[Member, ...]:
        """The members added since the history was read."""
        return tuple(m for m in self.members if m.run >= self.read_runs)

    def merged_onto(self, head: MemberHistory) -> MemberHistory:
        """This history's own members added, as one run, to ``head`` (a history another run stored
        after this one was read): no member of either is lost; numbers and ages follow ``head``.
        The cap is this history's (``max_members``); the lists are this run's, the last handed on."""
        own = [(m.seed, m.feature_names, m.scores, m.seconds, m.fingerprint) for m in self.own]
        method = self.own[0].method if self.own else "iclfs"
        laplacian = self.own[0].laplacian if self.own else None  # one run's members share one table
        merged = head.add_run(own, self.max_members or len(head.members) + len(own), method, laplacian)
        return replace(merged, read_runs=head.runs, version=head.version, problem=None, afresh=False,
                       lists=self.lists or head.lists)

    def check_for(self, feature_names: Sequence[str], method: str = "iclfs") -> None:
        """Raise :class:`HistoryError` when the history shares no feature with the table, or holds another
        method's members."""
        if not self.members:
            return
        others = sorted({m.method for m in self.members} - {method})
        if others:
            raise HistoryError(f"the member history holds members of {', '.join(others)}, and this run's "
                               f"selection.method is {method}")
        current = set(map(str, feature_names))
        if not any(current.intersection(m.feature_names) for m in self.members):
            raise HistoryError(f"the member history ({len(self.members)} member(s)) shares no feature name with "
                               f"this table's {len(current)}")


@dataclass(frozen=True)
class Continuation:
    """Where a run stands with its data source's history: what it builds on and its members' seed.

    Attributes
    ----------
    history : MemberHistory
        The history the run's members are added to (empty when it starts afresh or does not carry).
    seed : int
        The seed the run trains from: ``member_seed(seed, history.next_index)``.
    note : str or None
        Why a stored history was not used (the run starts afresh), else None.
    """

    history: MemberHistory
    seed: int
    note: str | None = None


def usable_history(stored: MemberHistory, feature_names: Sequence[str], reset: bool = False,
                   method: str = "iclfs") -> tuple[MemberHistory, str | None]:
    """The history a carrying run builds on, and why the stored one was set aside (None when it was not).

    With ``reset``, a history the reader could not use (``stored.problem``),
    one sharing no feature name with the table or one of another ``method``,
    the run starts afresh: an empty history marked ``afresh``, whose save
    starts a new history.
    """
    fresh = MemberHistory(data_source=stored.data_source, afresh=True)
    if reset:
        return fresh, "history.reset: this run starts the member history afresh"
    if stored.problem is not None:
        return fresh, f"{stored.problem}; this run starts the member history afresh"
    try:
        stored.check_for(feature_names, method)
    except HistoryError as err:
        return fresh, f"{err}; this run starts the member history afresh"
    return stored, None


def continue_history(stored: MemberHistory, feature_names: Sequence[str], seed: int, carry: bool = True,
                     reset: bool = False, method: str = "iclfs") -> Continuation:
    """The history a run builds on and the seed it trains from (module docstring, "Seeds").

    Without ``carry`` the run is one run at ``seed``, as if no history
    existed; otherwise it builds on :func:`usable_history` and its members
    are numbered from that history's ``next_index``.
    """
    if not carry:
        return Continuation(MemberHistory(data_source=stored.data_source), int(seed))
    history, note = usable_history(stored, feature_names, reset, method)
    return Continuation(history, member_seed(seed, history.next_index), note)


def age_weights(members: Sequence[Member], current_run: int, half_life: float) -> np.ndarray:
    """``2^(-age / half_life)`` per member, age = ``current_run - member.run``; all 1 for an infinite half-life."""
    ages = np.array([current_run - m.run for m in members], dtype=np.float64)
    if math.isinf(half_life):
        return np.ones(len(ages))
    return np.exp2(-ages / half_life)


def combine_history(history: MemberHistory, feature_names: Sequence[str], half_life: float,
                    k_values: Sequence[int], rule: str = "mean_rank") -> Consensus:
    """Combine every member of ``history`` over the table's ``feature_names`` (module docstring).

    The current run's members are the history's last run (``history.runs - 1``).

    Returns
    -------
    Consensus
        ``scores``: the weighted mean rank score (``mean_rank``) or the
        weighted top-k* share (``frequency``); ``member_orders``: each member's
        order of the current features it saw; ``frequency`` per k; ``seen``
        and ``weights``.
    """
    if rule not in HISTORY_RULES:
        raise ValueError(f"unknown history rule {rule!r}; use {' or '.join(HISTORY_RULES)}")
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
    agreement = {k: mean_pairwise_jaccard([o[:k] for o in orders]) for k in counts}
    return Consensus(scores=scores, order=order, member_orders=orders, frequency=frequency,
                     member_jaccard=agreement, seen=seen, weights=weights)


def carry(history: MemberHistory, members: Sequence[tuple[int, Sequence[str], np.ndarray, float, str]],
          feature_names: Sequence[str], config: HistoryConfig, k_values: Sequence[int],
          laplacian: np.ndarray | None = None, method: str = "iclfs") -> tuple[MemberHistory, Consensus]:
    """A carrying run's step: add its ``members`` to ``history`` and combine everything kept.

    ``members`` as for :meth:`MemberHistory.add_run`; ``laplacian``, this run's
    Laplacian scores, is stored with them. For ICLFS with
    ``history.laplacian_weight`` w > 0 and two members or more, the carried
    order fuses in the order of the Laplacian scores LGRC gates by
    (:func:`gate_laplacian`) by ``history.laplacian_fusion``
    (:func:`~iclfs.method.consensus.fuse_laplacian`; ``rank_mean``: ``(1 - w)
    r_carried + w r_laplacian``, as for one run's consensus); another method's
    members are combined alone, as they are selected without LGRC.
    """
    carried = history.add_run(members, config.max_members, method, laplacian)
    combined = combine_history(carried, feature_names, config.half_life, k_values, config.rule)
    if method == "iclfs" and laplacian is not None:
        combined.gate = gate_laplacian(carried, laplacian, feature_names, config)
    if method == "iclfs" and len(carried.members) > 1 and config.laplacian_weight > 0:
        if combined.gate is None:
            raise ValueError("history.laplacian_weight > 0 needs the Laplacian scores")
        combined.scores = fuse_laplacian(combined.scores, combined.gate, config.laplacian_weight,
                                         config.laplacian_fusion)
        combined.order = feature_order(combined.scores)
    return carried, combined


def fusion_label(config: HistoryConfig) -> str:
    """How a carrying ICLFS run's order fuses in the Laplacian rank, as labels name it (", Laplacian weight
    0.5, reciprocal rank"); empty when it does not."""
    if config.laplacian_weight == 0:
        return ""
    return f", Laplacian weight {config.laplacian_weight:g}" + (
        ", reciprocal rank" if config.laplacian_fusion == "reciprocal_rank" else "")


def gate_laplacian(history: MemberHistory, laplacian: np.ndarray, feature_names: Sequence[str],
                   config: HistoryConfig) -> np.ndarray:
    """The Laplacian scores a carrying run's LGRC gates by: this run's (``history.laplacian: run``) or
    :func:`carried_laplacian`, kept ``inf`` where this run's is (a feature without variance on this table
    stays last, whatever it was before).

    Returns
    -------
    ndarray of shape (len(feature_names),)
    """
    gate = np.asarray(laplacian, dtype=np.float64)
    if config.laplacian == "carried":
        gate = np.where(np.isfinite(gate), carried_laplacian(history, feature_names, config.half_life), np.inf)
    return gate


def carried_laplacian(history: MemberHistory, feature_names: Sequence[str], half_life: float) -> np.ndarray:
    """Per feature of the table, the age-weighted mean of the Laplacian scores of the members that saw it.

    The Laplacian score of a feature moves with the samples a refresh draws, and
    LGRC's gate cuts at a quantile of them, so features near the cut flip in and
    out from run to run; the mean over the members' tables holds them still as
    the mean rank does the order. A feature no member with Laplacian scores saw is
    ``inf`` (it ranks last and the gate drops it first). Non-finite member scores
    are left out of the mean.

    Returns
    -------
    ndarray of shape (len(feature_names),)
    """
    names = [str(n) for n in feature_names]
    position = {name: j for j, name in enumerate(names)}
    weights = age_weights(history.members, history.runs - 1, half_life)
    total = np.zeros(len(names))
    covered = np.zeros(len(names))
    for member, weight in zip(history.members, weights, strict=True):
        if member.laplacian is None:
            continue
        columns = np.array([position.get(name, -1) for name in member.feature_names], dtype=np.int64)
        usable = (columns >= 0) & np.isfinite(member.laplacian)
        total[columns[usable]] += weight * member.laplacian[usable]
        covered[columns[usable]] += weight
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(covered > 0, total / np.where(covered > 0, covered, 1.0), np.inf)


def hold(previous: Sequence[str] | None, wider: np.ndarray, feature_names: Sequence[str], k: int,
         admit: float = math.inf) -> np.ndarray:
    """The k features a run hands on when its data source's last list at k was ``previous``.

    A list that holds still keeps a feature while it stays near the top, rather
    than swapping it whenever a refresh nudges it a few places down: a feature
    of the last list stays on while it is in ``wider``, this run's selection of
    ``history.hold`` x k features; the places of those that left go to the best
    features of ``wider`` not on the last list. Features of the last list no
    longer in the table are dropped (by name).

    The band has a second edge, so that a list does not keep an early chance
    choice against the consensus's clear ones: a feature among the first
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
    admit : float >= 1, default=inf
        ``history.admit``; infinite: no feature is forced in.

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
