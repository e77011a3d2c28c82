"""The selection: LGRC at every k of the grid, held to the last lists (docs/method.md §7); k chosen; the list at k
and the input table reduced to it, what the next job reads."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.method import _k_choice as k_choice
from iclfs.method._config import SelectionConfig
from iclfs.method._lgrc import gate
from iclfs.method._ranking import check_record
from iclfs.method._preprocessing import DataValidationError, FeatureTable, as_numeric_matrix
from iclfs.project._frames import (
    evidence_at,
    frequencies,
    indices_by_k,
    k_grid,
    laplacian_vector,
    lists_by_name,
    previous_of,
)


def select_every_k(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame, ground_truth: dict,
                   previous_selections: pd.DataFrame, history_start: dict, selection: dict,
                   members: dict | None = None) -> pd.DataFrame:
    """The LGRC step (:func:`iclfs.method._lgrc.gate`): the selected features at every k of the run's grid
    (``ground_truth["k_values"]``), in one long table.

    LGRC gates the ranking's order by its ``laplacian_gate`` scores; with
    ``selection.use_lgrc: false`` the selection is the first k of the order
    (the paper's "without LGRC" ablation). A run whose start holds its lists
    (``history_start["holds"]``: it carries members onto a kept history)
    holds each list to the last list handed on at its k
    (``previous_selections``). Another ``selection.method`` is not
    corrected: its selection at k is the k features of highest
    ``selection_frequency_<k>`` (its own selection at k, or, carried, the features
    its members chose most), ties by the order.

    Returns
    -------
    DataFrame
        Rows ``k, rank, feature_index, feature_name, score, score_name, laplacian_score``
        and ``selection_frequency`` (the fraction of the members
        whose first k include the feature); ``rank`` is the position within
        the selection (1 = best).
    """
    config = SelectionConfig.from_dict(selection)
    # the last list of this method, never another's
    holds = check_record(history_start)["holds"]
    previous = lists_by_name(previous_of(previous_selections, config.method)) if holds else None
    by_index = feature_ranking.set_index("feature_index").sort_index()
    order = feature_ranking["feature_index"].to_numpy()
    names = by_index["feature_name"].astype(str).tolist()
    grid = k_grid(ground_truth)
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
            "score_name": by_index.loc[chosen, "score_name"].to_numpy(),  # the score's meaning changes once carried
            "laplacian_score": ls[chosen],
        })
        if f"selection_frequency_{k}" in by_index:
            part["selection_frequency"] = by_index.loc[chosen, f"selection_frequency_{k}"].to_numpy()
            part["stable"] = evidence_at(feature_ranking, k, history_start, members, config.method).stable_mask()[chosen]
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def choose_k(selections: pd.DataFrame, feature_ranking: pd.DataFrame, selection: dict) -> dict:
    """k, the size of the list handed on: ``selection.k``, or with ``auto`` the largest k the members agree on.

    Returns
    -------
    k_choice : dict
        ``k``, ``reason`` (a sentence saying why) and, for ``auto``, the
        members' ``agreement`` at every k.
    """
    config = SelectionConfig.from_dict(selection)
    chosen = indices_by_k(selections)
    freq = frequencies(feature_ranking)
    if config.k == "auto" and not freq:
        raise ValueError("selection.k 'auto' needs several members (members.per_run 2 or more)")
    chosen_k = k_choice.choose_k(chosen, freq, config, len(feature_ranking))
    choice = {"k": chosen_k.k, "reason": chosen_k.reason}
    if config.k == "auto":
        choice["agreement"] = {str(k): value for k, value in chosen_k.agreement.items()}
    return choice


def list_at_k(selections: pd.DataFrame, k_choice: dict) -> pd.DataFrame:
    """The list: the selection at k, best first: rank, feature name, column index, score and what it is
    (``score_name``, as in feature_ranking.csv: a first run's own score, a carried run's mean rank), Laplacian
    score."""
    k = int(k_choice["k"])
    chosen = selections[selections["k"] == k]
    if chosen.empty:
        raise ValueError(f"k = {k} was not selected; selected k: {sorted(selections['k'].unique())}")
    columns = ["rank", "feature_name", "feature_index", "score", "score_name", "laplacian_score"]
    columns += [c for c in ("selection_frequency", "stable") if c in chosen]
    return chosen[columns].reset_index(drop=True)


def reduce_data(raw_data: FeatureTable, feature_list: pd.DataFrame, ground_truth: dict) -> pd.DataFrame:
    """The input table restricted to the selected columns: original values, names kept, best first.

    The sample id column, when the input has one, comes first, so the table
    joins back to anything keyed by sample. The input is read again here and
    must be the table the run selected from (same source, same fingerprint):
    a file replaced during the run is refused rather than mixed with a
    selection made from the old one.
    """
    selected_from = ground_truth.get("source")
    if selected_from is not None and raw_data.source != selected_from:
        raise DataValidationError(
            f"this run's list was selected from {selected_from}, and reduce_data reads that table again, but the "
            f"input now is {raw_data.source}. Give the run's input: --params input={selected_from}")
    expected = ground_truth.get("fingerprint")
    if expected is not None and raw_data.fingerprint() != expected:
        raise DataValidationError(
            f"{raw_data.source}: the input changed while this run was training (its values, feature names or "
            "sample ids differ from what was read at the start), so the selection no longer matches it. "
            "Run again on the new file.")
    X = as_numeric_matrix(raw_data.X, raw_data.source)
    columns = feature_list["feature_index"].to_numpy()
    reduced = pd.DataFrame(X[:, columns], columns=feature_list["feature_name"].tolist())
    if raw_data.sample_ids is not None:
        reduced.insert(0, raw_data.sample_id_name or "sample_id", list(raw_data.sample_ids))
    return reduced
