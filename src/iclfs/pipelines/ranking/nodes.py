"""One order from the members' scores, and from the data source's carried members (docs/consensus.md)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from iclfs.method.chain import k_values_for
from iclfs.method.config import ConsensusConfig, HistoryConfig, RankingConfig, SelectionConfig
from iclfs.method.consensus import combine_members
from iclfs.method.history import MemberHistory, carry, usable_history
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
        include it, for every k of the grid). With two members or more also
        ``member_<i>_rank`` (member i's rank of the feature; for carried
        members i is the member's number in the history, and a member that
        did not see a feature leaves it empty) and, when carrying,
        ``members_seen`` (how many members saw the feature).
    consensus_metrics : dict
        MLflow metrics: ``member_jaccard`` (mean pairwise Jaccard of the
        members' first k, step k) with two members or more; ``carried_members``.
    member_history : MemberHistory
        The history with this run's members; saved only when carrying.
    """
    ranking_config = RankingConfig.from_dict(ranking)
    consensus_config = ConsensusConfig.from_dict(consensus)
    history_config = HistoryConfig.from_dict(history)
    grid = k_values_for(SelectionConfig.from_dict(selection), len(feature_names))
    scores = np.asarray(member_scores[ranking_config.score])
    laplacian = laplacian_vector(laplacian_scores)
    if not history_config.carry:
        return (*rank_one_run(member_scores, feature_names, laplacian_scores, ranking, consensus, selection),
                MemberHistory())

    base, note = usable_history(previous_member_history, feature_names, history_config.reset)
    if note is not None:  # start_history has said so once, as a warning
        LOGGER.debug("%s", note)
    seconds = member_scores.get("seconds", np.zeros(len(scores)))
    fingerprint = str(ground_truth.get("fingerprint") or "")
    new = [(int(seed), feature_names, member, float(sec), fingerprint)
           for seed, member, sec in zip(member_scores["seed"], scores, seconds, strict=True)]
    carried_history, combined = carry(base, new, feature_names, history_config, grid, laplacian,
                                      consensus_config.laplacian_weight)
    orders = {m.index: o for m, o in zip(carried_history.members, combined.member_orders, strict=True)}
    score_name = (f"carried {history_config.rule} of {ranking_config.score} "
                  f"({len(carried_history.members)} members)")
    table, metrics = _ranking(feature_names, combined.order, combined.scores, score_name, orders,
                              combined.frequency, grid)
    table["members_seen"] = combined.seen[combined.order]
    metrics["carried_members"] = [{"value": float(len(carried_history.members)), "step": 0}]
    return table, metrics, carried_history


def rank_one_run(member_scores: dict[str, np.ndarray], feature_names: list[str], laplacian_scores: pd.DataFrame,
                 ranking: dict, consensus: dict, selection: dict) -> tuple[pd.DataFrame, dict]:
    """Features best first by this run's members alone: ``feature_ranking`` and ``consensus_metrics`` as
    :func:`rank_features` gives them without carrying (the benchmark's ranking)."""
    ranking_config = RankingConfig.from_dict(ranking)
    grid = k_values_for(SelectionConfig.from_dict(selection), len(feature_names))
    scores = np.asarray(member_scores[ranking_config.score])
    combined = combine_members(scores, ConsensusConfig.from_dict(consensus), laplacian_vector(laplacian_scores),
                               grid)
    orders = dict(enumerate(combined.member_orders))
    score_name = ranking_config.score if len(scores) == 1 else f"consensus of {ranking_config.score}"
    return _ranking(feature_names, combined.order, combined.scores, score_name, orders, combined.frequency, grid)


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
            ranks = np.full(d, np.nan)
            ranks[member_order] = np.arange(1, len(member_order) + 1)  # a member's rank among what it saw
            table[f"member_{i}_rank"] = pd.array(ranks[order], dtype="Int64")
        metrics["member_jaccard"] = [
            {"value": float(mean_pairwise_jaccard([o[:k] for o in orders.values()])), "step": int(k)}
            for k in grid]
    return table, metrics
