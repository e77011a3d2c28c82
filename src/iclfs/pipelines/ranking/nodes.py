"""One order from the members' scores, and from the data source's carried members (docs/consensus.md)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from iclfs.baselines import REGISTRY as BASELINES
from iclfs.method.chain import carried_selections, k_values_for
from iclfs.method.config import ConsensusConfig, HistoryConfig, RankingConfig, SelectionConfig
from iclfs.method.consensus import combine_members
from iclfs.method.history import MemberHistory, carry, fusion_label, usable_history
from iclfs.method.stability import mean_pairwise_jaccard
from iclfs.pipelines.frames import laplacian_vector

LOGGER = logging.getLogger(__name__)


def rank_features(member_scores: dict[str, np.ndarray], feature_names: list[str], laplacian_scores: pd.DataFrame,
                  ground_truth: dict, previous_member_history: MemberHistory, ranking: dict, consensus: dict,
                  selection: dict, history: dict) -> tuple[pd.DataFrame, dict, MemberHistory]:
    """Features best first: by this run's members, or with ``history.carry`` by every member carried.

    Returns
    -------
    feature_ranking : DataFrame
        One row per feature, best first: ``rank`` (1 = best), ``feature_index``,
        ``feature_name``, ``score`` (what orders them), ``score_name``, and
        ``top_<k>_frequency`` (the weighted share of the members whose first k
        include it, for every k of the grid; for another method run once, 1
        for the features it selects at k). With two members or more also
        ``member_<i>_rank`` (member i's rank of the feature; for carried
        members i is the member's number in the history, and a member that
        did not see a feature leaves it empty) and, when carrying,
        ``members_seen`` (how many members saw the feature) and, for ICLFS,
        ``list_<k>_rank`` (the feature's place on the run's list at k, empty
        when not on it: a carrying run's lists are made here, held to the last
        lists, :func:`iclfs.method.chain.carried_selections`, and recorded in
        the history).
    consensus_metrics : dict
        MLflow metrics: ``member_jaccard`` (mean pairwise Jaccard of the
        members' first k, step k) with two members or more; ``carried_members``.
    member_history : MemberHistory
        The history with this run's members; saved only when carrying.
    """
    history_config = HistoryConfig.from_dict(history)
    if not history_config.carry:
        return (*rank_one_run(member_scores, feature_names, laplacian_scores, ranking, consensus, selection),
                MemberHistory())
    ranking_config = RankingConfig.from_dict(ranking)
    selection_config = SelectionConfig.from_dict(selection)
    method = selection_config.method
    grid = k_values_for(selection_config, len(feature_names))
    scores = np.asarray(member_scores[_score_key(method, ranking_config)])
    base, note = usable_history(previous_member_history, feature_names, history_config.reset, method)
    if note is not None:  # start_history has said so once, as a warning
        LOGGER.debug("%s", note)
    seconds = member_scores.get("seconds", np.zeros(len(scores)))
    fingerprint = str(ground_truth.get("fingerprint") or "")
    new = [(int(seed), feature_names, member, float(sec), fingerprint)
           for seed, member, sec in zip(member_scores["seed"], scores, seconds, strict=True)]
    laplacian = laplacian_vector(laplacian_scores)
    carried_history, combined = carry(base, new, feature_names, history_config, grid, laplacian, method)
    if not base.members:  # the history is this run's alone: it hands on exactly what a run without carrying does
        table, metrics = rank_one_run(member_scores, feature_names, laplacian_scores, ranking, consensus, selection)
        table["members_seen"] = len(new)
    else:
        orders = {m.index: o for m, o in zip(carried_history.members, combined.member_orders, strict=True)}
        score_name = (f"carried {history_config.rule} of {_score_name(method, ranking_config)} "
                      f"({len(carried_history.members)} members)")
        if method == "iclfs":
            score_name += fusion_label(history_config)
        table, metrics = _ranking(feature_names, combined.order, combined.scores, score_name, orders,
                                  combined.frequency, grid)
        table["members_seen"] = combined.seen[combined.order]
    if method == "iclfs":  # the lists are made here, to be held to by the next run: lgrc hands them on
        order = table["feature_index"].to_numpy()
        selections, carried_history = carried_selections(carried_history, order, laplacian, selection_config,
                                                         history_config, grid, feature_names, combined.gate)
        for k, chosen in selections.items():
            table[f"list_{k}_rank"] = _rank_column(chosen, order)
    metrics["carried_members"] = [{"value": float(len(carried_history.members)), "step": 0}]
    return table, metrics, carried_history


def rank_one_run(member_scores: dict[str, np.ndarray], feature_names: list[str], laplacian_scores: pd.DataFrame,
                 ranking: dict, consensus: dict, selection: dict) -> tuple[pd.DataFrame, dict]:
    """Features best first by this run's members alone: ``feature_ranking`` and ``consensus_metrics`` as
    :func:`rank_features` gives them without carrying (the benchmark's ranking).

    For another ``selection.method`` the order is its score, and its
    selection at each k (one fit per k for MCFS, CAE and LS-CAE) marks
    ``top_<k>_frequency``.
    """
    ranking_config = RankingConfig.from_dict(ranking)
    selection_config = SelectionConfig.from_dict(selection)
    method = selection_config.method
    grid = k_values_for(selection_config, len(feature_names))
    scores = np.asarray(member_scores[_score_key(method, ranking_config)])
    combined = combine_members(scores, ConsensusConfig.from_dict(consensus), laplacian_vector(laplacian_scores),
                               grid)
    frequency = combined.frequency
    if method != "iclfs":
        frequency = dict(frequency)
        for k in grid:
            if f"selected_{k}" in member_scores:
                frequency[k] = np.isin(np.arange(len(feature_names)), member_scores[f"selected_{k}"]).astype(float)
    orders = dict(enumerate(combined.member_orders))
    score_name = _score_name(method, ranking_config)
    if method == "iclfs" and len(scores) > 1:
        score_name = f"consensus of {score_name}"
    return _ranking(feature_names, combined.order, combined.scores, score_name, orders, frequency, grid)


def _score_key(method: str, ranking: RankingConfig) -> str:
    return ranking.score if method == "iclfs" else method


def _score_name(method: str, ranking: RankingConfig) -> str:
    return ranking.score if method == "iclfs" else f"{BASELINES[method].name} score"


def _ranking(feature_names: list[str], order: np.ndarray, scores: np.ndarray, score_name: str,
             orders: dict[int, np.ndarray], frequency: dict[int, np.ndarray], grid: list[int]
             ) -> tuple[pd.DataFrame, dict]:
    d = len(order)
    table = pd.DataFrame({
        "rank": np.arange(1, d + 1),
        "feature_index": order,
        "feature_name": np.asarray(feature_names, dtype=object)[order],
        "score": np.asarray(scores)[order],
        "score_name": score_name,
    })
    for k in grid:
        table[f"top_{k}_frequency"] = frequency[k][order]
    metrics: dict = {}
    if len(orders) > 1:
        for i, member_order in orders.items():
            table[f"member_{i}_rank"] = _rank_column(member_order, order)  # a member's rank among what it saw
        metrics["member_jaccard"] = [
            {"value": float(mean_pairwise_jaccard([o[:k] for o in orders.values()])), "step": int(k)}
            for k in grid]
    return table, metrics


def _rank_column(ranked: np.ndarray, order: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """The rank (1 = first) of each feature of ``order`` within ``ranked`` (feature indices best first), empty for
    a feature not in it; a column of the table ``order`` lays out."""
    ranks = np.full(len(order), np.nan)
    ranks[ranked] = np.arange(1, len(ranked) + 1)
    return pd.array(ranks[order], dtype="Int64")
