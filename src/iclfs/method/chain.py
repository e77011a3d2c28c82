"""The ICLFS chain, written once (docs/method.md).

prepare -> invert -> train the members -> score -> combine into one order ->
Laplacian score -> LGRC at every k -> the k handed on.

The Kedro pipelines call these steps stage by stage, one node each, so every
intermediate result is a versioned artifact; :class:`~iclfs.selectors.ICLFSSelector`
and the benchmark call :func:`run`, which chains the same functions in
memory. The three give the same selection for the same settings and seed.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace

import numpy as np

from .config import HistoryConfig, ParameterError, SelectionConfig, Settings
from .consensus import Consensus, combine_members
from .history import MemberHistory, carry, continue_history, gate_laplacian, held_k, hold
from .k_choice import KChoice, choose_k
from .laplacian import laplacian_scores
from .lgrc import select_features
from .members import Member, member_samples, member_settings, train_members
from .preprocessing import DataValidationError, FeatureTable, PreparedData, invert, prepare
from .runtime import plan_training, resolve_device, resolve_precision

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
    left empty is refused. ``laplacian.n_neighbors`` must be below n, and the
    largest network's training plan must fit the device.

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
    if settings.laplacian.n_neighbors >= n_samples:
        raise ParameterError(f"parameter laplacian.n_neighbors = {settings.laplacian.n_neighbors} is invalid: "
                             f"expected fewer than the {n_samples} samples")
    training, _ = member_settings(n_samples, settings.training, settings.consensus)
    largest_block = -(-n_features // blocks)
    plan = plan_training(largest_block, member_samples(n_samples, settings.consensus), training, settings.runtime)
    if settings.runtime.check_memory:
        plan.check_memory()
    return grid


def prepare_checked(table: FeatureTable, settings: Settings) -> PreparedData:
    """Validate and standardize ``table``, and check ``settings`` against its shape (nothing is written)."""
    prepared = prepare(table)
    check_for_data(settings, *prepared.standardized.shape, source=table.source)
    return prepared


def select(order: np.ndarray, laplacian: np.ndarray, selection: SelectionConfig,
           k_values: list[int]) -> dict[int, np.ndarray]:
    """The selected features at every k of the grid: LGRC, or the first k with ``use_lgrc: false``."""
    return {k: np.asarray(select_features(order, laplacian, k, use_lgrc=selection.use_lgrc, alpha=selection.alpha,
                                          quantile=selection.quantile), dtype=np.int64)
            for k in k_values}


def held_selections(order: np.ndarray, laplacian: np.ndarray, selection: SelectionConfig, k_values: list[int],
                    hold_factor: float, previous: dict[int, list[str]] | None, feature_names: list[str],
                    admit: float = math.inf) -> dict[int, np.ndarray]:
    """:func:`select` at every k, each list held to ``previous``, the last list at that k by name
    (:func:`iclfs.method.history.hold`, ``history.hold`` and ``history.admit``); :func:`select` itself without
    a hold or a last list."""
    if hold_factor <= 1 or not previous:
        return select(order, laplacian, selection, k_values)
    d = len(order)
    wider = select(order, laplacian, selection, sorted({held_k(hold_factor, k, d) for k in k_values}))
    return {k: hold(previous.get(k), wider[held_k(hold_factor, k, d)], feature_names, k, admit) for k in k_values}


def carried_selections(history: MemberHistory, order: np.ndarray, laplacian: np.ndarray, selection: SelectionConfig,
                       config: HistoryConfig, k_values: list[int], feature_names: list[str],
                       gate: np.ndarray | None = None) -> tuple[dict[int, np.ndarray], MemberHistory]:
    """A carrying run's selections at every k, and ``history`` with them recorded as the last lists.

    LGRC gates by this run's Laplacian scores or, with ``history.laplacian:
    carried``, by their weighted mean over the members
    (:func:`~iclfs.method.history.gate_laplacian`); each list is held to
    the last list at its k, the lists ``history`` recorded (``history.hold``,
    ``history.admit``).
    ``history`` already holds this run's members; ``gate``, when given, is
    those scores as :func:`~iclfs.method.history.carry` computed them
    (``Consensus.gate``).
    """
    gate = gate_laplacian(history, laplacian, feature_names, config) if gate is None else gate
    selections = held_selections(order, gate, selection, k_values, config.hold, history.lists, feature_names,
                                 config.admit)
    lists = {k: tuple(str(feature_names[j]) for j in chosen) for k, chosen in selections.items()}
    return selections, replace(history, lists=lists)


@dataclass
class ChainResult:
    """Everything one run of the chain produced (what the Kedro pipelines save as artifacts)."""

    prepared: PreparedData
    members: list[Member]
    laplacian_scores: np.ndarray
    consensus: Consensus
    selections: dict[int, np.ndarray]
    choice: KChoice
    history: MemberHistory | None = None  # a carrying run's history, its members included

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


def run(table: FeatureTable, settings: Settings | None = None, history: MemberHistory | None = None
        ) -> ChainResult:
    """The whole chain on one table, in memory.

    With ``history`` (a carrying run, ``settings.history``) the members train
    from the seed of the history's next member number, join the history, and
    every member kept orders the features (:func:`iclfs.method.history.carry`);
    the history with them is ``ChainResult.history``.
    """
    settings = settings or Settings()
    prepared = prepare_checked(table, settings)
    d = prepared.standardized.shape[1]
    grid = k_values_for(settings.selection, d)
    names = list(prepared.feature_names)
    seed = settings.seed
    if history is not None:
        start = continue_history(history, names, settings.seed, reset=settings.history.reset)
        if start.note is not None:
            LOGGER.warning("%s", start.note)
        history, seed = start.history, start.seed
    members = train_members(invert(prepared.standardized), settings.training, settings.views, settings.runtime,
                            settings.consensus, seed)
    laplacian = laplacian_scores(prepared.standardized, n_neighbors=settings.laplacian.n_neighbors)
    scores = np.array([m.scores[settings.ranking.score] for m in members])
    combined = combine_members(scores, settings.consensus, laplacian, grid)
    if history is not None:
        fingerprint = table.fingerprint()
        first = not history.members  # a history of this run alone hands on exactly this run's order
        history, carried = carry(history, [(m.plan.seed, names, s, m.seconds, fingerprint)
                                           for m, s in zip(members, scores, strict=True)],
                                 names, settings.history, grid, laplacian)
        combined = combined if first else carried
        selections, history = carried_selections(history, combined.order, laplacian, settings.selection,
                                                 settings.history, grid, names, carried.gate)
    else:
        selections = select(combined.order, laplacian, settings.selection, grid)
    return ChainResult(prepared, members, laplacian, combined, selections,
                       choose_k(selections, combined.frequency, settings.selection, d), history)
