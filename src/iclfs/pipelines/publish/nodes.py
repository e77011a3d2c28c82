"""Hand the selection to the next job: the named list, the reduced data, what changed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.core.preprocessing import FeatureTable, as_numeric_matrix
from iclfs.core.stability import compare_selections


def feature_list(selected_features: pd.DataFrame, select: dict) -> pd.DataFrame:
    """The selection for the production ``select.k``: rank, name, column index, score, Laplacian score."""
    k = select["k"]
    chosen = selected_features[selected_features["k"] == k]
    if chosen.empty:
        raise ValueError(f"select.k = {k} is not one of lgrc.k_values {sorted(selected_features['k'].unique())}")
    return chosen[["rank", "feature_name", "feature_index", "score", "laplacian_score"]].reset_index(drop=True)


def reduce_data(raw_data: FeatureTable, selected_feature_list: pd.DataFrame) -> pd.DataFrame:
    """The input table restricted to the selected columns (original values, names kept, best first)."""
    X = as_numeric_matrix(raw_data.X, raw_data.source)
    columns = selected_feature_list["feature_index"].to_numpy()
    return pd.DataFrame(X[:, columns], columns=selected_feature_list["feature_name"].tolist())


def compare_with_previous(selected_features: pd.DataFrame, previous_selected_features: pd.DataFrame) -> tuple[dict, dict]:
    """Per k: Jaccard overlap, rank correlation, entered and left features against the previous run.

    Returns:
        selection_stability: ``{"previous_version": ..., "per_k": {k: {...}}}``,
            or ``{"previous_version": None, "message": ...}`` on the first run.
        stability_metrics: MLflow metrics (Jaccard and rank correlation, step = k).
    """
    if previous_selected_features.empty:
        return {"previous_version": None, "message": "first run for this data source: nothing to compare"}, {}
    per_k = {}
    for k, group in selected_features.groupby("k"):
        before = previous_selected_features[previous_selected_features["k"] == k]
        if before.empty:
            per_k[int(k)] = {"message": f"k = {k} was not selected in the previous run"}
            continue
        per_k[int(k)] = compare_selections(before.sort_values("rank")["feature_name"].astype(str).tolist(),
                                           group.sort_values("rank")["feature_name"].astype(str).tolist())
    metrics = {
        name: [{"value": float(v[name]), "step": k} for k, v in per_k.items() if v.get(name) is not None]
        for name in ("jaccard", "rank_correlation")
    }
    summary = {"previous_version": previous_selected_features.attrs.get("version"), "per_k": per_k}
    return summary, {name: values for name, values in metrics.items() if values}


def plot_score_distribution(feature_ranking: pd.DataFrame, selected_feature_list: pd.DataFrame) -> plt.Figure:
    """Histogram of the ranking score, the top-k cut, and where the selected features fall."""
    k = len(selected_feature_list)
    scores = feature_ranking["score"].to_numpy()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.hist(scores, bins=min(80, max(10, len(scores) // 20)), color="0.7", label="all features")
    ax.axvline(scores[min(k, len(scores)) - 1], color="red", label=f"top-{k} cut")
    ax.plot(selected_feature_list["score"], np.zeros(k), "|", color="navy", markersize=14,
            label=f"selected (k = {k}, after LGRC)")
    ax.set_xlabel(f"feature score ({feature_ranking['score_name'].iloc[0]})")
    ax.set_ylabel("features")
    ax.legend()
    fig.tight_layout()
    return fig
