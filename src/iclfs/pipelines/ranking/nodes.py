"""One order from the members' scores (docs/method.md §5, docs/consensus.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.method.chain import k_values_for
from iclfs.method.config import ConsensusConfig, RankingConfig, SelectionConfig
from iclfs.method.consensus import combine_members
from iclfs.method.scores import rank_positions
from iclfs.pipelines.frames import laplacian_vector


def rank_features(member_scores: dict[str, np.ndarray], feature_names: list[str], laplacian_scores: pd.DataFrame,
                  ranking: dict, consensus: dict, selection: dict) -> tuple[pd.DataFrame, dict]:
    """Features best first, by the consensus of the members' ``ranking.score``.

    Returns
    -------
    feature_ranking : DataFrame
        One row per feature, best first: ``rank`` (1 = best), ``feature_index``,
        ``feature_name``, ``score`` (what orders them), ``score_name``; with
        two members or more also ``member_<i>_rank`` (each member's rank of the
        feature) and ``top_<k>_frequency`` (the share of the members whose
        first k include it, for every k of the grid).
    consensus_metrics : dict
        MLflow metrics: ``member_jaccard`` (mean pairwise Jaccard of the
        members' first k, step k); empty with one member.
    """
    ranking_config = RankingConfig.from_dict(ranking)
    grid = k_values_for(SelectionConfig.from_dict(selection), len(feature_names))
    scores = np.asarray(member_scores[ranking_config.score])
    combined = combine_members(scores, ConsensusConfig.from_dict(consensus), laplacian_vector(laplacian_scores), grid)
    order = combined.order
    table = pd.DataFrame({
        "rank": np.arange(1, len(order) + 1),
        "feature_index": order,
        "feature_name": np.asarray(feature_names, dtype=object)[order],
        "score": combined.scores[order],
        "score_name": ranking_config.score if len(scores) == 1 else f"consensus of {ranking_config.score}",
    })
    metrics: dict = {}
    if len(scores) > 1:
        for i, member_order in enumerate(combined.member_orders):
            table[f"member_{i}_rank"] = rank_positions(member_order)[order]
        for k in grid:
            table[f"top_{k}_frequency"] = combined.frequency[k][order]
        metrics["member_jaccard"] = [{"value": float(combined.member_jaccard[k]), "step": int(k)} for k in grid]
    return table, metrics
