"""Laplacian-Gated Ranking Correction for every k (SPEC §7)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.core import lgrc as core_lgrc


def select_features(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame, lgrc: dict) -> pd.DataFrame:
    """The selected features for every k in ``lgrc.k_values``, in one long table.

    With ``lgrc.enabled: false`` the selection is the first k of the ranking
    (the paper's "without LGRC" ablation).

    Returns:
        Rows ``k, rank, feature_index, feature_name, score, laplacian_score``;
        ``rank`` is the position within the selection (1 = best).
    """
    ranking = feature_ranking["feature_index"].to_numpy()
    ls = laplacian_scores.set_index("feature_index")["laplacian_score"].sort_index().to_numpy()
    by_index = feature_ranking.set_index("feature_index")
    d = len(ranking)
    too_big = [k for k in lgrc["k_values"] if not 1 <= k <= d]
    if too_big:
        raise ValueError(f"lgrc.k_values {too_big} are outside 1..{d} (the number of features)")
    parts = []
    for k in sorted(lgrc["k_values"]):
        chosen = core_lgrc.select_features(ranking, ls, k, enabled=lgrc.get("enabled", True), alpha=lgrc["alpha"],
                                           quantile=lgrc["quantile"])
        parts.append(
            pd.DataFrame(
                {
                    "k": k,
                    "rank": np.arange(1, k + 1),
                    "feature_index": chosen,
                    "feature_name": by_index.loc[chosen, "feature_name"].to_numpy(),
                    "score": by_index.loc[chosen, "score"].to_numpy(),
                    "laplacian_score": ls[chosen],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)
