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
    added in parentheses; a schedule other than ``paper``, ``bf16`` precision
    and the published code's random draws (``views.stream: reference``) in
    brackets (``ICLFS [fast, bf16]``, ``ICLFS [reference stream]``).
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
    tags = [schedule] if schedule != "paper" else []
    # tf32 is fast's default on CUDA; bf16 is the opt-in that changes the network's arithmetic.
    if parameters["training"].get("precision", "auto") == "bf16":
        tags.append("bf16")
    # The same method drawn from another random stream: its own row, never replacing the default stream's.
    if parameters["views"].get("stream", "vectorized") == "reference":
        tags.append("reference stream")
    return name + (f" [{', '.join(tags)}]" if tags else "")


def rank_baselines(
    standardized_data: np.ndarray,
    labels: dict,
    laplacian_scores: pd.DataFrame,
    benchmark: dict,
    lgrc: dict,
    seed: int,
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Every baseline's ranking of the features, on the same standardized data as ICLFS.

    LS reuses the Laplacian scores of the ``laplacian`` stage (SPEC §6).
    MCFS and NDFS are told the number of classes, as is usual for them.
    MCFS fits once per k of ``lgrc.k_values`` (k <= d), as its paper does
    (see :func:`iclfs.core.baselines.mcfs_selections`).

    Returns:
        baseline_rankings: ``{parameter key: (d,) int64 ranking}``; ``random``
            is (n_seeds, d), one permutation per seed; a method that selects
            per k has one ranking per k instead, keyed ``"<key>@<k>"``
            (``mcfs@50``), whose first k are its selection; ``all_features``
            is absent (it ranks nothing).
        baseline_seconds: ``{parameter key: seconds to compute its ranking(s)}``.
    """
    unknown = sorted(set(benchmark["baselines"]) - set(BASELINE_NAMES))
    if unknown:
        raise ValueError(f"unknown benchmark.baselines {unknown}; known: {sorted(BASELINE_NAMES)}")
    codes = np.asarray(labels["codes"])
    X = np.asarray(standardized_data, dtype=np.float64)
    n_clusters = len(np.unique(codes)) if codes.size else None
    k_values = _k_values(lgrc, X.shape[1])
    rankings: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    for key in benchmark["baselines"]:
        started = time.perf_counter()
        if key in ("mcfs", "ndfs") and n_clusters is None:
            raise ValueError(f"benchmark baseline {key} needs labels (the number of classes); the data has none")
        if key == "laplacian_score":
            ls = laplacian_scores.set_index("feature_index")["laplacian_score"].sort_index().to_numpy()
            rankings[key] = baselines.rank_ascending(ls)
        elif key == "spec":
            rankings[key] = baselines.spec_ranking(X, **benchmark.get("spec", {}))
        elif key == "mcfs":
            per_k = baselines.mcfs_selections(X, n_clusters, k_values, **benchmark.get("mcfs", {}))
            rankings.update({_per_k_key(key, k): ranking for k, ranking in per_k.items()})
        elif key == "ndfs":
            rankings[key] = baselines.ndfs_ranking(X, n_clusters, **benchmark.get("ndfs", {}))
        elif key == "random":
            rankings[key] = baselines.random_rankings(X.shape[1], int(benchmark["random_seeds"]), seed=seed)
        seconds[key] = time.perf_counter() - started
    return rankings, seconds


def _k_values(lgrc: dict, d: int) -> list[int]:
    """The protocol's k list: ``lgrc.k_values`` up to d, ascending."""
    return sorted(int(k) for k in lgrc["k_values"] if k <= d)


def _per_k_key(key: str, k: int) -> str:
    return f"{key}@{k}"


def _baseline_ranking(rankings: dict[str, np.ndarray], key: str, k: int) -> np.ndarray:
    """The ranking(s) whose first k are ``key``'s selection at k: (n_rankings, d)."""
    for name in (_per_k_key(key, k), key):
        if name in rankings:
            return np.atleast_2d(rankings[name])
    raise ValueError(f"baseline_rankings has no ranking for {key} at k = {k} (keys: {sorted(rankings)}); "
                     "rerun rank_baselines with the same lgrc.k_values")


def _versions() -> str:
    return " ".join(f"{package}={version(package)}" for package in ("iclfs", "torch", "kedro", "scikit-learn"))


_ROW_COLUMNS = ("method", "k", "accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std", "n_runs", "seconds",
                "evaluation_seconds")


def _row(method: str, k: int, acc: np.ndarray, nmi: np.ndarray, seconds: float, evaluation_seconds: float) -> dict:
    values = (method, int(k), float(acc.mean()), float(acc.std()), float(nmi.mean()), float(nmi.std()),
              int(acc.size), float(seconds), float(evaluation_seconds))
    return dict(zip(_ROW_COLUMNS, values, strict=True))


def _protocol(X: np.ndarray, codes: np.ndarray, columns: np.ndarray, parameters: dict):
    started = time.perf_counter()
    acc, nmi = kmeans_scores(X[:, columns], codes, n_runs=int(parameters["evaluation"]["n_runs"]),
                             seed=int(parameters["seed"]))
    return acc, nmi, time.perf_counter() - started


def _labelled(standardized_data: np.ndarray, labels: dict, ground_truth: dict) -> tuple[np.ndarray, np.ndarray, str]:
    codes = np.asarray(labels["codes"])
    source = str(ground_truth.get("source", "data"))
    if codes.size == 0:
        raise ValueError(f"the benchmark needs class labels to score clusterings; {source} has none")
    return np.asarray(standardized_data), codes, source


def _table(rows: list[dict], source: str, parameters: dict, device: str, schedule: str, epochs: int) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=list(_ROW_COLUMNS))
    table["dataset"] = PurePath(source).stem
    table["seed"] = int(parameters["seed"])
    table["device"] = device
    table["schedule"] = schedule
    table["epochs"] = int(epochs)
    table["run_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    table["versions"] = _versions()
    return table[RESULT_COLUMNS]


def evaluate_iclfs(
    standardized_data: np.ndarray,
    labels: dict,
    ground_truth: dict,
    selected_features: pd.DataFrame,
    training_history: pd.DataFrame,
    parameters: dict,
) -> pd.DataFrame:
    """This run's ICLFS selection at every k through the k-means protocol (SPEC §8): one row per k.

    ``seconds`` is the training time; device and schedule are the training's.

    Returns:
        The columns of :data:`RESULT_COLUMNS`, method :func:`iclfs_variant`.
    """
    X, codes, source = _labelled(standardized_data, labels, ground_truth)
    method = iclfs_variant(parameters)
    training_seconds = float(training_history["seconds"].sum())
    rows = []
    for k, group in selected_features.groupby("k"):
        acc, nmi, spent = _protocol(X, codes, group.sort_values("rank")["feature_index"].to_numpy(), parameters)
        rows.append(_row(method, k, acc, nmi, training_seconds, spent))
    return _table(rows, source, parameters, device=str(training_history["device"].iloc[0]),
                  schedule=str(training_history["schedule"].iloc[0]), epochs=parameters["training"]["epochs"])


def evaluate_baselines(
    standardized_data: np.ndarray,
    labels: dict,
    ground_truth: dict,
    baseline_rankings: dict[str, np.ndarray],
    baseline_seconds: dict[str, float],
    parameters: dict,
) -> pd.DataFrame:
    """Every baseline of ``benchmark.baselines`` through the same protocol: one row per method and k.

    ``random`` pools its runs over all its seeds; ``all features`` has one
    row, k = d. ``seconds`` is the time to rank. Baselines run in numpy, so
    their rows say device ``cpu``, schedule ``none`` and 0 epochs.

    Returns:
        The columns of :data:`RESULT_COLUMNS`.
    """
    X, codes, source = _labelled(standardized_data, labels, ground_truth)
    d = X.shape[1]
    rows = []
    for key in parameters["benchmark"]["baselines"]:
        name = BASELINE_NAMES[key]
        if key == "all_features":
            acc, nmi, spent = _protocol(X, codes, np.arange(d), parameters)
            rows.append(_row(name, d, acc, nmi, 0.0, spent))
            continue
        for k in _k_values(parameters["lgrc"], d):
            runs = [_protocol(X, codes, r[:k], parameters) for r in _baseline_ranking(baseline_rankings, key, k)]
            acc = np.concatenate([r[0] for r in runs])
            nmi = np.concatenate([r[1] for r in runs])
            rows.append(_row(name, k, acc, nmi, baseline_seconds[key], sum(r[2] for r in runs)))
    return _table(rows, source, parameters, device="cpu", schedule="none", epochs=0)


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
    seeded ``seed + r``: :func:`evaluate_iclfs`'s rows, then
    :func:`evaluate_baselines`'s.

    Returns:
        The columns of :data:`RESULT_COLUMNS`.
    """
    data = (standardized_data, labels, ground_truth)
    return pd.concat([evaluate_iclfs(*data, selected_features, training_history, parameters),
                      evaluate_baselines(*data, baseline_rankings, baseline_seconds, parameters)],
                     ignore_index=True)


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
