"""Feature scores and the ranking (SPEC §5)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.core.scores import SCORE_NAMES, feature_scores, rank_features


def score_features(embeddings: dict[str, np.ndarray], feature_names: list[str]) -> pd.DataFrame:
    """Every score of SPEC §5, one row per feature (in column order)."""
    scores = feature_scores(embeddings["H"], embeddings["Z"])
    table = pd.DataFrame({"feature_index": np.arange(len(feature_names)), "feature_name": feature_names})
    for name in SCORE_NAMES:
        table[name] = scores[name]
    return table


def rank_by_score(feature_scores: pd.DataFrame, ranking: dict) -> pd.DataFrame:
    """Features by descending ``ranking.score`` (ties by index), with rank 1 the best."""
    score = ranking["score"]
    if score not in SCORE_NAMES:
        raise ValueError(f"ranking.score must be one of {SCORE_NAMES}, got {score!r}")
    order = rank_features(feature_scores[score].to_numpy())
    ranked = feature_scores.iloc[order]
    return pd.DataFrame(
        {
            "rank": np.arange(1, len(order) + 1),
            "feature_index": ranked["feature_index"].to_numpy(),
            "feature_name": ranked["feature_name"].to_numpy(),
            "score": ranked[score].to_numpy(),
            "score_name": score,
        }
    )
