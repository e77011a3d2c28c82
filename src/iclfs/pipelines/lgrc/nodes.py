"""The Laplacian-gated selection at every k of the grid (docs/method.md §7)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.method.chain import k_values_for, select
from iclfs.method.config import SelectionConfig
from iclfs.pipelines.frames import laplacian_vector


def select_every_k(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame, selection: dict) -> pd.DataFrame:
    """The selected features for every k of ``selection.k_values`` (up to d), in one long table.

    With ``selection.use_lgrc: false`` the selection is the first k of the
    order (the paper's "without LGRC" ablation). A carrying run's lists were
    made by the ranking stage (``list_<k>_rank``, held to the last lists) and
    are handed on as they are. Another ``selection.method``
    is not corrected: its selection at k is the k features of highest
    ``top_<k>_frequency`` (its own selection at k, or, carried, the features
    its members chose most), ties by the order.

    Returns
    -------
    DataFrame
        Rows ``k, rank, feature_index, feature_name, score, laplacian_score``
        and, for a consensus, ``member_frequency`` (the fraction of the members
        whose first k include the feature); ``rank`` is the position within
        the selection (1 = best).
    """
    config = SelectionConfig.from_dict(selection)
    order = feature_ranking["feature_index"].to_numpy()
    ls = laplacian_vector(laplacian_scores)
    by_index = feature_ranking.set_index("feature_index")
    grid = k_values_for(config, len(order))
    if all(f"list_{k}_rank" in by_index for k in grid):  # a carrying run's lists, made by the ranking stage
        selections = {k: _listed(feature_ranking, k) for k in grid}
    elif config.method == "iclfs":
        selections = select(order, ls, config, grid)
    else:  # another method selects by itself: at each k, the features it (or, carried, its members) chose most
        selections = {k: _most_chosen(feature_ranking, k) for k in grid}
    parts = []
    for k, chosen in selections.items():
        part = pd.DataFrame({
            "k": k,
            "rank": np.arange(1, k + 1),
            "feature_index": chosen,
            "feature_name": by_index.loc[chosen, "feature_name"].to_numpy(),
            "score": by_index.loc[chosen, "score"].to_numpy(),
            "laplacian_score": ls[chosen],
        })
        if f"top_{k}_frequency" in by_index:
            part["member_frequency"] = by_index.loc[chosen, f"top_{k}_frequency"].to_numpy()
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _listed(feature_ranking: pd.DataFrame, k: int) -> np.ndarray:
    """The features on the list at k (``list_<k>_rank``), in their list order."""
    ranks = feature_ranking[f"list_{k}_rank"]
    on = ranks.notna().to_numpy()
    return feature_ranking["feature_index"].to_numpy()[on][np.argsort(ranks[on].to_numpy(dtype=np.int64))]


def _most_chosen(feature_ranking: pd.DataFrame, k: int) -> np.ndarray:
    """The k features of highest ``top_<k>_frequency``, ties by rank, best first."""
    frequency = feature_ranking[f"top_{k}_frequency"].to_numpy()
    rows = np.lexsort((feature_ranking["rank"].to_numpy(), -frequency))[:k]
    return feature_ranking["feature_index"].to_numpy()[np.sort(rows)]
