"""The ICLFS chain, written once (docs/method.md, docs/architecture.md).

    prepare -> invert -> start -> train the members -> Laplacian score
            -> rank (combine the members) -> gate (LGRC at every k, held to the last lists) -> choose k

Every entry point calls these functions in this order: :func:`run` (the
selectors and the benchmark, in memory) and the Kedro stages of ``select``
(``data_processing``, ``training``, ``laplacian``, ``ranking``, ``selection``),
one stage per step, each result a versioned artifact.
``tests/test_equivalence.py`` holds them to the same lists and scores, bit for
bit. Another method of :mod:`iclfs.baselines` (``selection.method``) takes
the same steps: :func:`train` runs it in place of the members' training, and
:func:`gate` hands on its own selection. The methods that rank what
standardizing erases (variance, dispersion: ``Baseline.reads_measured``) read
the table as :func:`prepare` validated it, before standardization
(``PreparedData.measured``, the Kedro dataset ``measured_data``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from iclfs import baselines
from iclfs.method._config import ParameterError, SelectionConfig, Settings
from iclfs.method._evidence import Evidence, list_evidence
from iclfs.method._k_choice import KChoice, choose_k
from iclfs.method._laplacian import laplacian_scores
from iclfs.method._lgrc import gate
from iclfs.method._members import MemberTraining, largest_network_plan, train_members
from iclfs.method._preprocessing import DataValidationError, FeatureTable, PreparedData, invert, prepare
from iclfs.method._ranking import Continuation, Member, MemberHistory, Ranking, rank, start
from iclfs.method._runtime import resolve_device, resolve_precision

__all__ = ["ChainResult", "Trained", "as_members", "check_for_data", "check_runtime", "k_values_for", "prepare_checked",
           "run", "train"]

LOGGER = logging.getLogger(__name__)

MIN_BLOCK_FEATURES = 8  # a feature block's network contrasts each feature with the block's others


def k_values_for(selection: SelectionConfig, n_features: int) -> list[int]:
    """The k grid a table of ``n_features`` columns gets: ``selection.k_values`` up to d, ascending."""
    return sorted(k for k in selection.k_values if k <= n_features)


def check_runtime(settings: Settings) -> None:
    """The device exists and can run the precision asked for (no data needed)."""
    device = resolve_device(settings.runtime.device)
    resolve_precision(settings.runtime.precision, settings.training.schedule, device)


def check_for_data(settings: Settings, n_samples: int, n_features: int, source: str = "data",
                   options: Mapping | None = None) -> list[int]:
    """Every check of the settings that needs the table's shape, before any training.

    ``selection.k`` above d is refused. Entries of ``selection.k_values``
    above d are dropped from the grid with a warning (the grid explores; k is
    what the user asked for); a grid left empty is refused.
    ``laplacian.n_neighbors`` must be below n, and the training plan of a
    member's largest network must fit the device
    (:func:`~iclfs.method._members.largest_network_plan`).

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
    blocks = settings.members.feature_blocks
    if blocks > 1 and n_features < MIN_BLOCK_FEATURES * blocks:
        raise DataValidationError(
            f"{source}: {n_features} feature(s) cannot be dealt into members.feature_blocks = {blocks} blocks of "
            f"at least {MIN_BLOCK_FEATURES}. Lower members.feature_blocks to at most "
            f"{max(1, n_features // MIN_BLOCK_FEATURES)}.")
    if settings.laplacian.n_neighbors >= n_samples:
        raise ParameterError(f"parameter laplacian.n_neighbors = {settings.laplacian.n_neighbors} is invalid: "
                             f"expected fewer than the {n_samples} samples")
    if settings.selection.method != "iclfs":
        check_method_for_data(settings, n_samples, options)
    else:  # planning refuses a network that will not fit the device (runtime.check_memory)
        largest_network_plan(n_samples, n_features, settings.training, settings.members, settings.runtime)
    return grid


def check_method_for_data(settings: Settings, n_samples: int, options: Mapping | None = None) -> None:
    """Another method's settings against the table's samples: its clusters and its neighbours fewer than them."""
    entry = baselines.baseline(settings.selection.method)
    clusters = settings.selection.n_clusters
    if entry.needs_clusters and clusters is not None and clusters >= n_samples:
        raise ParameterError(f"parameter selection.n_clusters = {clusters} is invalid: {entry.name} needs fewer "
                             f"clusters than the {n_samples} samples")
    neighbours = getattr(baselines.options_of(entry.key, options), "n_neighbors", None)
    if neighbours is not None and neighbours >= n_samples:
        raise ParameterError(f"parameter baselines.{entry.key}.n_neighbors = {neighbours} is invalid: expected "
                             f"fewer than the {n_samples} samples")


def prepare_checked(table: FeatureTable, settings: Settings, options: Mapping | None = None,
                    keep_measured: bool = False) -> tuple[PreparedData, list[int]]:
    """Validate and standardize ``table``, and check ``settings`` (and another method's ``options``) against its
    shape (nothing is written). The table as measured is kept (``PreparedData.measured``) for a method that
    reads it, or for every method with ``keep_measured``.

    Returns
    -------
    prepared : PreparedData
    grid : list of int
        The k grid of this table (:func:`check_for_data`), worked out here once: every later step takes it.
    """
    method = settings.selection.method
    entry = None if method == "iclfs" else baselines.baseline(method)
    prepared = prepare(table, keep_measured=keep_measured or (entry is not None and entry.reads_measured))
    grid = check_for_data(settings, *prepared.standardized.shape, source=table.source, options=options)
    if entry is not None and entry.nonnegative:
        _check_nonnegative(prepared, entry.name, table.source, table.sample_ids)
    return prepared, grid


def _check_nonnegative(prepared: PreparedData, method: str, source: str, sample_ids=None) -> None:
    negative = prepared.measured < 0
    count = int(np.count_nonzero(negative))
    if count:
        row, column = np.argwhere(negative)[0]
        # by the names the user's file holds, in either orientation (not this frame's row and column numbers)
        sample = repr(str(sample_ids[row])) if sample_ids is not None else f"number {row + 1} of {len(negative)}"
        raise DataValidationError(
            f"{source}: {method} needs nonnegative values (counts, or expression on its linear scale, not "
            f"log-ratios or centred values), but {count} value(s) are negative, the first for feature "
            f"{prepared.feature_names[column]!r} in sample {sample}: "
            f"{prepared.measured[row, column]:g}. Pass the table before any centring or log-ratio, or use the "
            "method variance, which takes any values")


@dataclass
class Trained:
    """What the training step gave: this run's members, and what made them.

    Attributes
    ----------
    members : list of Member
        Each member's ranking score of every feature, by name (ICLFS: ``ranking.score``; another method: its
        score), with its seed, time, table fingerprint, method and the table's Laplacian scores.
    trainings : list of MemberTraining
        ICLFS: every member's networks, scores and epoch logs; empty for another method.
    selections : dict of int to ndarray
        Another method's own selection at every k; empty for ICLFS.
    log : list of dict
        Another method's epoch log (CAE, LS-CAE); empty otherwise.
    """

    members: list[Member]
    trainings: list[MemberTraining]
    selections: dict[int, np.ndarray]
    log: list[dict]


def as_members(scores: np.ndarray, seeds: Sequence[int], seconds: Sequence[float], feature_names: Sequence[str],
               method: str = "iclfs") -> list[Member]:
    """This run's members from their scores (members, d), seeds and times."""
    names = tuple(map(str, feature_names))
    return [Member(int(seed), names, np.asarray(row, dtype=np.float64), float(sec), method=method)
            for row, seed, sec in zip(np.atleast_2d(scores), seeds, seconds, strict=True)]


def train(standardized: np.ndarray, feature_names: Sequence[str], settings: Settings, seed: int,
          grid: Sequence[int], options: Mapping | None = None,
          trainings: list[MemberTraining] | None = None, measured: np.ndarray | None = None) -> Trained:
    """The training step: this run's members, ICLFS's or another method's, at ``seed``.

    Parameters
    ----------
    standardized : ndarray of shape (n_samples, n_features)
    feature_names : sequence of str
    settings : Settings
    seed : int
        The seed of the run's first member (:func:`~iclfs.method._ranking.start`).
    grid : sequence of int
        Every k: another method selects at each.
    options : mapping, optional
        Another method's options (conf's ``baselines.<method>``).
    trainings : list of MemberTraining, optional
        ICLFS members trained elsewhere (on a Dask cluster) at this seed.
    measured : ndarray of shape (n_samples, n_features), optional
        The table before standardization, which variance and dispersion read (``PreparedData.measured``).
    """
    method = settings.selection.method
    if method != "iclfs":
        result = baselines.run(method, standardized, list(grid), n_clusters=settings.selection.n_clusters,
                            seed=seed, runtime=settings.runtime.replace(progress=False), options=options,
                            measured=measured)
        scores = np.zeros(len(feature_names)) if result.scores is None else result.scores
        return Trained(as_members(scores, [seed], [0.0], feature_names, method), [],
                       {int(k): np.asarray(v, dtype=np.int64) for k, v in result.selections.items()},
                       list(result.history))
    if trainings is None:
        trainings = train_members(invert(standardized), settings.training, settings.views, settings.runtime,
                                  settings.members, seed)
    scores = np.array([t.scores[settings.ranking.score] for t in trainings])
    members = as_members(scores, [t.plan.seed for t in trainings], [t.seconds for t in trainings], feature_names)
    return Trained(members, trainings, {}, [])


def has_members(method: str) -> bool:
    """Whether a method's runs are members that can disagree: ICLFS and the seeded methods; a deterministic one
    repeats one list, so it has no selection frequencies to read evidence from (docs/method.md §10)."""
    return method == "iclfs" or baselines.REGISTRY[method].seeded


def evidence(result: ChainResult, settings: Settings) -> Evidence:
    """The evidence of a run's list (docs/method.md §10): each feature's selection frequency over the members
    the run ranked by, the stable set at ``members.threshold`` and the bound on its expected false selections."""
    return list_evidence(result.ranking, result.k, settings.members, has_members(settings.selection.method))


@dataclass
class ChainResult:
    """Everything one run of the chain produced (what the Kedro pipelines save as artifacts)."""

    prepared: PreparedData
    trained: Trained
    laplacian_scores: np.ndarray
    ranking: Ranking
    selections: dict[int, np.ndarray]
    choice: KChoice
    continuation: Continuation
    history: MemberHistory | None = None  # a carrying run's history, its members included

    @property
    def k(self) -> int:
        """k: the number of features on the list."""
        return self.choice.k

    @property
    def k_reason(self) -> str:
        """Why that k."""
        return self.choice.reason

    @property
    def selected(self) -> np.ndarray:
        """The list: the selection at k, best first (feature indices)."""
        return self.selections[self.choice.k]

    @property
    def lists(self) -> dict[int, tuple[str, ...]]:
        """The selection at every k, by name: what the next run of a carrying data source holds to."""
        names = self.prepared.feature_names
        return {k: tuple(str(names[j]) for j in chosen) for k, chosen in self.selections.items()}


def run(table: FeatureTable, settings: Settings | None = None, history: MemberHistory | None = None,
        previous: Mapping[int, Sequence[str]] | None = None, options: Mapping | None = None) -> ChainResult:
    """The whole chain on one table, in memory.

    Parameters
    ----------
    table : FeatureTable
    settings : Settings, optional
    history : MemberHistory, optional
        The data source's kept members (``members.carry``): the run's members train from the seed of the
        history's next member number, join it, and every member kept orders the features. The history with
        them is ``ChainResult.history``.
    previous : dict of int to sequence of str, optional
        The last lists handed on, by name (``ChainResult.lists`` of the last run): a carrying run's lists hold
        to them.
    options : dict, optional
        Another method's options (conf's ``baselines.<method>``).
    """
    settings = settings or Settings()
    prepared, grid = prepare_checked(table, settings, options)
    d = prepared.standardized.shape[1]
    names = list(prepared.feature_names)
    method = settings.selection.method
    continuation = start(history, names, settings.seed, settings.members, method)
    if continuation.note is not None:
        LOGGER.warning("%s", continuation.note)
    trained = train(prepared.standardized, names, settings, continuation.seed, grid, options,
                    measured=prepared.measured)
    laplacian = laplacian_scores(prepared.standardized, n_neighbors=settings.laplacian.n_neighbors)
    fingerprint = table.fingerprint() if continuation.history is not None else ""
    ranking, kept = rank(trained.members, names, laplacian, settings.members, grid, continuation.history,
                         trained.selections, fingerprint)
    held = previous if continuation.holds else None
    selections = gate(ranking.order, ranking.gate, ranking.selection_frequency, settings.selection, grid, names, held)
    choice = choose_k(selections, ranking.selection_frequency, settings.selection, d)
    return ChainResult(prepared, trained, laplacian, ranking, selections, choice, continuation, kept)
