"""One benchmark dataset: the baselines, and every method under the same k-means protocol (SPEC §8)."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import PurePath

import numpy as np
import pandas as pd

from iclfs.core import baselines
from iclfs.core.evaluation import kmeans_scores

# Parameter key -> the method's name in every table, figure and MLflow metric.
BASELINE_NAMES = {
    "laplacian_score": "LS",
    "spec": "SPEC",
    "mcfs": "MCFS",
    "ndfs": "NDFS",
    "random": "random",
    "all_features": "all features",
}
# Letters of the paper's progressive ablation names, in the paper's order.
_ABLATION_LETTERS = (("L", "lgrc"), ("D", "decorrelation"), ("A", "attention"), ("R", "random view"))
RESULT_COLUMNS = ["dataset", "method", "k", "accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std", "n_runs",
                  "seconds", "evaluation_seconds", "seed", "device", "schedule", "epochs", "run_at", "versions"]


def iclfs_variant(parameters: dict) -> str:
    """The method name of this run's ICLFS configuration.

    ``ICLFS`` for the full model; the paper's ablation names otherwise: ``W`` +
    ``L`` (LGRC off), ``D`` (decorrelation off), ``A`` (attention off), ``R``
    (one random-masked view), e.g. ``ICLFS-WLD``. A score other than z-norm is
    added in parentheses, a schedule other than ``paper`` in brackets.
    """
    off = {
        "lgrc": not parameters["lgrc"].get("enabled", True),
        "decorrelation": not parameters["training"].get("use_decorrelation", True),
        "attention": not parameters["training"].get("use_attention", True),
        "random view": parameters["views"].get("positives", "structured") == "random",
    }
    letters = "".join(letter for letter, part in _ABLATION_LETTERS if off[part])
    name = f"ICLFS-W{letters}" if letters else "ICLFS"
    score = parameters["ranking"].get("score", "z_norm")
    if score != "z_norm":
        name += f" ({score})"
    schedule = parameters["training"].get("schedule", "paper")
    if schedule != "paper":
        name += f" [{schedule}]"
    return name


def rank_baselines(
    standardized_data: np.ndarray, labels: dict, laplacian_scores: pd.DataFrame, benchmark: dict, seed: int
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Every baseline's ranking of the features, on the same standardized data as ICLFS.

    LS reuses the Laplacian scores of the ``laplacian`` stage (SPEC §6).
    MCFS and NDFS are told the number of classes, as is usual for them.

    Returns:
        baseline_rankings: ``{parameter key: (d,) int64 ranking}``; ``random``
            is (n_seeds, d), one permutation per seed; ``all_features`` is absent
            (it ranks nothing).
        baseline_seconds: ``{parameter key: seconds to compute its ranking}``.
    """
    unknown = sorted(set(benchmark["baselines"]) - set(BASELINE_NAMES))
    if unknown:
        raise ValueError(f"unknown benchmark.baselines {unknown}; known: {sorted(BASELINE_NAMES)}")
    codes = np.asarray(labels["codes"])
    X = np.asarray(standardized_data, dtype=np.float64)
    n_clusters = len(np.unique(codes)) if codes.size else None
    rankings: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    for key in benchmark["baselines"]:
        started = time.perf_counter()
        if key == "laplacian_score":
            ls = laplacian_scores.set_index("feature_index")["laplacian_score"].sort_index().to_numpy()
            rankings[key] = baselines.rank_ascending(ls)
        elif key == "spec":
            rankings[key] = baselines.spec_ranking(X, **benchmark.get("spec", {}))
        elif key in ("mcfs", "ndfs"):
            if n_clusters is None:
                raise ValueError(f"benchmark baseline {key} needs labels (the number of classes); the data has none")
            rank = baselines.mcfs_ranking if key == "mcfs" else baselines.ndfs_ranking
            rankings[key] = rank(X, n_clusters, **benchmark.get(key, {}))
        elif key == "random":
            rankings[key] = baselines.random_rankings(X.shape[1], int(benchmark["random_seeds"]), seed=seed)
        seconds[key] = time.perf_counter() - started
    return rankings, seconds


def _versions() -> str:
    return " ".join(f"{package}={version(package)}" for package in ("iclfs", "torch", "kedro", "scikit-learn"))


def _row(method: str, k: int, acc: np.ndarray, nmi: np.ndarray, seconds: float, evaluation_seconds: float) -> dict:
    return {"method": method, "k": int(k), "accuracy_mean": float(acc.mean()), "accuracy_std": float(acc.std()),
            "nmi_mean": float(nmi.mean()), "nmi_std": float(nmi.std()), "n_runs": int(acc.size),
            "seconds": float(seconds), "evaluation_seconds": float(evaluation_seconds)}


def evaluate_methods(
    standardized_data: np.ndarray,
    labels: dict,
    ground_truth: dict,
    selected_features: pd.DataFrame,
    training_history: pd.DataFrame,
    baseline_rankings: dict[str, np.ndarray],
    baseline_seconds: dict[str, float],
    parameters: dict,
) -> pd.DataFrame:
    """ICLFS and every baseline through one k-means protocol: one row per method and k.

    Every method gets the same standardized data, the same k list
    (``lgrc.k_values``, k <= d) and the same ``evaluation.n_runs`` k-means runs
    seeded ``seed + r``. ``random`` pools its runs over all its seeds;
    ``all features`` has one row, k = d. ICLFS's ``seconds`` is its training
    time; a baseline's is the time to rank.

    Returns:
        The columns of :data:`RESULT_COLUMNS`.
    """
    codes = np.asarray(labels["codes"])
    source = str(ground_truth.get("source", "data"))
    if codes.size == 0:
        raise ValueError(f"the benchmark needs class labels to score clusterings; {source} has none")
    X = np.asarray(standardized_data)
    d = X.shape[1]
    n_runs, seed = int(parameters["evaluation"]["n_runs"]), int(parameters["seed"])
    k_values = sorted(k for k in parameters["lgrc"]["k_values"] if k <= d)

    def protocol(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        started = time.perf_counter()
        acc, nmi = kmeans_scores(X[:, columns], codes, n_runs=n_runs, seed=seed)
        return acc, nmi, time.perf_counter() - started

    rows = []
    method = iclfs_variant(parameters)
    training_seconds = float(training_history["seconds"].sum())
    for k, group in selected_features.groupby("k"):
        acc, nmi, spent = protocol(group.sort_values("rank")["feature_index"].to_numpy())
        rows.append(_row(method, k, acc, nmi, training_seconds, spent))

    for key in parameters["benchmark"]["baselines"]:
        name = BASELINE_NAMES[key]
        if key == "all_features":
            acc, nmi, spent = protocol(np.arange(d))
            rows.append(_row(name, d, acc, nmi, 0.0, spent))
            continue
        ranking = np.atleast_2d(baseline_rankings[key])
        for k in k_values:
            runs = [protocol(r[:k]) for r in ranking]
            acc = np.concatenate([r[0] for r in runs])
            nmi = np.concatenate([r[1] for r in runs])
            rows.append(_row(name, k, acc, nmi, baseline_seconds[key], sum(r[2] for r in runs)))

    table = pd.DataFrame(rows)
    table["dataset"] = PurePath(source).stem
    table["seed"] = seed
    table["device"] = str(training_history["device"].iloc[0])
    table["schedule"] = str(training_history["schedule"].iloc[0])
    table["epochs"] = int(parameters["training"]["epochs"])
    table["run_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    table["versions"] = _versions()
    return table[RESULT_COLUMNS]


def merge_results(benchmark_evaluation: pd.DataFrame, previous_result: pd.DataFrame) -> pd.DataFrame:
    """The dataset's result table: earlier rows, with this run's (method, seed) rows replacing theirs.

    So an ablation or a second seed adds rows instead of wiping the table.
    """
    if previous_result is None or previous_result.empty:
        merged = benchmark_evaluation
    else:
        missing = sorted(set(RESULT_COLUMNS) - set(previous_result.columns))
        if missing:
            raise ValueError(f"the existing benchmark result table lacks columns {missing}; move it aside and rerun")
        replaced = pd.MultiIndex.from_frame(benchmark_evaluation[["method", "seed"]].drop_duplicates())
        keep = ~pd.MultiIndex.from_frame(previous_result[["method", "seed"]]).isin(replaced)
        merged = pd.concat([previous_result.loc[keep, RESULT_COLUMNS], benchmark_evaluation], ignore_index=True)
    return merged.sort_values(["method", "seed", "k"], kind="stable").reset_index(drop=True)


def benchmark_metrics(benchmark_evaluation: pd.DataFrame) -> dict:
    """MLflow metrics: every method's mean accuracy per k (step k) and its best."""
    metrics: dict = {}
    for method, group in benchmark_evaluation.groupby("method"):
        key = "".join(c if c.isalnum() or c in "-_." else "_" for c in method)
        metrics[f"accuracy.{key}"] = [{"value": float(v), "step": int(k)}
                                      for k, v in zip(group["k"], group["accuracy_mean"], strict=True)]
        metrics[f"best_accuracy.{key}"] = {"value": float(group["accuracy_mean"].max()), "step": 0}
    return metrics
