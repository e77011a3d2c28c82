"""The Laplacian-gated selection at every k of the grid, held to the last lists (docs/method.md §7)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.chain import k_values_for
from iclfs.method._config import SelectionConfig
from iclfs.method._lgrc import gate
from iclfs.project._frames import frequencies, laplacian_vector, lists_by_name, previous_of


def select_every_k(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame,
                   previous_selections: pd.DataFrame, history_start: dict, selection: dict) -> pd.DataFrame:
    """The LGRC step (:func:`iclfs.method._lgrc.gate`): the selected features at every k of
    ``selection.k_values`` (up to d), in one long table.

    LGRC gates the ranking's order by its ``laplacian_gate`` scores; with
    ``selection.use_lgrc: false`` the selection is the first k of the order
    (the paper's "without LGRC" ablation). A run that carries members onto a
    kept history holds each list to the last list handed on at its k
    (``previous_selections``). Another ``selection.method`` is not
    corrected: its selection at k is the k features of highest
    ``top_<k>_frequency`` (its own selection at k, or, carried, the features
    its members chose most), ties by the order.

    Returns
    -------
    DataFrame
        Rows ``k, rank, feature_index, feature_name, score, laplacian_score``
        and ``member_frequency`` (the fraction of the members
        whose first k include the feature); ``rank`` is the position within
        the selection (1 = best).
    """
    # Continuation.holds, as chain.run decides it: carrying onto a kept history with members. A note (a damaged
    # version passed over) does not stop a run that builds on the history from holding; a history set aside
    # leaves none.
    holds = bool(history_start.get("carry")) and history_start.get("members", 0) > 0
    method = SelectionConfig.from_dict(selection).method  # the last list of this method, never another's
    return selections_table(feature_ranking, laplacian_scores, selection,
                            lists_by_name(previous_of(previous_selections, method)) if holds else None)


def select_one_run(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame, selection: dict) -> pd.DataFrame:
    """The benchmark's LGRC step: :func:`select_every_k` of one run, without last lists."""
    return selections_table(feature_ranking, laplacian_scores, selection, None)


def selections_table(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame, selection: dict,
                     previous: dict[int, list[str]] | None) -> pd.DataFrame:
    config = SelectionConfig.from_dict(selection)
    by_index = feature_ranking.set_index("feature_index").sort_index()
    order = feature_ranking["feature_index"].to_numpy()
    names = by_index["feature_name"].astype(str).tolist()
    grid = k_values_for(config, len(order))
    chosen_at = gate(order, by_index["laplacian_gate"].to_numpy(), frequencies(feature_ranking), config, grid, names,
                     previous)
    ls = laplacian_vector(laplacian_scores)
    parts = []
    for k, chosen in chosen_at.items():
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
