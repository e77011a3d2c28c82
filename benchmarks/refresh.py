"""The refresh simulation: a scheduled ``select`` on a data source whose samples change every night.

    python -m benchmarks.refresh train --datasets lung_small ORL warpPIE10P --refreshes 20
    python -m benchmarks.refresh train --datasets drift --refreshes 45
    python -m benchmarks.refresh study       # the carried consensus's settings, by the rule below
    python -m benchmarks.refresh study --round 2   # the hold and the Laplacian, on the first round's winner
    python -m benchmarks.refresh study --round 3   # the band's entry edge (admit), on the second round's winner
    python -m benchmarks.refresh study --round 4   # the Laplacian weight, on the third round's winner
    python -m benchmarks.refresh study --round 5   # how the Laplacian rank is fused in, on four validation sets
    python -m benchmarks.refresh report      # every method on every dataset, the targets
    python -m benchmarks.refresh heads       # where the members' and the Laplacian's orders part (round 5)

**Train** (the expensive part, once). For each deployment (its own seed) and
refresh r, a fresh random 90 % of the samples is drawn, and the refresh's one
ICLFS run (the default settings) is trained on it with the seed a carried
history gives its member number r (:func:`iclfs.method._ranking.member_seed`).
That run is both the method "one run per refresh" and the carried
consensus's new member, so it is never trained twice. Its scores, samples,
seed and time go to one file per dataset and deployment, refresh by refresh,
so a killed run resumes where it stopped.

**Lists.** At every refresh every method hands on its list at every k of the
grid, selected from that refresh's table: one run (its own order through
LGRC on the refresh's Laplacian scores), the carried consensus (every member
kept, combined by :func:`iclfs.method._ranking.combine_kept`, then LGRC as
for one run), the Laplacian score, and NDFS given the number of classes and
seeded by the deployment. Per refresh and method a cell records: the
Jaccard index and Nogueira's Φ of the k = 50 list against the previous
refresh's, the same between the two deployments' lists at that refresh, and
the list's k-means accuracy on that refresh's table (method.md §8: the best
k's mean over 20 runs).

**The drift case.** A synthetic table (the embedded default's generator, 200
x 400, 30 informative features) whose informative features change at refresh
10 (a second table with the same feature names, drawn from another seed). The
carried list passes when at least half the new informative features are in
its first 50 within two half-lives of the change: at some refresh 10 + t,
t <= 2 half-lives.

**The study** (its rule fixed before any carried list was computed). The
candidates are every combination of the rule (``mean_rank``, ``frequency``),
the half-life in refreshes (4, 8, 16, infinite) and the cap on the members
kept (16, 64). They are judged on the validation sets simulated (lung_small,
ORL and madelon) and the drift case:

1. Only a candidate that passes the drift case in both deployments can win.
2. On each validation set a candidate earns a point for each of:
   *steadiness*, the mean over both deployments and the refreshes from the
   fifth on of the Jaccard@50 with the previous list is at least 0.9;
   *agreement*, the Jaccard@50 between the two deployments' last lists is at
   least 0.4; *accuracy*, the last list's accuracy (mean of the two
   deployments) is at or above the mean over refreshes and deployments of
   one run's.
3. The most points wins; a tie goes to the higher mean over the validation
   sets of the deployments' last agreement, then to the shorter half-life,
   then to the smaller cap, then to ``mean_rank``.
4. Carrying is on by default in ``select`` when the winner earns the accuracy
   point on at least two of the three validation sets and its steadiness is
   above one run's on all three.

**The study's second round** (``study --round 2``; its rule fixed before any
of its lists was computed). The first round's winner (the ``history``
defaults) missed the steadiness point on every validation set, and its
carried order alone was measured no steadier, so the churn is in the lists,
not only in the order. The second round's candidates are that winner with
every combination of the hold (:func:`iclfs.method.history.hold`: a feature
of the last list stays while it is among the first ``hold`` x k features
this run would select; 1, 1.5, 2 and 3, where 1 is no hold) and the
Laplacian scores LGRC gates by (``run``: this run's table's, as one run;
``carried``: their age-weighted mean over the members,
:func:`iclfs.method.history.carried_laplacian`). They are judged by rules 1
and 2 above; the most points wins, a tie goes to the higher mean agreement,
then to the smaller hold, then to ``run``. The winner's hold and Laplacian
become the ``history`` defaults when it earns more points than the first
round's winner and the accuracy point on at least two validation sets.

**The study's third round** (``study --round 3``; its rule fixed before any
of its lists was computed). The second round's winner (hold 3, carried
Laplacian: the ``history`` defaults) holds its lists still but agrees less
between deployments than no hold did (0.32 against 0.41 on the median
reported dataset): a feature that entered an early list, from one or two
members, stays while it is among the first 3k, so the list keeps early
chance choices that the growing consensus has since ranked below others. A
band with two edges lets the consensus's clear choices in: a feature among
the first ceil(k / ``admit``) of this run's selection always enters the list,
and the held features this run ranks lowest make way
(:func:`iclfs.method.history.hold`; ``admit`` infinite: no forced entry, the
second round's hold). The candidates are the second round's winner's rule,
half-life, cap and Laplacian with every combination of hold (2, 3) and admit
(2, 3, infinite). They are judged by rules 1 and 2 above; the most points
wins, a tie goes to the higher mean agreement, then to the larger admit,
then to the smaller hold. The winner's hold and admit become the
``history`` defaults when its admit is finite, it earns at least the points
of the second round's winner (hold 3, admit infinite, computed again in this
round), a higher mean agreement, and the accuracy point on at least two
validation sets.

**The study's fourth round** (``study --round 4``; its rule fixed before any
of its lists was computed). The third round's winner (the ``history``
defaults) holds its lists still (steadiness 0.91-0.95 on the validation
sets) but earns the agreement point on ORL alone (0.37 / 0.61 / 0.28 on
lung_small / ORL / madelon): after 10-20 members the mean rank still carries
much of each member's seed. The Laplacian score is a function of the table
alone, and two deployments' Laplacian lists agree far more (0.64 / 0.85 /
0.64 on the same sets, `refresh.md`). The fourth round's candidates are the
third round's winner with the rank of the Laplacian scores its gate uses
(``history.laplacian``: the members' carried mean) fused into the carried
order with the weight ``members.laplacian_weight`` w, ``(1 - w) r_carried +
w r_laplacian`` (:func:`iclfs.method._members.carry`), for w in 0, 0.1, 0.25
and 0.5 (0: the third round's winner, computed again). They are judged by
rules 1 and 2 above; the most points wins, a tie goes to the higher mean
agreement, then to the smaller weight. The winner's weight becomes the
``history`` default when it is above 0, the winner earns at least the points
of weight 0, a higher mean agreement, and the accuracy point on at least two
validation sets.

**The study's fifth round** (``study --round 5``; its rule fixed before any
of its lists was computed). The fourth round's weight (0.25, the
``history`` default) cost agreement on a reported set, Prostate_GE: two
deployments' last lists shared 0.06 of their first 50, against 0.39 with
weight 0. A look at the carried orders there (weight 0, last refresh)
shows why: the members' first 50 and the carried Laplacian's first 50
share 2 features, and the rank mean of two orders whose heads differ puts
first the features both place fairly well, a crowded middle that small
changes reorder (the fused orders' first 50 agree 0.04 between the
deployments, the members' 0.45, the Laplacian's 0.92). The same look at
the validation sets finds heads sharing 5-6 features on lung_small, 0 on
ORL, 0-1 on Isolet, 23-25 on madelon (``heads`` writes these measures to
``results/refresh_heads.md``); the members' first 50 agree 0.35 on
lung_small, 0.49 on ORL, 0.18 on Isolet, 0.30 on madelon. Reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR
2009; ``history.laplacian_fusion: reciprocal_rank``,
:func:`iclfs.method._ranking.fuse_laplacian`) puts the heads of both
orders first instead. The fifth round's candidates are the fourth round's
winner (the ``history`` defaults) with ``laplacian_fusion`` and
``laplacian_weight`` w in: ``rank_mean`` with w 0 and 0.25 (the
defaults), ``reciprocal_rank`` with w 0.25 and 0.5. They are judged on four
validation sets, Isolet added to lung_small, ORL and madelon (10 refreshes
x 2 deployments, trained and committed before this rule), and the drift
case, by rules 1 and 2 above; the most points wins, a tie goes to the
higher mean agreement over the four, then to ``rank_mean``, then to the
smaller weight. The winner's fusion and weight become the ``history``
defaults when they differ from the defaults, and the winner earns at least
the points of the defaults (computed again in this round), a higher mean
agreement, and the accuracy point on at least three of the four validation
sets.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from benchmarks._refreshes import KEEP, refresh_samples, refresh_table
from iclfs.baselines._graph import ndfs_scores
from iclfs.evaluation._benchmark import slug
from iclfs.evaluation._protocol import best_k, evaluate_selections
from iclfs.io._synthetic import make_synthetic
from iclfs.io._tables import find_dataset, read_feature_table
from iclfs.chain import k_values_for
from iclfs.method._config import MembersConfig, RuntimeConfig, SelectionConfig, TrainingConfig, ViewConfig
from iclfs.method._lgrc import ADMIT, HOLD, held_selections, select_every_k
from iclfs.method._ranking import (
    Member,
    MemberHistory,
    carried_laplacian,
    combine_kept,
    fuse_laplacian,
    member_seed,
    rank,
)
from iclfs.method._laplacian import laplacian_scores
from iclfs.method._members import train_members
from iclfs.method._preprocessing import FeatureTable, PreparedData, invert, prepare
from iclfs.method._scores import feature_order, rank_score
from iclfs.method._stability import jaccard, nogueira_of

HERE = Path(__file__).resolve().parent
STORE = "data/08_reporting/benchmark/refresh"  # the members trained here
PUBLISHED = HERE / "results" / "refresh"  # the published members, the cells and the report beside them
DATA_DIRS = ("../shared/datasets", "../shared/validation")
DRIFT = "drift"  # the synthetic drift case: its informative features change at DRIFT_AT
DRIFT_AT = 10
DEPLOYMENTS = (42, 43)
VALIDATION = ("lung_small", "ORL", "madelon")  # the first four rounds'
VALIDATION_FIFTH = (*VALIDATION, "Isolet")
REPORTED = ("lung_small", "ORL", "warpPIE10P", "Prostate_GE", "ALLAML", "madelon")
K = 50  # the list the stability targets compare
STEADY_FROM = 5  # refreshes counted from 1: steadiness from the fifth refresh on
ONE = "ICLFS, one run per refresh"
MEMBERS = "the members' mean rank alone"  # every member so far, no LGRC, hold or Laplacian: what the members agree on


@dataclass(frozen=True)
class Candidate:
    """Settings of the carried consensus: the study's own options (the product keeps the winners)."""

    rule: str
    half_life: float
    max_members: int
    hold: float = 1.0
    laplacian: str = "run"
    admit: float = math.inf
    laplacian_weight: float = 0.0
    laplacian_fusion: str = "rank_mean"

    @property
    def name(self) -> str:
        life = "inf" if math.isinf(self.half_life) else f"{self.half_life:g}"
        extra = (f", hold {self.hold:g}" if self.hold > 1 else "") + (
            ", carried Laplacian" if self.laplacian == "carried" else "") + (
            f", admit {self.admit:g}" if math.isfinite(self.admit) else "")
        if self.laplacian_weight:
            extra += f", Laplacian weight {self.laplacian_weight:g}" + (
                ", reciprocal rank" if self.laplacian_fusion == "reciprocal_rank" else "")
        return f"carried ({self.rule}, half-life {life}, cap {self.max_members}{extra})"


#: The product's carried consensus, as the study's five rounds left it (``members`` section and iclfs.method).
PRODUCT = Candidate("mean_rank", MembersConfig().half_life, MembersConfig().kept, HOLD, "carried", ADMIT,
                    MembersConfig().laplacian_weight, "reciprocal_rank")
#: Each round's defaults, the winners of the rounds before it.
ROUND_DEFAULTS = {
    2: Candidate("mean_rank", math.inf, 64),
    3: Candidate("mean_rank", math.inf, 64, 3.0, "carried"),
    4: Candidate("mean_rank", math.inf, 64, 3.0, "carried", 2.0),
    5: Candidate("mean_rank", math.inf, 64, 3.0, "carried", 2.0, 0.25, "rank_mean"),
}


def rank_mean_fusion(scores: np.ndarray, laplacian: np.ndarray, weight: float) -> np.ndarray:
    """The fusion the fifth round set aside: ``(1 - weight)`` times the rank score of ``scores`` plus ``weight``
    times that of the Laplacian score (lower is better; a non-finite one ranks last)."""
    ls = -np.where(np.isfinite(laplacian), laplacian, np.inf)
    return (1.0 - weight) * rank_score(scores) + weight * rank_score(ls)


def carry_candidate(history: MemberHistory, member: Member, names: Sequence[str], candidate: Candidate,
                    grid: Sequence[int], laplacian: np.ndarray) -> tuple[MemberHistory, np.ndarray, np.ndarray]:
    """A carrying run's ranking step under ``candidate``: ``history`` with ``member``, the order and the
    Laplacian scores LGRC gates by. The product's parts where the candidate is the product's
    (:func:`~iclfs.method._ranking.rank`); the study's own alternatives beside them."""
    kept = history.add_run([replace(member, laplacian=np.asarray(laplacian, dtype=np.float64))],
                           candidate.max_members)
    combined = combine_kept(kept, names, candidate.half_life, grid)
    scores, order = combined.scores, combined.order
    if candidate.rule == "frequency":  # the weighted share of first-k* selections, ties by the mean rank
        scores = combined.selection_frequency[min(grid)]
        order = np.lexsort((np.arange(len(names)), -combined.scores, -scores))
    gate = np.asarray(laplacian, dtype=np.float64)
    if candidate.laplacian == "carried":
        gate = np.where(np.isfinite(gate), carried_laplacian(kept, names, candidate.half_life), np.inf)
    if len(kept.members) > 1 and candidate.laplacian_weight > 0:
        fuse = fuse_laplacian if candidate.laplacian_fusion == "reciprocal_rank" else rank_mean_fusion
        order = feature_order(fuse(scores, gate, candidate.laplacian_weight))
    return kept, order, gate


CANDIDATES = tuple(Candidate(rule, half_life, cap) for rule in ("mean_rank", "frequency")
                   for half_life in (4.0, 8.0, 16.0, math.inf) for cap in (16, 64))


def holding_candidates() -> tuple[Candidate, ...]:
    """The second round's: the first round's winner with every hold and Laplacian."""
    config = ROUND_DEFAULTS[2]
    return tuple(Candidate(config.rule, config.half_life, config.max_members, hold, laplacian)
                 for hold in (1.0, 1.5, 2.0, 3.0) for laplacian in ("run", "carried"))


def admitting_candidates() -> tuple[Candidate, ...]:
    """The third round's: the second round's winner with every hold and admit."""
    config = ROUND_DEFAULTS[3]
    return tuple(Candidate(config.rule, config.half_life, config.max_members, hold, config.laplacian, admit)
                 for hold in (2.0, 3.0) for admit in (2.0, 3.0, math.inf))


def weighting_candidates() -> tuple[Candidate, ...]:
    """The fourth round's: the third round's winner with every Laplacian weight."""
    c = ROUND_DEFAULTS[4]
    return tuple(Candidate(c.rule, c.half_life, c.max_members, c.hold, c.laplacian, c.admit, weight)
                 for weight in (0.0, 0.1, 0.25, 0.5))


FOURTH_ROUNDS_FUSION = ("rank_mean", 0.25)  # the defaults the fifth round's rule was fixed against


def fusing_candidates() -> tuple[Candidate, ...]:
    """The fifth round's: the fourth round's winner with each fusion and weight."""
    c = ROUND_DEFAULTS[5]
    return tuple(Candidate(c.rule, c.half_life, c.max_members, c.hold, c.laplacian, c.admit, weight, fusion)
                 for fusion, weight in (("rank_mean", 0.0), FOURTH_ROUNDS_FUSION, ("reciprocal_rank", 0.25),
                                        ("reciprocal_rank", 0.5)))


# -- tables and members ----------------------------------------------------------------------------


def drift_tables() -> tuple[FeatureTable, FeatureTable]:
    """Two synthetic tables with the same feature names and different informative features."""
    shape = {"n_samples": 200, "n_classes": 4, "n_informative": 30, "n_redundant": 0, "n_noise": 370}
    return make_synthetic(**shape, seed=11), make_synthetic(**shape, seed=12)


def load_table(dataset: str, refresh: int, data_dirs: Sequence[str]) -> FeatureTable:
    if dataset == DRIFT:
        before, after = drift_tables()
        return before if refresh < DRIFT_AT else after
    return read_feature_table(find_dataset(dataset, data_dirs))


def members_path(store: Path, dataset: str, deployment: int) -> Path:
    return Path(store) / dataset / f"members_seed_{deployment}.npz"


def read_members(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        return {}
    with np.load(path) as content:
        return {key: content[key] for key in content.files}


def write_atomically(path: Path, content: bytes) -> None:
    """Whole or not at all: a temporary file beside it, renamed when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_members(path: Path, members: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **members)
    write_atomically(path, buffer.getvalue())


def train_refresh(table: FeatureTable, samples: np.ndarray, seed: int, threads: int) -> tuple[np.ndarray, float]:
    """One ICLFS run with the default settings on ``samples``: its z-norm scores and its seconds."""
    prepared = prepare(refresh_table(table, samples))
    runtime = RuntimeConfig(progress=False, num_threads=threads)
    (member,) = train_members(invert(prepared.standardized), TrainingConfig(), ViewConfig(), runtime,
                              MembersConfig(), seed)
    return member.scores["z_norm"], member.seconds


def train(datasets, refreshes: dict[str, int], deployments, store: Path, data_dirs, threads: int) -> None:
    for dataset in datasets:
        for deployment in deployments:
            path = members_path(store, dataset, deployment)
            members = read_members(path)
            for refresh in range(refreshes[dataset]):
                if f"scores_{refresh}" in members:
                    continue
                table = load_table(dataset, refresh, data_dirs)
                samples = refresh_samples(np.asarray(table.X).shape[0], deployment, refresh)
                seed = member_seed(deployment, refresh)
                scores, seconds = train_refresh(table, samples, seed, threads)
                members.update({f"scores_{refresh}": scores, f"samples_{refresh}": samples,
                                f"seed_{refresh}": np.array(seed, dtype=np.int64),
                                f"seconds_{refresh}": np.array(seconds)})
                write_members(path, members)
                print(f"{dataset} deployment {deployment} refresh {refresh}: {seconds:.1f} s", flush=True)


# -- lists --------------------------------------------------------------------------------------------


@dataclass
class Refresh:
    """One refresh of one deployment: its table and what every method selected from it."""

    number: int  # counted from 1
    X: np.ndarray  # standardized
    codes: np.ndarray | None
    names: list[str]
    informative: list[int] | None
    selections: dict[str, dict[int, np.ndarray]]  # method -> k -> indices
    seconds: float  # the refresh's one run
    overhead: dict[str, float]  # method -> seconds from the run's scores to its lists (the history's combining)


class Trained(NamedTuple):
    """One trained refresh of a deployment: what every list made at it starts from."""

    r: int  # counted from 0
    table: FeatureTable  # the whole table it drew its samples from
    prepared: PreparedData  # the refresh's samples, prepared as select prepares them
    laplacian: np.ndarray  # the refresh's Laplacian scores
    scores: np.ndarray  # its one run's
    seed: int
    seconds: float  # its one run's training


def trained_refreshes(dataset: str, deployment: int, store: Path, data_dirs: Sequence[str]) -> Iterator[Trained]:
    """Every trained refresh of one deployment, in order."""
    members = read_members(members_path(store, dataset, deployment))
    count = len([key for key in members if key.startswith("scores_")])
    if count == 0:
        raise FileNotFoundError(f"{members_path(store, dataset, deployment)}: no trained refresh; run train first")
    for r in range(count):
        table = load_table(dataset, r, data_dirs)
        prepared = prepare(refresh_table(table, members[f"samples_{r}"]))
        yield Trained(r, table, prepared, laplacian_scores(prepared.standardized, 3), members[f"scores_{r}"],
                      int(members[f"seed_{r}"]), float(members[f"seconds_{r}"]))


def refresh_runs(dataset: str, deployment: int, store: Path, data_dirs: Sequence[str],
                 candidates: Sequence[Candidate], baselines: bool = True, members_alone: bool = False
                 ) -> list[Refresh]:
    """Every refresh of one deployment, with the lists of one run, the candidates, (``baselines``) LS and NDFS,
    and (``members_alone``) the first k of the members' mean rank, :data:`MEMBERS`."""
    histories = {c: MemberHistory() for c in candidates}
    lists: dict[Candidate, dict[int, list[str]]] = {c: {} for c in candidates}
    pool = MemberHistory()
    out = []
    for r, table, prepared, ls, scores, seed, seconds in trained_refreshes(dataset, deployment, store, data_dirs):
        X, names = prepared.standardized, list(prepared.feature_names)
        grid = k_values_for(SelectionConfig(), X.shape[1])
        started = time.perf_counter()
        selections = {ONE: select_every_k(feature_order(scores), ls, SelectionConfig(), grid)}
        overhead = {ONE: time.perf_counter() - started}
        member = Member(seed, tuple(names), scores, 0.0, str(r))
        for candidate in candidates:
            started = time.perf_counter()
            histories[candidate], order, gate = carry_candidate(histories[candidate], member, names, candidate,
                                                                grid, ls)
            chosen = held_selections(order, gate, SelectionConfig(), grid, lists[candidate], names, candidate.hold,
                                     candidate.admit)
            lists[candidate] = {k: [names[j] for j in c] for k, c in chosen.items()}
            selections[candidate.name] = chosen
            overhead[candidate.name] = time.perf_counter() - started
        if members_alone:
            pool = pool.add_run([member], r + 1)  # every member so far
            order = combine_kept(pool, names, math.inf, grid).order
            selections[MEMBERS] = {k: order[:k] for k in grid}
        if baselines:
            selections["LS"] = {k: np.argsort(ls, kind="stable")[:k] for k in grid}
            if prepared.labels is not None:
                ndfs = ndfs_scores(X.astype(np.float64), len(np.unique(prepared.labels)), random_state=deployment)
                selections["NDFS"] = {k: feature_order(ndfs)[:k] for k in grid}
        informative = None
        if table.informative_features is not None:
            informative = [names.index(table.feature_names[j]) for j in table.informative_features]
        out.append(Refresh(r + 1, X, prepared.labels, names, informative, selections, seconds, overhead))
    return out


def accuracy(refresh: Refresh, method: str) -> tuple[float, int]:
    """The best k's mean k-means accuracy (method.md §8) of ``method``'s lists on the refresh's table, and that k."""
    rows = evaluate_selections(refresh.X, refresh.codes, refresh.selections[method], n_runs=20, seed=42)
    best = best_k(rows)
    return float(best["accuracy_mean"]), int(best["k"])


def names_at(refresh: Refresh, method: str, k: int = K) -> list[str]:
    return [refresh.names[j] for j in refresh.selections[method][k]]


def phi(a: Sequence[str], b: Sequence[str], universe: Sequence[str]) -> float:
    return nogueira_of([a, b], universe).phi


def cells(dataset: str, runs: dict[int, list[Refresh]], methods: Sequence[str],
          with_accuracy: bool = True) -> dict[str, pd.DataFrame]:
    """``{<dataset>/<method slug>/seed_<deployment>: one row per refresh}`` for every method."""
    first, second = (runs[d] for d in DEPLOYMENTS)
    out = {}
    for deployment, mine in runs.items():
        other = second if deployment == DEPLOYMENTS[0] else first
        for method in methods:
            rows = []
            for i, refresh in enumerate(mine):
                current = names_at(refresh, method)
                trained = method in refresh.overhead
                row = {"dataset": dataset, "method": method, "deployment": deployment, "refresh": refresh.number,
                       "k": K, "n_samples": refresh.X.shape[0], "n_features": refresh.X.shape[1],
                       "seconds": refresh.seconds + refresh.overhead[method] if trained else np.nan,
                       "list_seconds": refresh.overhead[method] if trained else np.nan}
                if i > 0:
                    previous = names_at(mine[i - 1], method)
                    row["jaccard_previous"] = jaccard(previous, current)
                    row["phi_previous"] = phi(previous, current, refresh.names)
                if i < len(other):
                    theirs = names_at(other[i], method)
                    row["jaccard_deployments"] = jaccard(theirs, current)
                    row["phi_deployments"] = phi(theirs, current, refresh.names)
                if refresh.informative is not None:
                    chosen = set(refresh.selections[method][K].tolist())
                    row["informative_at_50"] = len(set(refresh.informative) & chosen)
                if with_accuracy and refresh.codes is not None:
                    row["accuracy"], row["best_k"] = accuracy(refresh, method)
                row["selected"] = " ".join(map(str, refresh.selections[method][K]))
                rows.append(row)
            out[f"{dataset}/{slug(method)}/seed_{deployment}"] = pd.DataFrame(rows)
    return out


# -- the study ------------------------------------------------------------------------------------------


def steadiness(table: pd.DataFrame) -> float:
    """Mean Jaccard@50 with the previous list from the fifth refresh on, over the deployments' rows."""
    return float(table.loc[table["refresh"] >= STEADY_FROM, "jaccard_previous"].mean())


def last_agreement(table: pd.DataFrame) -> float:
    return float(table.loc[table["refresh"] == table["refresh"].max(), "jaccard_deployments"].mean())


def last_accuracy(table: pd.DataFrame) -> float:
    return float(table.loc[table["refresh"] == table["refresh"].max(), "accuracy"].mean())


def drift_passes(table: pd.DataFrame, half_life: float, informative: int = 30) -> tuple[bool, int | None]:
    """Whether, in every deployment, the list holds at least half the new informative features within
    two half-lives of the change; and the latest refresh (counted from the change) it first did so."""
    latest = 0
    for _, rows in table.groupby("deployment"):
        after = rows[rows["refresh"] > DRIFT_AT].sort_values("refresh")
        hit = after[after["informative_at_50"] >= informative / 2]
        if hit.empty:
            return False, None
        t = int(hit["refresh"].iloc[0]) - (DRIFT_AT + 1)
        latest = max(latest, t)
        if t > 2 * half_life:
            return False, latest
    return True, latest


def study_table(store: Path, data_dirs: Sequence[str], candidates: Sequence[Candidate] | None = None,
                validation: Sequence[str] | None = None) -> pd.DataFrame:
    """Every candidate's measures and points (module docstring, "The study") on the ``validation`` sets
    (default: :data:`VALIDATION`); the first round's candidates unless ``candidates`` are given."""
    candidates = CANDIDATES if candidates is None else candidates
    validation = VALIDATION if validation is None else tuple(validation)
    one = ONE
    rows = []
    drift_runs = {d: refresh_runs(DRIFT, d, store, data_dirs, candidates, baselines=False) for d in DEPLOYMENTS}
    drift = pd.concat(cells(DRIFT, drift_runs, [c.name for c in candidates], with_accuracy=False).values())
    per_dataset = {}
    for dataset in validation:
        runs = {d: refresh_runs(dataset, d, store, data_dirs, candidates, baselines=False) for d in DEPLOYMENTS}
        table = pd.concat(cells(dataset, runs, [one], with_accuracy=True).values())
        final = {d: runs[d][-1] for d in DEPLOYMENTS}
        measured = pd.concat(cells(dataset, runs, [c.name for c in candidates], with_accuracy=False).values())
        per_dataset[dataset] = (table, final, measured)
    for candidate in candidates:
        passes, latest = drift_passes(drift[drift["method"] == candidate.name], candidate.half_life)
        row = {"candidate": candidate.name, "rule": candidate.rule, "half_life": candidate.half_life,
               "max_members": candidate.max_members, "hold": candidate.hold, "laplacian": candidate.laplacian,
               "admit": candidate.admit, "laplacian_weight": candidate.laplacian_weight,
               "laplacian_fusion": candidate.laplacian_fusion, "drift": passes, "drift_refreshes": latest}
        points = 0
        for dataset, (one_table, final, measured) in per_dataset.items():
            mine = measured[measured["method"] == candidate.name]
            steady, agree = steadiness(mine), last_agreement(mine)
            acc = float(np.mean([accuracy(final[d], candidate.name)[0] for d in DEPLOYMENTS]))
            reference = float(one_table["accuracy"].mean())
            earned = {"steady_point": steady >= 0.9, "agree_point": agree >= 0.4, "accuracy_point": acc >= reference}
            points += sum(earned.values())
            row.update({f"{dataset}.steadiness": steady, f"{dataset}.agreement": agree, f"{dataset}.accuracy": acc,
                        f"{dataset}.one_run_accuracy": reference,
                        f"{dataset}.one_run_steadiness": steadiness(one_table),
                        **{f"{dataset}.{key}": value for key, value in earned.items()}})
        row["points"] = points
        row["mean_agreement"] = float(np.mean([row[f"{d}.agreement"] for d in validation]))
        rows.append(row)
    return pd.DataFrame(rows)


def winner(table: pd.DataFrame) -> pd.Series | None:
    """The rule's winner among the candidates that pass the drift case (module docstring)."""
    eligible = table[table["drift"]]
    if eligible.empty:
        return None
    admit = eligible["admit"] if "admit" in eligible else pd.Series(math.inf, index=eligible.index)
    weight = eligible["laplacian_weight"] if "laplacian_weight" in eligible else pd.Series(0.0, index=eligible.index)
    fusion = (eligible["laplacian_fusion"] if "laplacian_fusion" in eligible
              else pd.Series("rank_mean", index=eligible.index))
    ordered = eligible.assign(rule_order=(eligible["rule"] != "mean_rank").astype(int),
                              laplacian_order=(eligible["laplacian"] != "run").astype(int),
                              admit_order=-admit, fusion_order=(fusion != "rank_mean").astype(int),
                              weight_order=weight).sort_values(
        ["points", "mean_agreement", "half_life", "max_members", "rule_order", "admit_order", "hold",
         "laplacian_order", "fusion_order", "weight_order"], ascending=[False, False, *[True] * 8], kind="stable")
    return ordered.iloc[0]


def judged_on(row: pd.Series) -> list[str]:
    """The validation sets a study table's row was judged on."""
    return [key.removesuffix(".accuracy_point") for key in row.index if key.endswith(".accuracy_point")]


def accuracy_points(row: pd.Series) -> int:
    return sum(bool(row[f"{d}.accuracy_point"]) for d in judged_on(row))


def carry_by_default(row: pd.Series) -> bool:
    accurate = accuracy_points(row)
    steadier = all(row[f"{d}.steadiness"] > row[f"{d}.one_run_steadiness"] for d in judged_on(row))
    return accurate >= 2 and steadier


def holds_by_default(table: pd.DataFrame, best: pd.Series) -> bool:
    """Round 2: the winner's hold and Laplacian become the defaults (module docstring, the second round)."""
    first = table[(table["hold"] == 1) & (table["laplacian"] == "run")].iloc[0]
    accurate = accuracy_points(best)
    return best["points"] > first["points"] and accurate >= 2


def admits_by_default(table: pd.DataFrame, best: pd.Series) -> bool:
    """Round 3: the winner's hold and admit become the defaults (module docstring, the third round)."""
    second = table[(table["hold"] == 3) & np.isinf(table["admit"])].iloc[0]
    accurate = accuracy_points(best)
    return (math.isfinite(best["admit"]) and best["points"] >= second["points"]
            and best["mean_agreement"] > second["mean_agreement"] and accurate >= 2)


def weights_by_default(table: pd.DataFrame, best: pd.Series) -> bool:
    """Round 4: the winner's Laplacian weight becomes the default (module docstring, the fourth round)."""
    third = table[table["laplacian_weight"] == 0].iloc[0]
    accurate = accuracy_points(best)
    return (best["laplacian_weight"] > 0 and best["points"] >= third["points"]
            and best["mean_agreement"] > third["mean_agreement"] and accurate >= 2)


def fuses_by_default(table: pd.DataFrame, best: pd.Series) -> bool:
    """Round 5: the winner's fusion and weight become the defaults (module docstring, the fifth round)."""
    fusion, weight = FOURTH_ROUNDS_FUSION
    defaults = table[(table["laplacian_fusion"] == fusion) & (table["laplacian_weight"] == weight)].iloc[0]
    differs = (best["laplacian_fusion"], best["laplacian_weight"]) != FOURTH_ROUNDS_FUSION
    return (differs and best["points"] >= defaults["points"] and best["mean_agreement"] > defaults["mean_agreement"]
            and accuracy_points(best) >= 3)


@dataclass(frozen=True)
class Round:
    """One round of the study: what it decides, its candidates, its default decision and its report's name."""

    subject: str  # the report's title
    section: str  # the module docstring's section holding its rule
    out: str  # the report, under results/
    candidates: Callable[[], Sequence[Candidate]]
    decides: str  # what the winner's settings become when ``by_default`` holds
    by_default: Callable[[pd.DataFrame, pd.Series], bool]
    validation: tuple[str, ...] = VALIDATION  # the validation sets it is judged on


ROUNDS = {
    1: Round("the study", "The study", "refresh_study.md", lambda: CANDIDATES, "Carrying on by default in `select`",
             lambda table, best: carry_by_default(best)),
    2: Round("the study's second round, the hold and the Laplacian", "The study's second round",
             "refresh_study_hold.md", holding_candidates, "Its hold and Laplacian the `history` defaults",
             holds_by_default),
    3: Round("the study's third round, the band's entry edge", "The study's third round", "refresh_study_admit.md",
             admitting_candidates, "Its hold and admit the `history` defaults", admits_by_default),
    4: Round("the study's fourth round, the Laplacian weight", "The study's fourth round",
             "refresh_study_weight.md", weighting_candidates, "Its Laplacian weight the `history` default",
             weights_by_default),
    5: Round("the study's fifth round, the Laplacian fusion", "The study's fifth round", "refresh_study_fusion.md",
             fusing_candidates, "Its Laplacian fusion and weight the `history` defaults", fuses_by_default,
             VALIDATION_FIFTH),
}


def study_markdown(table: pd.DataFrame, command: str, study_round: int = 1) -> str:
    best = winner(table)
    study = ROUNDS[study_round]
    validation = judged_on(table.iloc[0])
    lines = [f"# The carried consensus's settings: {study.subject}", "",
             f"Generated by `{command}` from the trained refreshes of the validation sets and the drift case. "
             f"The rule is the docstring of `benchmarks/refresh.py` (\"{study.section}\"), fixed before any of its "
             "lists was computed. Do not edit by hand.", "",
             "| candidate | drift (refreshes after the change) | " + " | ".join(
                 f"{d} steadiness / agreement / accuracy" for d in validation) + " | points |",
             "|---|---|" + "---|" * len(validation) + "---|"]
    for values in table.to_dict("records"):  # column names hold dots, which itertuples would rename
        drift = f"{'pass' if values['drift'] else 'fail'} ({values['drift_refreshes']})"
        per = []
        for d in validation:
            marks = "".join("✓" if values[f"{d}.{key}_point"] else "·" for key in ("steady", "agree", "accuracy"))
            per.append(f"{values[f'{d}.steadiness']:.2f} / {values[f'{d}.agreement']:.2f} / "
                       f"{100 * values[f'{d}.accuracy']:.2f} {marks}")
        lines.append(f"| {values['candidate']} | {drift} | " + " | ".join(per) + f" | {values['points']} |")
    reference = [f"{d}: steadiness {table[f'{d}.one_run_steadiness'].iloc[0]:.2f}, accuracy "
                 f"{100 * table[f'{d}.one_run_accuracy'].iloc[0]:.2f}" for d in validation]
    lines += ["", "One run per refresh, for reference: " + "; ".join(reference) + ".", ""]
    if best is None:
        lines.append("No candidate passes the drift case: no winner.")
    else:
        lines.append(f"Winner by the rule: **{best['candidate']}** ({best['points']} points). {study.decides}: "
                     f"**{'yes' if study.by_default(table, best) else 'no'}**.")
    return "\n".join(lines) + "\n"


# -- the report --------------------------------------------------------------------------------------------


def chosen() -> Candidate:
    """The carried consensus as ``select`` runs it (:data:`PRODUCT`, set by the study)."""
    return PRODUCT


def carried_candidates() -> tuple[Candidate, ...]:
    """The carried consensus as ``select`` runs it and, when it fuses in the Laplacian rank, the same without
    (``members.laplacian_weight: 0``), so the report shows what the weight changes."""
    carried = chosen()
    if carried.laplacian_weight == 0:
        return (carried,)
    return carried, replace(carried, laplacian_weight=0.0)


def reported_methods() -> tuple[str, ...]:
    return ONE, *(c.name for c in carried_candidates()), MEMBERS, "LS", "NDFS"


def report_cells(dataset: str, store: Path, data_dirs: Sequence[str], methods: Sequence[str] | None = None
                 ) -> dict[str, pd.DataFrame]:
    """The cells on one dataset of ``methods`` (default: every reported one), keyed
    ``refresh/<dataset>/<method>/seed_<deployment>``."""
    methods = reported_methods() if methods is None else methods
    carried = [c for c in carried_candidates() if c.name in methods]
    runs = {d: refresh_runs(dataset, d, store, data_dirs, carried, baselines=bool({"LS", "NDFS"} & set(methods)),
                            members_alone=MEMBERS in methods)
            for d in DEPLOYMENTS}
    methods = [m for m in methods if m in runs[DEPLOYMENTS[0]][0].selections]
    return {f"refresh/{key}": table for key, table in cells(dataset, runs, methods, with_accuracy=True).items()}


def history_cost(n_features: int = 20_000, members: int = 64, repeats: int = 3) -> dict[str, float]:
    """Seconds to read a stored history of ``members`` x ``n_features``, add a member, combine and make the held
    lists, and store it."""
    from kedro.io.core import Version

    from iclfs.io.datasets import MemberHistoryDataset, MemberHistoryView

    rng = np.random.default_rng(0)
    names = [f"feature_{j}" for j in range(n_features)]
    history = MemberHistory()
    for i in range(members):
        history = history.add_run([Member(i, tuple(names), rng.normal(size=n_features), 1.0, "t",
                                          laplacian=rng.random(n_features))], members)
    config = MembersConfig(kept=members)
    grid = k_values_for(SelectionConfig(), n_features)
    timings: dict[str, list[float]] = {"read": [], "combine": [], "store": []}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "member_history.npz")
        MemberHistoryDataset(filepath=path, data_source="t", version=Version(None, "v0")).save(
            replace(history, read_runs=0))
        for repeat in range(repeats):
            started = time.perf_counter()
            stored = MemberHistoryView(filepath=path, data_source="t").load().of("iclfs")
            timings["read"].append(time.perf_counter() - started)
            started = time.perf_counter()
            laplacian = rng.random(n_features)
            new = Member(10_000 + repeat, tuple(names), rng.normal(size=n_features), 1.0)
            combined, grown = rank([new], names, laplacian, config, grid, stored, fingerprint="t")
            held_selections(combined.order, combined.gate, SelectionConfig(), grid, {}, names)
            timings["combine"].append(time.perf_counter() - started)
            started = time.perf_counter()
            MemberHistoryDataset(filepath=path, data_source="t", version=Version(None, f"v{repeat + 1}")).save(grown)
            timings["store"].append(time.perf_counter() - started)
    return {key: float(np.median(values)) for key, values in timings.items()}


def method_summary(table: pd.DataFrame) -> dict[str, float]:
    """One method on one dataset: its measures over both deployments."""
    last = table["refresh"].max()
    return {
        "refreshes": int(last),
        "steadiness": steadiness(table),
        "phi_previous": float(table.loc[table["refresh"] >= STEADY_FROM, "phi_previous"].mean()),
        "agreement": last_agreement(table),
        "phi_deployments": float(table.loc[table["refresh"] == last, "phi_deployments"].mean()),
        "last_accuracy": last_accuracy(table) if "accuracy" in table else float("nan"),
        "mean_accuracy": float(table["accuracy"].mean()) if "accuracy" in table else float("nan"),
        "seconds": float(table["seconds"].mean()),
        "list_seconds": float(table["list_seconds"].mean()),
    }


def report_markdown(results: pd.DataFrame, cost: dict[str, float], train_seconds: dict[str, float],
                    command: str, report_seconds: float) -> str:
    """The refresh simulation's report: every method on every dataset, the drift case, the targets."""
    candidate = chosen()
    carried = candidate.name
    summaries = {(d, m): method_summary(group) for (d, m), group in results.groupby(["dataset", "method"])}
    reported = [d for d in REPORTED if (d, ONE) in summaries]
    lines = ["# Lists that hold still: the refresh simulation", "",
             f"Generated by `{command}` in {report_seconds:.0f} s from the trained refreshes; its cells are in "
             "`benchmarks/results/cells/refresh/`. Do not edit by hand.", "",
             f"Every refresh takes a fresh random {KEEP:.0%} of the samples; two deployments (seeds "
             f"{DEPLOYMENTS[0]} and {DEPLOYMENTS[1]}) draw their own. *One run per refresh* is today's `select` "
             f"(the default settings); *{carried}* is `select` with `members.carry: true` and the history "
             f"section's defaults, chosen by the study's {len(ROUNDS)} rounds ("
             + ", ".join(f"`{r.out}`" for r in ROUNDS.values()) + "), and its new member at each refresh "
             "is that refresh's one run (never trained twice). LS is the Laplacian score, NDFS is given the "
             "number of classes. Jaccard@50 and Nogueira's Φ compare the first 50 features."
             + (" The carried consensus without the Laplacian weight (`members.laplacian_weight: 0`) is shown "
                "beside it; the targets judge the defaults." if len(carried_candidates()) > 1 else ""), ""]
    # targets
    steady = {d: summaries[(d, carried)]["steadiness"] for d in reported}
    agree = {d: summaries[(d, carried)]["agreement"] for d in reported}
    accurate = {d: summaries[(d, carried)]["last_accuracy"] >= summaries[(d, ONE)]["mean_accuracy"]
                for d in reported}
    ratio = {d: summaries[(d, carried)]["seconds"] / summaries[(d, ONE)]["seconds"] for d in reported}
    drift = results[(results["dataset"] == DRIFT) & (results["method"] == carried)]
    drift_ok, drift_after = drift_passes(drift, candidate.half_life) if not drift.empty else (False, None)
    median_agreement = float(np.median(list(agree.values()))) if agree else float("nan")
    targets = [
        ("Jaccard@50 with the previous list, from the fifth refresh on, >= 0.9 on every dataset",
         ", ".join(f"{d} {v:.2f}" for d, v in steady.items()), all(v >= 0.9 for v in steady.values())),
        ("Jaccard@50 between the deployments after the last refresh >= 0.4 on the median dataset",
         f"median {median_agreement:.2f} ({', '.join(f'{d} {v:.2f}' for d, v in agree.items())})",
         median_agreement >= 0.4),
        ("the last list's accuracy at or above the mean over refreshes of one run per refresh, on >= 5 of 6",
         f"{sum(accurate.values())} of {len(accurate)} ("
         + ", ".join(d for d, ok in accurate.items() if not ok) + " below)" if not all(accurate.values())
         else f"{sum(accurate.values())} of {len(accurate)}",
         sum(accurate.values()) >= 5 if len(accurate) >= len(REPORTED) or len(accurate) - sum(accurate.values()) > 1
         else f"not judged: {len(accurate)} of {len(REPORTED)} datasets simulated"),
        ("cost per refresh at most 1.1x one run's",
         ", ".join(f"{d} {v:.3f}x" for d, v in ratio.items()), all(v <= 1.1 for v in ratio.values())),
        ("reading and combining the history takes seconds at 20,000 features x 64 members",
         f"read {cost['read']:.2f} s, add a member and combine {cost['combine']:.2f} s, store {cost['store']:.2f} s",
         cost["read"] + cost["combine"] + cost["store"] < 10),
        ("the drift case: half the new informative features in the first 50 within two half-lives",
         (f"{'within' if drift_ok else 'not within'} {2 * candidate.half_life:g} refreshes"
          if math.isfinite(candidate.half_life) else "the half-life is infinite: no bound")
         + (f" (after {drift_after} refreshes in the slower deployment)" if drift_after is not None else ""),
         drift_ok),
    ]
    lines += ["## The targets", "", "| target | measured | met |", "|---|---|---|"]
    lines += [f"| {what} | {measured} | {ok if isinstance(ok, str) else 'yes' if ok else 'no'} |"
              for what, measured, ok in targets]
    lines += ["", "## Every method", "",
              "Steadiness: the mean Jaccard@50 (and Φ) with the previous refresh's list from the fifth refresh "
              "on, over both deployments. Agreement: between the two deployments' lists at the last refresh. "
              "Accuracy: k-means on the refresh's table (method.md §8, the best k's mean over 20 runs), of the "
              "last list (mean of the deployments) and the mean over every refresh. Seconds: training and "
              f"listing per refresh. *{MEMBERS.capitalize()}* is not a setting: the first k of the mean rank over "
              "every member so far, without LGRC, hold or Laplacian score, it shows how far the members "
              "themselves agree.", "",
              "| dataset | refreshes | method | steadiness J@50 / Φ | agreement J@50 / Φ | accuracy, last list | "
              "accuracy, mean over refreshes | seconds per refresh |", "|---|---|---|---|---|---|---|---|"]
    for dataset in [*reported, DRIFT]:
        for method in reported_methods():
            if (dataset, method) not in summaries:
                continue
            m = summaries[(dataset, method)]
            seconds = "" if np.isnan(m["seconds"]) else f"{m['seconds']:.1f}"
            lines.append(f"| {dataset} | {m['refreshes']} | {method} | {m['steadiness']:.2f} / "
                         f"{m['phi_previous']:.2f} | {m['agreement']:.2f} / {m['phi_deployments']:.2f} | "
                         f"{100 * m['last_accuracy']:.2f} | {100 * m['mean_accuracy']:.2f} | {seconds} |")
    if not drift.empty:
        lines += ["", "## The drift case", "",
                  f"A synthetic table of 200 samples x 400 features whose 30 informative features change at "
                  f"refresh {DRIFT_AT + 1}. New informative features in the first 50, refresh by refresh after the "
                  "change (deployment 42 / 43):", "",
                  "| method | " + " | ".join(str(r) for r in range(DRIFT_AT + 1, DRIFT_AT + 21)) + " |",
                  "|---|" + "---|" * 20]
        for method in (ONE, *(c.name for c in carried_candidates())):
            rows = results[(results["dataset"] == DRIFT) & (results["method"] == method)]
            cells_ = []
            for r in range(DRIFT_AT + 1, DRIFT_AT + 21):
                at = rows[rows["refresh"] == r].sort_values("deployment")["informative_at_50"].tolist()
                cells_.append(" / ".join(str(int(v)) for v in at))
            lines.append(f"| {method} | " + " | ".join(cells_) + " |")
    lines += ["", "## Cost", "",
              f"Reading a stored history of 64 members x 20,000 features takes {cost['read']:.2f} s, adding a "
              f"member and combining {cost['combine']:.2f} s, storing the new version {cost['store']:.2f} s "
              "(medians of three, `history_cost()`).", "",
              "Training the simulation's runs (one thread, both deployments, `python -m benchmarks.refresh "
              "train`): " + ", ".join(f"{d} {s / 3600:.2f} h" for d, s in train_seconds.items()) + "."]
    return "\n".join(lines) + "\n"


HEADS = {"the members' order": ("rank_mean", 0.0), "the Laplacian's order": ("rank_mean", 1.0),
         "rank mean, weight 0.25": ("rank_mean", 0.25), "reciprocal rank, weight 0.5": ("reciprocal_rank", 0.5)}


def heads(dataset: str, store: Path, data_dirs: Sequence[str]) -> dict[str, float]:
    """At the last refresh, how far the first :data:`K` of the members' carried order and of the carried Laplacian
    scores overlap (the mean over the deployments), and how far each of :data:`HEADS`'s orders agrees between the
    two deployments (the fifth round's diagnosis, module docstring)."""
    candidate = replace(chosen(), laplacian_weight=0.0)
    last = {}
    for deployment in DEPLOYMENTS:
        history = MemberHistory()
        for trained in trained_refreshes(dataset, deployment, store, data_dirs):
            names = list(trained.prepared.feature_names)
            grid = k_values_for(SelectionConfig(), len(names))
            member = Member(trained.seed, tuple(names), trained.scores, 0.0, str(trained.r))
            history, _, gate = carry_candidate(history, member, names, candidate, grid, trained.laplacian)
        combined = combine_kept(history, names, candidate.half_life, grid)
        orders = {label: feature_order(combined.scores if weight == 0 else
                                       (fuse_laplacian if fusion == "reciprocal_rank" else rank_mean_fusion)(
                                           combined.scores, gate, weight))
                  for label, (fusion, weight) in HEADS.items()}
        last[deployment] = {label: [names[j] for j in order[:K]] for label, order in orders.items()}
    members_, laplacian_ = "the members' order", "the Laplacian's order"
    out = {"shared heads": float(np.mean([len(set(last[d][members_]) & set(last[d][laplacian_]))
                                          for d in DEPLOYMENTS]))}
    first, second = (last[d] for d in DEPLOYMENTS)
    out.update({label: jaccard(first[label], second[label]) for label in HEADS})
    return out


def heads_markdown(rows: dict[str, dict[str, float]], command: str) -> str:
    lines = ["# Where the members' and the Laplacian's orders part", "",
             f"Generated by `{command}` from the trained refreshes. At the last refresh, with the `history` "
             f"defaults and no Laplacian weight: how many of the first {K} features of the members' carried order "
             "and of the carried Laplacian scores are the same (mean over the two deployments), and the Jaccard "
             f"index of the first {K} between the two deployments of each order. Do not edit by hand.", "",
             "| dataset | shared heads | " + " | ".join(f"agreement, {label}" for label in HEADS) + " |",
             "|---|---|" + "---|" * len(HEADS)]
    for dataset, row in rows.items():
        lines.append(f"| {dataset} | {row['shared heads']:g} | " + " | ".join(f"{row[label]:.2f}" for label in HEADS)
                     + " |")
    return "\n".join(lines) + "\n"


def train_seconds(store: Path, datasets: Sequence[str]) -> dict[str, float]:
    out = {}
    for dataset in datasets:
        total = 0.0
        for deployment in DEPLOYMENTS:
            members = read_members(members_path(store, dataset, deployment))
            total += sum(float(v) for key, v in members.items() if key.startswith("seconds_"))
        out[dataset] = total
    return out


# -- the command line ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m benchmarks.refresh", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("train", help="train the refreshes' runs that are missing")
    run.add_argument("--datasets", nargs="+", required=True)
    run.add_argument("--refreshes", nargs="+", required=True, help="NAME=COUNT per dataset, or one COUNT for all")
    run.add_argument("--deployments", type=int, nargs="+", default=list(DEPLOYMENTS))
    run.add_argument("--threads", type=int, default=1)
    study = commands.add_parser("study", help="judge the carried consensus's candidates by the fixed rule")
    study.add_argument("--round", type=int, choices=sorted(ROUNDS), default=1,
                       help="1: rule, half-life and cap; 2: the hold and the Laplacian, on round 1's winner; "
                            "3: the hold and admit, on round 2's winner; 4: the Laplacian weight, on round 3's "
                            "winner; 5: the Laplacian fusion, on round 4's winner")
    study.add_argument("--out", help="default: results/refresh_study.md (round 1), refresh_study_hold.md (round 2), "
                                     "refresh_study_admit.md (round 3), refresh_study_weight.md (round 4), "
                                     "refresh_study_fusion.md (round 5)")
    diagnosis = commands.add_parser("heads", help="where the members' and the Laplacian's orders part, and how "
                                                  "each fused order agrees between the deployments")
    diagnosis.add_argument("--datasets", nargs="+", default=[*REPORTED, "Isolet"])
    diagnosis.add_argument("--out", default=str(HERE / "results" / "refresh_heads.md"))
    report = commands.add_parser("report", help="every method on every dataset, the targets: cells and report")
    report.add_argument("--datasets", nargs="+", default=[*REPORTED, DRIFT])
    report.add_argument("--out", default=str(HERE / "results" / "refresh.md"))
    report.add_argument("--cells", default=str(HERE / "results" / "cells"))
    report.add_argument("--keep", action="store_true",
                        help="reuse the cells already in --cells: compute only the methods a dataset lacks")
    for sub in (run, study, diagnosis, report):
        sub.add_argument("--store", default=STORE if sub is run else str(PUBLISHED),
                         help="the trained members (default: train writes under data/, study and report read the "
                              "published ones)")
        sub.add_argument("--data-dirs", nargs="+", default=list(DATA_DIRS))
    args = parser.parse_args(argv)
    if args.command == "train":
        counts = dict(item.split("=") if "=" in item else ("*", item) for item in args.refreshes)
        refreshes = {name: int(counts.get(name, counts.get("*", 0))) for name in args.datasets}
        train(args.datasets, refreshes, args.deployments, Path(args.store), args.data_dirs, args.threads)
        return
    if args.command == "heads":
        rows = {d: heads(d, Path(args.store), args.data_dirs) for d in args.datasets}
        text = heads_markdown(rows, "python -m benchmarks.refresh " + " ".join(argv))
        Path(args.out).write_text(text)
        print(text)
        return
    if args.command == "study":
        started = time.time()
        out = Path(args.out or HERE / "results" / ROUNDS[args.round].out)
        table = study_table(Path(args.store), args.data_dirs, ROUNDS[args.round].candidates(),
                            ROUNDS[args.round].validation)
        table.to_csv(out.with_suffix(".csv"), index=False)
        text = study_markdown(table, "python -m benchmarks.refresh " + " ".join(argv), args.round)
        out.write_text(text)
        print(text)
        print(f"wrote {out} in {time.time() - started:.0f} s")
        return
    started = time.time()
    from iclfs.io.datasets import CellsDataset

    store = CellsDataset(path=args.cells)
    stored = set(store.load()) if args.keep else set()
    for dataset in args.datasets:
        missing = [m for m in reported_methods()
                   if not any(key.startswith(f"refresh/{dataset}/{slug(m)}/") for key in stored)]
        if not missing:
            print(f"{dataset}: cells kept", flush=True)
            continue
        computed = report_cells(dataset, Path(args.store), args.data_dirs, missing)
        store.save(computed)  # each dataset's cells as soon as they exist
        print(f"{dataset}: {len(computed)} cells in {time.time() - started:.0f} s", flush=True)
    loaded = {key: load() for key, load in store.load().items() if key.startswith("refresh/")}
    results = pd.concat(loaded.values(), ignore_index=True)
    cost = history_cost()
    seconds = train_seconds(Path(args.store), [d for d in args.datasets])
    command = "python -m benchmarks.refresh " + " ".join(argv)
    Path(args.out).write_text(report_markdown(results, cost, seconds, command, time.time() - started))
    print(Path(args.out).read_text())


if __name__ == "__main__":
    main()
