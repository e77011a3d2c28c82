"""The ICLFS chain, written once (docs/method.md).

prepare -> invert -> train the members -> score -> (average over correlated
features) -> combine and rank ->
Laplacian score -> LGRC at every k -> the k handed on.

The Kedro pipelines call these functions stage by stage, one node each, so
every intermediate result is a versioned artifact; :class:`ICLFSSelector`
and the benchmark call :func:`run`, which chains the same functions in
memory. The three give the same selection for the same settings and seed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from .config import ConsensusConfig, ParameterError, RankingConfig, SelectionConfig, Settings
from .consensus import (
    KChoice,
    Member,
    agreement,
    choose_k,
    combine,
    fuse_laplacian,
    member_jaccard,
    member_rankings,
    member_samples,
    member_settings,
    top_k_frequency,
    train_members,
)
from .laplacian import laplacian_scores
from .lgrc import select_features
from .losses import loss_block_rows
from .preprocessing import DataValidationError, FeatureTable, PreparedData, invert, prepare
from .runtime import (
    attention_kernel_for,
    check_memory,
    estimate_training_memory,
    resolve_device,
    resolve_precision,
)
from .scores import correlated_features, rank_features, smooth_over_correlated
from .training import network_regime

LOGGER = logging.getLogger(__name__)


MIN_BLOCK_FEATURES = 8  # a feature block's network contrasts each feature with the block's others


def k_values_for(selection: SelectionConfig, n_features: int) -> list[int]:
    """The k grid a table of ``n_features`` columns gets: ``selection.k_values`` up to d, ascending."""
    return sorted(k for k in selection.k_values if k <= n_features)


def check_runtime(settings: Settings) -> None:
    """The device exists and can run the precision asked for (no data needed)."""
    device = resolve_device(settings.runtime.device)
    resolve_precision(settings.runtime.precision, settings.training.schedule, device)


def check_for_data(settings: Settings, n_samples: int, n_features: int, source: str = "data") -> list[int]:
    """Every check of the settings that needs the table's shape, before any training.

    The production ``selection.k`` above d is refused. Entries of
    ``selection.k_values`` above d are dropped from the grid with a warning
    (the grid explores; the production k is what the user asked for); a grid
    left empty is refused. ``laplacian.n_neighbors`` must be below n, and one
    member's estimated training memory must fit the device.

    Returns
    -------
    list of int
        The k grid for this table (:func:`k_values_for`).
    """
    selection = settings.selection
    if selection.k != "auto" and selection.k > n_features:
        raise DataValidationError(
            f"{source}: {n_features} feature(s), but selection.k is {selection.k}. "
            "Lower selection.k (and selection.k_values) or add features.")
    grid = k_values_for(selection, n_features)
    if not grid:
        raise DataValidationError(
            f"{source}: {n_features} feature(s), but the smallest k of selection.k_values is "
            f"{min(selection.k_values)}. Lower selection.k_values or add features.")
    dropped = sorted(set(selection.k_values) - set(grid))
    if dropped:
        LOGGER.warning("%s: %d features, so k = %s of selection.k_values are left out", source, n_features,
                       ", ".join(map(str, dropped)))
    blocks = settings.consensus.feature_blocks
    if blocks > 1 and n_features < MIN_BLOCK_FEATURES * blocks:
        raise DataValidationError(
            f"{source}: {n_features} feature(s) cannot be dealt into consensus.feature_blocks = {blocks} blocks of "
            f"at least {MIN_BLOCK_FEATURES}. Lower consensus.feature_blocks to at most "
            f"{max(1, n_features // MIN_BLOCK_FEATURES)}.")
    if settings.ranking.smoothing_neighbors >= n_features:
        raise DataValidationError(
            f"{source}: {n_features} feature(s), but ranking.smoothing_neighbors is "
            f"{settings.ranking.smoothing_neighbors}. Lower it to at most {n_features - 1}.")
    if settings.laplacian.n_neighbors >= n_samples:
        raise ParameterError(f"parameter laplacian.n_neighbors = {settings.laplacian.n_neighbors} is invalid: "
                             f"expected fewer than the {n_samples} samples")
    check_runtime(settings)
    if settings.runtime.check_memory:
        training, _ = member_settings(n_samples, settings.training, settings.consensus)
        n_member = member_samples(n_samples, settings.consensus)
        device = resolve_device(settings.runtime.device)
        regime = network_regime(n_member, training)
        n_network = -(-n_features // blocks)  # the largest block
        estimate = estimate_training_memory(
            n_network, n_member, regime, training.schedule, attention_kernel_for(training.schedule, n_member, device),
            training.use_attention, None if training.schedule == "paper" else loss_block_rows(n_network, device))
        check_memory(estimate, device, n_network, n_member, regime, training.schedule)
    return grid


def prepare_data(table: FeatureTable, settings: Settings) -> PreparedData:
    """Validate and standardize ``table``, and check ``settings`` against its shape (nothing is written)."""
    prepared = prepare(table)
    check_for_data(settings, *prepared.standardized.shape, source=table.source)
    return prepared


def fit_members(inverted: np.ndarray, settings: Settings) -> list[Member]:
    """Train every member of the consensus (one: the paper's single run) on the inverted map (d, n)."""
    return train_members(inverted, settings.training, settings.views, settings.runtime, settings.consensus,
                         settings.seed, contrastive=settings.ranking.score == "contrastive")


@dataclass
class Ranking:
    """The ranking stage's outcome: one ranking from the members' scores.

    Attributes
    ----------
    scores : ndarray of shape (d,)
        The score that orders the features (higher is better): with one member
        its ``ranking.score``, else the consensus of the members' (and the
        Laplacian score's, with ``consensus.laplacian_weight``); each member's
        averaged over correlated features first with ``ranking.smoothing_neighbors``.
    ranking : ndarray of shape (d,)
        Feature indices, best first (ties by index).
    member_rankings : ndarray of shape (members, d)
        Each member's ranking, best first.
    frequency : dict of int to ndarray of shape (d,)
        Per k: the fraction of the members whose first k include each feature.
    member_jaccard : dict of int to float or None
        Per k: the mean pairwise Jaccard index of the members' first k (None with one member).
    """

    scores: np.ndarray
    ranking: np.ndarray
    member_rankings: np.ndarray
    frequency: dict[int, np.ndarray]
    member_jaccard: dict[int, float | None]


def neighbors_for(standardized: np.ndarray, ranking: RankingConfig) -> np.ndarray | None:
    """The correlated features ``rank`` averages over (None with ``ranking.smoothing_neighbors: 0``)."""
    if ranking.smoothing_neighbors == 0:
        return None
    return correlated_features(standardized, ranking.smoothing_neighbors)


def rank(member_scores: np.ndarray, ranking: RankingConfig, consensus: ConsensusConfig,
         laplacian: np.ndarray | None, k_values: list[int], neighbors: np.ndarray | None = None) -> Ranking:
    """Combine the members' scores (members, d) into one ranking.

    With one member the ranking is that member's own score (the paper's run;
    with feature blocks, the rank within its block),
    whatever ``consensus.laplacian_weight``; ``laplacian`` (the Laplacian
    scores) is needed only for a consensus with ``laplacian_weight`` > 0.
    With ``ranking.smoothing_neighbors`` > 0 each member's score is first
    averaged over ``neighbors`` (:func:`neighbors_for`).
    """
    member_scores = np.atleast_2d(np.asarray(member_scores, dtype=np.float64))
    if ranking.smoothing_neighbors > 0:
        if neighbors is None or neighbors.shape[1] != ranking.smoothing_neighbors + 1:
            raise ValueError(f"ranking.smoothing_neighbors = {ranking.smoothing_neighbors} needs each feature's "
                             f"{ranking.smoothing_neighbors} correlated features (neighbors_for)")
        member_scores = np.array([smooth_over_correlated(s, neighbors) for s in member_scores])
    scores = combine(member_scores, consensus.combine)
    # The fusion is part of combining members: one member is the paper's run, its raw score.
    if len(member_scores) > 1 and consensus.laplacian_weight > 0:
        if laplacian is None:
            raise ValueError("consensus.laplacian_weight > 0 needs the Laplacian scores")
        scores = fuse_laplacian(scores, laplacian, consensus.laplacian_weight)
    rankings = member_rankings(member_scores)
    return Ranking(
        scores=scores,
        ranking=rank_features(scores),
        member_rankings=rankings,
        frequency={k: top_k_frequency(rankings, k) for k in k_values},
        member_jaccard={k: member_jaccard(rankings, k) for k in k_values},
    )


def select(ranking: np.ndarray, laplacian: np.ndarray, selection: SelectionConfig,
           k_values: list[int]) -> dict[int, np.ndarray]:
    """The selected features at every k of the grid: LGRC, or the first k with ``use_lgrc: false``."""
    return {k: np.asarray(select_features(ranking, laplacian, k, use_lgrc=selection.use_lgrc, alpha=selection.alpha,
                                          quantile=selection.quantile), dtype=np.int64)
            for k in k_values}


def choose(selections: dict[int, np.ndarray], frequency: dict[int, np.ndarray], selection: SelectionConfig,
           n_features: int) -> KChoice:
    """The production k and why: ``selection.k``, or with ``auto`` the members' agreement (:func:`choose_k`)."""
    if selection.k != "auto":
        return KChoice(int(selection.k), f"selection.k = {selection.k}", {})
    # Selecting every feature is no selection: its agreement is 1 by construction.
    candidates = [k for k in selections if k < n_features] or list(selections)
    agreements = {k: agreement(frequency[k], selections[k], k, n_features) for k in candidates}
    return choose_k(agreements, selection.auto_frequency)


@dataclass
class ChainResult:
    """Everything one run of the chain produced (what the Kedro pipelines save as artifacts)."""

    prepared: PreparedData
    members: list[Member]
    laplacian_scores: np.ndarray
    ranking: Ranking
    selections: dict[int, np.ndarray]
    choice: KChoice

    @property
    def k(self) -> int:
        """The production k."""
        return self.choice.k

    @property
    def k_reason(self) -> str:
        """Why that k."""
        return self.choice.reason

    @property
    def selected(self) -> np.ndarray:
        """The features handed on: the selection at the production k, best first."""
        return self.selections[self.choice.k]


def run(table: FeatureTable, settings: Settings | None = None) -> ChainResult:
    """The whole chain on one table, in memory."""
    settings = settings or Settings()
    prepared = prepare_data(table, settings)
    d = prepared.standardized.shape[1]
    grid = k_values_for(settings.selection, d)
    members = fit_members(invert(prepared.standardized), settings)
    laplacian = laplacian_scores(prepared.standardized, n_neighbors=settings.laplacian.n_neighbors)
    ranked = rank(np.array([m.scores[settings.ranking.score] for m in members]), settings.ranking,
                  settings.consensus, laplacian, grid, neighbors_for(prepared.standardized, settings.ranking))
    selections = select(ranked.ranking, laplacian, settings.selection, grid)
    return ChainResult(prepared, members, laplacian, ranked, selections,
                       choose(selections, ranked.frequency, settings.selection, d))
