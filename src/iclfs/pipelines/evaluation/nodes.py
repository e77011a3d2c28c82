"""The k-means protocol on the selections, when labels exist (docs/method.md §8)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.evaluation.protocol import best_k, evaluate_selections, informative_recall
from iclfs.method.config import EvaluationConfig
from iclfs.pipelines.figures import accuracy_figure
from iclfs.pipelines.frames import selections as selections_of

METRICS = ("accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std", "informative_recall")


def evaluate_with_kmeans(
    standardized_data: np.ndarray,
    labels: dict,
    selected_features: pd.DataFrame,
    ground_truth: dict,
    evaluation: dict,
    seed: int,
) -> pd.DataFrame:
    """One row per k: accuracy and NMI (mean, population std over the k-means
    runs) and, when the informative features are known, how many were selected.

    Without labels the accuracy/NMI columns are absent (only k and the recall
    columns, if any, remain).
    """
    config = EvaluationConfig.from_dict(evaluation)
    selections = selections_of(selected_features)
    informative = ground_truth.get("informative_features")
    if labels["codes"]:
        rows = evaluate_selections(standardized_data, np.asarray(labels["codes"]), selections, n_runs=config.n_runs,
                                   seed=seed, informative_features=informative)
        return pd.DataFrame(rows)
    table = pd.DataFrame({"k": sorted(selections)})
    if informative is not None:
        recalls = [informative_recall(selections[k], informative) for k in table["k"]]
        table["informative_recovered"] = [found for found, _ in recalls]
        table["informative_recall"] = [recall for _, recall in recalls]
    return table


def summarize_evaluation(evaluation_table: pd.DataFrame) -> tuple[dict, dict]:
    """The best k by mean accuracy (ties: smaller k), and the MLflow metrics.

    Returns
    -------
    evaluation_summary : dict
        ``{"labels": bool, "best_k": ..., ...}``.
    evaluation_metrics : dict
        ``{metric: [{"value": v, "step": k}, ...]}`` with ``best_*`` entries logged at step 0.
    """
    if "accuracy_mean" not in evaluation_table:
        summary = {"labels": False, "best_k": None, "reason": "no labels: the k-means protocol was skipped"}
    else:
        best = best_k(evaluation_table.to_dict("records"))
        summary = {"labels": True, "best_k": int(best["k"]),
                   **{f"best_{m}": float(best[m]) for m in METRICS if m in best}}
    metrics = {
        m: [{"value": float(row[m]), "step": int(row["k"])} for row in evaluation_table.to_dict("records")]
        for m in METRICS
        if m in evaluation_table
    }
    metrics.update({key: {"value": value, "step": 0} for key, value in summary.items()
                    if key.startswith("best_") and value is not None})
    return summary, metrics


def plot_accuracy_vs_k(evaluation_table: pd.DataFrame) -> plt.Figure:
    """Mean clustering accuracy (+- std) against k; a note when there are no labels."""
    return accuracy_figure(evaluation_table)
