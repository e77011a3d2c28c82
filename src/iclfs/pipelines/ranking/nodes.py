"""One ranking from the members' scores (docs/method.md §5, docs/consensus.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.method import chain
from iclfs.method.config import ConsensusConfig, RankingConfig, SelectionConfig
from iclfs.method.scores import rank_positions
from iclfs.pipelines.frames import laplacian_vector


def rank_features(member_scores: dict[str, np.ndarray], feature_names: list[str], laplacian_scores: pd.DataFrame,
                  standardized_data: np.ndarray, ranking: dict, consensus: dict, selection: dict
                  ) -> tuple[pd.DataFrame, dict]:
    """Features best first, by the consensus of the members' ``ranking.score``.

    ``standardized_data`` (n, d) is read only with ``ranking.smoothing_neighbors``
    > 0, for the features each score is averaged over.

    Returns
    -------
    feature_ranking : DataFrame
        One row per feature, best first: ``rank`` (1 = best), ``feature_index``,
        ``feature_name``, ``score`` (what orders them), ``score_name``; with
        two members or more also ``member_<i>_rank`` (each member's rank of the
        feature) and ``top_<k>_frequency`` (the fraction of the members whose
        first k include it, for every k of the grid).
    consensus_metrics : dict
        MLflow metrics: ``member_jaccard`` (mean pairwise Jaccard of the
        members' first k, step k); empty with one member.
    """
    ranking_config = RankingConfig.from_dict(ranking)
    grid = chain.k_values_for(SelectionConfig.from_dict(selection), len(feature_names))
    scores = np.asarray(member_scores[ranking_config.score])
    neighbors = chain.neighbors_for(standardized_data, ranking_config)
    ranked = chain.rank(scores, ranking_config, ConsensusConfig.from_dict(consensus),
                        laplacian_vector(laplacian_scores), grid, neighbors)
    order = ranked.ranking
    table = pd.DataFrame({
        "rank": np.arange(1, len(order) + 1),
        "feature_index": order,
        "feature_name": np.asarray(feature_names, dtype=object)[order],
        "score": ranked.scores[order],
        "score_name": score_name(ranking_config, len(scores)),
    })
    metrics: dict = {}
    if len(scores) > 1:
        for i, member_ranking in enumerate(ranked.member_rankings):
            table[f"member_{i}_rank"] = rank_positions(member_ranking)[order]
        for k in grid:
            table[f"top_{k}_frequency"] = ranked.frequency[k][order]
        metrics["member_jaccard"] = [{"value": float(ranked.member_jaccard[k]), "step": int(k)} for k in grid]
    return table, metrics


def score_name(ranking: RankingConfig, members: int) -> str:
    """What the ``score`` column holds, e.g. ``z_norm``, ``consensus of z_norm averaged over 5 correlated``."""
    name = ranking.score if members == 1 else f"consensus of {ranking.score}"
    if ranking.smoothing_neighbors:
        name += f" averaged over {ranking.smoothing_neighbors} correlated"
    return name
