"""The members combined into one order: a run's own, and those its data source keeps (docs/members.md).

A **member** is one trained network's score of every feature (or one other
method's run). A run trains ``members.per_run`` of them; with
``members.carry`` its data source keeps them in its **member history**, and
each run orders the features by every member kept. There is one rule: the
members' mean rank.

**A run's own members** (:func:`combine_run`) all saw every feature of the
table: the order is 1 minus their mean rank, scaled to [0, 1]. One member is
the paper's single run: its own score orders the features.

**Kept members** (:func:`combine_kept`) are aligned by feature name, never by
column position: each member's scores are re-ranked among the features it
shares with the current table, a feature no longer in the table is dropped,
and a new feature is ordered by the members that saw it (at first, this
run's alone). Each member weighs ``2^(-age / members.half_life)``, its age
counted in runs. With two members or more kept, the order fuses in the rank
of the members' mean Laplacian scores (:func:`carried_laplacian`) by
reciprocal rank fusion with weight ``members.laplacian_weight``
(:func:`fuse_laplacian`), and LGRC gates by those mean scores.

**Seeds.** A history counts every member ever added; member i gets
:func:`member_seed` ``(seed, i)``, so kept members are independent draws, and
replaying the same tables from an empty history gives the same lists.

Everything here is numpy only; the Kedro dataset that stores a history is
:class:`iclfs.io.datasets.MemberHistoryDataset`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ._config import MembersConfig
from ._scores import feature_order, rank_positions, rank_score
from ._stability import mean_pairwise_jaccard

__all__ = ["Continuation", "HistoryError", "Member", "MemberHistory", "Ranking", "carried_laplacian",
           "check_record", "combine_kept", "combine_run", "fuse_laplacian", "member_seed", "rank", "resume",
           "start"]


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
    """One member: the features it scored, by name, and its score of each.

    Attributes
    ----------
    seed : int
    feature_names : tuple of str
    scores : ndarray of shape (len(feature_names),)
        Higher is better: the raw scores of a member just trained; rank scores in [0, 1] (1 = best) once
        a history keeps it.
    seconds : float
        Its training and scoring time.
    fingerprint : str
        The fingerprint of the table it was trained on.
    method : str
        The method that scored it (``selection.method``).
    laplacian : ndarray of shape (len(feature_names),) or None
        The Laplacian scores of the table it was trained on (None when not recorded).
    run : int
        The run of the history that kept it (its age is the current run's number minus this).
    index : int
        Its number among every member ever kept by the history (its seed's).
    version : str or None
        The run (its artifacts' version) that trained it; None when unknown.
    """

    seed: int
    feature_names: tuple[str, ...]
    scores: np.ndarray = field(repr=False)
    seconds: float = 0.0
    fingerprint: str = ""
    method: str = "iclfs"
    laplacian: np.ndarray | None = field(default=None, repr=False)
    run: int = 0
    index: int = 0
    version: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "feature_names", tuple(map(str, self.feature_names)))
        if len(self.feature_names) != len(self.scores):
            raise ValueError(f"member {self.index}: {len(self.feature_names)} feature names but "
                             f"{len(self.scores)} scores")
        if self.laplacian is not None and len(self.laplacian) != len(self.scores):
            raise ValueError(f"member {self.index}: {len(self.feature_names)} feature names but "
                             f"{len(self.laplacian)} Laplacian scores")


@dataclass(frozen=True)
class MemberHistory:
    """The members a data source keeps, oldest first.

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
    kept : int or None
        The cap of the last :meth:`add_run` (a merge keeps it).
    notes : tuple of str
        What the reader found and set aside (members of runs that did not finish, a damaged pointer), to say once.
    method : str
        The method whose members it keeps: a data source keeps one history per method.
    """

    members: tuple[Member, ...] = ()
    runs: int = 0
    next_index: int = 0
    data_source: str | None = None
    version: str | None = None
    read_runs: int = 0
    problem: str | None = None
    afresh: bool = False
    kept: int | None = None
    notes: tuple[str, ...] = ()
    method: str = "iclfs"

    def add_run(self, members: Sequence[Member], kept: int) -> MemberHistory:
        """This history with one more run's ``members`` (raw scores), numbered from ``next_index``; only the
        ``kept`` newest are kept.

        A member already kept (the same seed on the same table: a stage run
        of ``ranking`` alone, or a concurrent run that trained the same member)
        is not added twice; when none is new the history is returned unchanged.
        """
        if kept < 1:
            raise ValueError(f"members.kept must be >= 1, got {kept}")
        carried = {(m.seed, m.fingerprint) for m in self.members}
        new = [m for m in members if (int(m.seed), str(m.fingerprint)) not in carried]
        if not new:
            return replace(self, kept=kept)
        added = tuple(replace(m, seed=int(m.seed), scores=rank_scores(m.scores), seconds=float(m.seconds),
                              fingerprint=str(m.fingerprint),
                              laplacian=None if m.laplacian is None else np.asarray(m.laplacian, dtype=np.float64),
                              run=self.runs, index=self.next_index + i)
                      for i, m in enumerate(new))
        return replace(self, members=(self.members + added)[-kept:], runs=self.runs + 1,
                       next_index=self.next_index + len(added), kept=kept)

    @property
    def own(self) -> tuple[Member, ...]:
        """The members added since the history was read."""
        return tuple(m for m in self.members if m.run >= self.read_runs)

    def merged_onto(self, head: MemberHistory) -> MemberHistory:
        """This history's own members added, as one run, to ``head`` (a history another run stored
        after this one was read): no member of either is lost; numbers and ages follow ``head``. The cap is this
        history's."""
        # this run's members keep the numbers their seeds came from when those are past the head's (a run that
        # reserved them while another ran); add_run ranks the scores again: rank scores of rank scores are the
        # same values, bit for bit
        first = min((m.index for m in self.own), default=head.next_index)
        head = replace(head, next_index=max(head.next_index, first))
        merged = head.add_run(self.own, self.kept or len(head.members) + len(self.own))
        return replace(merged, read_runs=head.runs, version=head.version, problem=None, afresh=False)

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
    history : MemberHistory or None
        The history the run's members are added to (empty when it starts afresh); None when it does not carry.
    seed : int
        The seed the run trains from: ``member_seed(seed, history.next_index)``.
    note : str or None
        Why a stored history was not used (the run starts afresh), or what of it was passed over; else None.
    """

    history: MemberHistory | None
    seed: int
    note: str | None = None

    @property
    def holds(self) -> bool:
        """Whether the run's lists are held to the last lists: it carries members onto a kept history."""
        return self.history is not None and bool(self.history.members)

    def record(self) -> dict:
        """The decision as plain values (the ``history_start`` dataset), from which :func:`resume` rebuilds it.

        Returns
        -------
        dict
            ``carry`` (the run builds on a history), ``seed``, ``next_index`` (its first member's number),
            ``version`` (the stored history built on, or set aside), ``afresh`` (set aside: the run starts a
            new history), ``used`` (the numbers of the stored members it combines), ``members`` and ``runs``
            (of that history), ``note`` and ``holds``.
        """
        history = self.history
        return {"carry": history is not None, "seed": int(self.seed),
                "next_index": 0 if history is None else int(history.next_index),
                "version": None if history is None else history.version,
                "afresh": False if history is None else bool(history.afresh),
                "used": [] if history is None else [int(m.index) for m in history.members],
                "members": 0 if history is None else len(history.members),
                "runs": 0 if history is None else int(history.runs),
                "note": self.note, "holds": self.holds}


def usable_history(stored: MemberHistory, feature_names: Sequence[str], reset: bool = False,
                   method: str = "iclfs") -> tuple[MemberHistory, str | None]:
    """The history a carrying run builds on, and why the stored one was set aside, or what of it was passed over
    (its reader's notes: a damaged version, members of runs that did not complete); None when neither.

    With ``reset``, a history the reader could not use (``stored.problem``),
    one sharing no feature name with the table or one of another ``method``,
    the run starts afresh: an empty history marked ``afresh``, whose save
    starts a new history.
    """
    # set aside: its save starts anew, keeping only what others store after this run read
    fresh = MemberHistory(data_source=stored.data_source, afresh=True, method=method, version=stored.version)
    if reset:
        return fresh, "members.reset: this run starts the member history afresh"
    if stored.problem is not None:
        return fresh, f"{stored.problem}; this run starts the member history afresh"
    try:
        stored.check_for(feature_names, method)
    except HistoryError as err:
        return fresh, f"{err}; this run starts the member history afresh"
    return stored, "; ".join(stored.notes) or None


def start(stored: MemberHistory | None, feature_names: Sequence[str], seed: int, config: MembersConfig,
          method: str = "iclfs") -> Continuation:
    """The history a run builds on and the seed it trains from (module docstring, "Seeds").

    Without ``members.carry`` (or without a ``stored`` history) the run is
    one run at ``seed``, as if no history existed; otherwise it builds on
    :func:`usable_history` and its members are numbered from that history's
    ``next_index``.
    """
    if not config.carry or stored is None:
        return Continuation(None, int(seed))
    stored = stored.of(method) if hasattr(stored, "of") else stored  # a data source keeps one history per method
    history, note = usable_history(replace(stored, method=method), feature_names, config.reset, method)
    return Continuation(history, member_seed(seed, history.next_index), note)


def check_record(record: dict) -> dict:
    """``record`` (a run's ``history_start``), refused in one line when an earlier version wrote it without the
    decision's every field."""
    missing = sorted({"carry", "seed", "next_index", "version", "afresh", "used", "holds"} - set(record))
    if missing:
        raise HistoryError(f"history_start lacks {', '.join(missing)}: an earlier version of iclfs wrote it. Run "
                           "the training stage again (or kedro run --pipelines select)")
    return record


def resume(record: dict, stored, method: str = "iclfs") -> Continuation:
    """The :class:`Continuation` a ``record`` (:meth:`Continuation.record`) names, its history read as it was.

    ``stored`` reads a history's stored version: ``stored.at(method, version)`` (the catalog's
    :class:`~iclfs.io.datasets.MemberHistories`). Nothing is decided again: the version, the members used and the
    next member number are the record's, so a history another run stores meanwhile changes nothing.
    """
    check_record(record)
    seed, note = int(record["seed"]), record.get("note")
    if not record.get("carry"):
        return Continuation(None, seed, note)
    base = stored.at(method, None)  # the data source's empty history: its name and method
    if record.get("afresh"):
        return Continuation(replace(base, afresh=True, version=record.get("version")), seed, note)
    history = stored.at(method, record["version"]) if record.get("version") is not None else base
    used = set(record.get("used", ()))
    missing = used - {m.index for m in history.members}
    if missing:
        raise HistoryError(f"the member history version {record.get('version')} no longer holds member(s) "
                           f"{sorted(missing)} that this run started from; run the training stage again")
    history = replace(history, members=tuple(m for m in history.members if m.index in used), notes=(),
                      next_index=int(record["next_index"]), method=method)
    return Continuation(history, seed, note)


def age_weights(members: Sequence[Member], current_run: int, half_life: float) -> np.ndarray:
    """``2^(-age / half_life)`` per member, age = ``current_run - member.run``; all 1 for an infinite half-life."""
    ages = np.array([current_run - m.run for m in members], dtype=np.float64)
    if math.isinf(half_life):
        return np.ones(len(ages))
    return np.exp2(-ages / half_life)


RECIPROCAL_OFFSET = 60  # Cormack, Clarke and Buettcher (SIGIR 2009): reciprocal rank fusion's constant


def fuse_laplacian(scores: np.ndarray, laplacian_scores: np.ndarray, weight: float) -> np.ndarray:
    """Scores (higher is better) that fuse the order of ``scores`` with that of the Laplacian score.

    Reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009):
    ``(1 - weight) / (60 + p) + weight / (60 + p_laplacian)``, with p a
    feature's position (1 = first) in each order. Where the two orders' heads
    differ, it puts the heads of both first (the refresh study's fifth round,
    benchmarks/results/refresh_study_fusion.md). A lower Laplacian score is
    better and a non-finite one ranks last. ``weight = 0`` returns ``scores``
    unchanged.

    Returns
    -------
    ndarray of shape (d,)
    """
    if weight == 0:
        return np.asarray(scores, dtype=np.float64)
    ls = np.asarray(laplacian_scores, dtype=np.float64)
    ls = -np.where(np.isfinite(ls), ls, np.inf)  # higher is better; a non-finite score ranks last
    own = rank_positions(feature_order(scores))
    laplacian = rank_positions(feature_order(ls))
    return (1.0 - weight) / (RECIPROCAL_OFFSET + own) + weight / (RECIPROCAL_OFFSET + laplacian)


def member_orders(member_scores: np.ndarray) -> np.ndarray:
    """Each member's order, (members, d) feature indices best first."""
    return np.array([feature_order(s) for s in np.atleast_2d(member_scores)], dtype=np.int64)


def selection_frequency(orders: np.ndarray, k: int, weights: np.ndarray | None = None) -> np.ndarray:
    """(d,) share of the members whose first k include each feature (weighted, with ``weights``)."""
    orders = np.atleast_2d(orders)
    weights = np.ones(len(orders)) if weights is None else np.asarray(weights, dtype=np.float64)
    counts = np.zeros(orders.shape[1])
    for order, weight in zip(orders, weights, strict=True):
        counts[order[:k]] += weight
    return counts / weights.sum()


@dataclass
class Ranking:
    """The members combined into one order.

    Attributes
    ----------
    scores : ndarray of shape (d,)
        The score that orders the features (higher is better): one member's
        ``ranking.score``, or the members' combination.
    order : ndarray of shape (d,)
        Feature indices, best first (ties by index).
    member_orders : ndarray of shape (members, d), or list of arrays
        Each member's order, best first; kept members order only the current features they saw.
    selection_frequency : dict of int to ndarray of shape (d,)
        Per k: the (age-weighted) share of the members whose first k include each feature.
    member_jaccard : dict of int to float or None
        Per k: the mean pairwise Jaccard index of the members' first k (None with one member).
    seen : ndarray of shape (d,) or None
        Kept members only: how many members saw each feature.
    weights : ndarray of shape (members,) or None
        Kept members only: each member's age weight.
    gate : ndarray of shape (d,) or None
        The Laplacian scores LGRC gates by: kept ICLFS members' mean (:func:`carried_laplacian`), else the
        run's own (set by :func:`rank`; None for a ranking made without it).
    members : tuple of Member
        The members combined (kept members: the history's; else this run's).
    """

    scores: np.ndarray
    order: np.ndarray
    member_orders: np.ndarray | list[np.ndarray]
    selection_frequency: dict[int, np.ndarray]
    member_jaccard: dict[int, float | None]
    seen: np.ndarray | None = None
    weights: np.ndarray | None = None
    gate: np.ndarray | None = None
    members: tuple[Member, ...] = ()


def combine_run(member_scores: np.ndarray, k_values: Sequence[int]) -> Ranking:
    """A run's own members (members, d), all on every feature, combined into one order.

    With one member the order is that member's own score (the paper's run;
    with feature blocks, the rank within its block); else 1 minus the mean
    rank scaled to [0, 1] (1 = ranked first by every member).
    """
    member_scores = np.atleast_2d(np.asarray(member_scores, dtype=np.float64))
    scores = member_scores[0].copy() if member_scores.shape[0] == 1 else rank_score(member_scores)
    orders = member_orders(member_scores)
    return Ranking(
        scores=scores,
        order=feature_order(scores),
        member_orders=orders,
        selection_frequency={k: selection_frequency(orders, k) for k in k_values},
        member_jaccard={k: mean_pairwise_jaccard([order[:k] for order in orders]) for k in k_values},
    )


def combine_kept(history: MemberHistory, feature_names: Sequence[str], half_life: float,
                 k_values: Sequence[int]) -> Ranking:
    """Every member of ``history`` combined over the table's ``feature_names`` (module docstring).

    The current run's members are the history's last run (``history.runs - 1``).

    Returns
    -------
    Ranking
        ``scores``: the weighted mean rank score; ``member_orders``: each
        member's order of the current features it saw; ``selection_frequency`` per k;
        ``seen`` and ``weights``.
    """
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
    agreement = {k: mean_pairwise_jaccard([o[:k] for o in orders]) for k in counts}
    return Ranking(scores=mean_rank, order=feature_order(mean_rank), member_orders=orders,
                   selection_frequency=frequency, member_jaccard=agreement, seen=seen, weights=weights,
                   members=history.members)


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


def rank(new: Sequence[Member], feature_names: Sequence[str], laplacian: np.ndarray, config: MembersConfig,
         k_values: Sequence[int], history: MemberHistory | None = None,
         selections: dict[int, np.ndarray] | None = None, fingerprint: str = ""
         ) -> tuple[Ranking, MemberHistory | None]:
    """The ranking step: this run's ``new`` members, and the members kept, combined into one order.

    Parameters
    ----------
    new : sequence of Member
        This run's members, their raw scores of the table's features.
    feature_names : sequence of str
        The table's features, in column order.
    laplacian : ndarray of shape (d,)
        This run's Laplacian scores (stored with its members; the gate of kept ICLFS members).
    config : MembersConfig
    k_values : sequence of int
    history : MemberHistory or None
        What the run builds on (:func:`start`); None when it does not carry.
    selections : dict of int to ndarray, optional
        Another method's own selection at each k (MCFS, CAE and LS-CAE fit one model per k): a run of it
        alone counts them as its members' first k.
    fingerprint : str
        The table's fingerprint: with ``laplacian``, it is kept with each new member.

    Returns
    -------
    ranking : Ranking
        Without a history, or on a history of this run alone, this run's members' order (a carrying run's
        first list is one run's); else every kept member's, fused with the Laplacian rank for ICLFS.
        Its ``gate`` is what LGRC gates by: kept ICLFS members' mean Laplacian scores, else ``laplacian``.
    history : MemberHistory or None
        ``history`` with this run's members; None without one.
    """
    method = new[0].method if new else "iclfs"
    laplacian = np.asarray(laplacian, dtype=np.float64)
    new = [replace(m, fingerprint=fingerprint, laplacian=laplacian) for m in new]
    ranking = combine_run(np.array([m.scores for m in new]), k_values)
    ranking.members = tuple(new)
    if selections:
        d = len(feature_names)
        own = {k: np.isin(np.arange(d), chosen).astype(float) for k, chosen in selections.items()
               if k in ranking.selection_frequency}
        ranking.selection_frequency = {**ranking.selection_frequency, **own}
    kept = None if history is None else history.add_run(new, config.kept)
    first = history is None or not history.members
    if not first:
        ranking = combine_kept(kept, feature_names, config.half_life, k_values)
    if kept is not None and method == "iclfs":
        # A history of this run alone gates by this run's scores exactly, as one run without a history does.
        gate = laplacian if first else carried_laplacian(kept, feature_names, config.half_life)
        ranking.gate = np.where(np.isfinite(laplacian), gate, np.inf)
        if not first and len(kept.members) > 1 and config.laplacian_weight > 0:
            ranking.scores = fuse_laplacian(ranking.scores, ranking.gate, config.laplacian_weight)
            ranking.order = feature_order(ranking.scores)
    if ranking.gate is None:
        ranking.gate = laplacian  # no kept ICLFS members to give their mean: the run's own scores
    return ranking, kept


def fusion_label(config: MembersConfig) -> str:
    """How kept ICLFS members' order fuses in the Laplacian rank, as labels name it (", Laplacian weight 0.5");
    empty when it does not."""
    return "" if config.laplacian_weight == 0 else f", Laplacian weight {config.laplacian_weight:g}"
