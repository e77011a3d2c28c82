"""The k-means protocol on the selections, when labels exist (docs/method.md §8)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.evaluation._protocol import best_k, evaluate_selections, informative_recall
from iclfs.method._config import EvaluationConfig
from iclfs.project._figures import accuracy_figure
from iclfs.project._frames import indices_by_k

METRICS = ("accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std", "informative_recall")


def evaluate_with_kmeans(
    standardized_data: np.ndarray,
    labels: dict,
    selections: pd.DataFrame,
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
    selections = indices_by_k(selections)
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


def summarize_evaluation(evaluation_table: pd.DataFrame) -> dict:
    """The best k by mean accuracy (ties: smaller k).

    Returns
    -------
    evaluation_summary : dict
        ``{"labels": bool, "best_k": ..., "best_accuracy_mean": ..., ...}``; without labels ``best_k`` is None
        and ``reason`` says why.
    """
    if "accuracy_mean" not in evaluation_table:
        return {"labels": False, "best_k": None, "reason": "no labels: the k-means protocol was skipped"}
    best = best_k(evaluation_table.to_dict("records"))
    return {"labels": True, "best_k": int(best["k"]), **{f"best_{m}": float(best[m]) for m in METRICS if m in best}}


def plot_accuracy_vs_k(evaluation_table: pd.DataFrame) -> plt.Figure:
    """Mean clustering accuracy (+- std) against k; a note when there are no labels."""
    return accuracy_figure(evaluation_table)
