"""The catalog's tables as the method's arrays: shared by the stage nodes."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd


def k_grid(ground_truth: dict) -> list[int]:
    """The k grid this run's table gets, as ``data_processing`` worked it out once (``ground_truth["k_values"]``,
    :func:`iclfs.chain.check_for_data`)."""
    if "k_values" not in ground_truth:
        raise ValueError(f"the ground_truth of {ground_truth.get('source', 'this run')} has no k_values (it was "
                         "written before the grid was stored): run the data_processing stage again")
    return [int(k) for k in ground_truth["k_values"]]


def laplacian_vector(laplacian_scores: pd.DataFrame) -> np.ndarray:
    """The ``laplacian_scores`` artifact as a (d,) array in feature order."""
    return laplacian_scores.set_index("feature_index")["laplacian_score"].sort_index().to_numpy()


def indices_by_k(selections: pd.DataFrame) -> dict[int, np.ndarray]:
    """The ``selections`` artifact as ``{k: feature indices, best first}``."""
    return {int(k): group.sort_values("rank")["feature_index"].to_numpy()
            for k, group in selections.groupby("k")}


def frequencies(feature_ranking: pd.DataFrame) -> dict[int, np.ndarray]:
    """``{k: (d,) selection frequency}`` (the share of the members whose first k include each feature) from
    ``feature_ranking``'s ``selection_frequency_<k>`` columns."""
    by_index = feature_ranking.sort_values("feature_index")
    prefix = "selection_frequency_"
    return {int(c[len(prefix):]): by_index[c].to_numpy() for c in feature_ranking.columns
            if c.startswith(prefix) and c[len(prefix):].isdigit()}


def evidence_at(feature_ranking: pd.DataFrame, k: int, history_start: Mapping, members: Mapping | None,
                method: str):
    """The evidence of the list at ``k`` (docs/method.md §10) from the ``feature_ranking`` artifact: its
    ``selection_frequency_<k>`` and ``members``; the members are carried from earlier runs when the run's start
    holds its lists (``history_start["holds"]``)."""
    from iclfs.chain import has_members
    from iclfs.method._config import MembersConfig
    from iclfs.method._evidence import run_evidence

    count = int(feature_ranking["members"].iloc[0]) if has_members(method) else 0
    return run_evidence(frequencies(feature_ranking)[k], k, count, MembersConfig.from_dict(members),
                        int(bool(history_start.get("holds"))))


def partitions(loaded: Mapping[str, Callable[[], pd.DataFrame] | pd.DataFrame] | None) -> dict[str, pd.DataFrame]:
    """A ``PartitionedDataset``'s load (``{partition: load function}``) as ``{partition: table}``."""
    return {key: value() if callable(value) else value for key, value in (loaded or {}).items()}


def lists_by_name(selections: pd.DataFrame) -> dict[int, list[str]]:
    """The ``selections`` artifact as ``{k: feature names, best first}`` (empty for an empty table)."""
    if selections is None or selections.empty:
        return {}
    return {int(k): group.sort_values("rank")["feature_name"].astype(str).tolist()
            for k, group in selections.groupby("k")}


def previous_of(previous: pd.DataFrame, method: str | None, count: int = 1) -> pd.DataFrame:
    """The rows of ``method``'s ``count`` newest versions in a previous-versions table
    (:class:`iclfs.io.datasets.PreviousVersionDataset`), oldest first; ``attrs["version"]`` the newest; of any
    method with None. Empty when there is none."""
    if previous is None or previous.empty:
        return pd.DataFrame()
    rows = previous if "method" not in previous or method is None else previous[previous["method"] == method]
    if "version" not in rows or rows.empty:
        return rows.copy()
    versions = sorted(rows["version"].unique())[-count:]
    chosen = rows[rows["version"].isin(versions)].reset_index(drop=True)
    chosen.attrs["version"] = versions[-1]
    return chosen
