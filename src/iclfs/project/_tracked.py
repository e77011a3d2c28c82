"""What a run logs to its MLflow run when it ends (:class:`iclfs.project._tracking.TrackingHook`).

Metrics under plain names at the list's k (``accuracy``, ``jaccard``,
``nogueira_lists`` ...), what changed in the table (``table.features_added``
...), the training loss by epoch, and every k's values as the table artifact
``tables/metrics_per_k.csv`` (never as steps); the seed each member trained
from; the input as an MLflow dataset; the catalog entries whose metadata names
an ``mlflow_artifact_path``, as this run wrote them (no figure of nothing:
accuracy against k only when labels exist).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iclfs.io._kedro import artifact_folder, save_version, version_file
from iclfs.io.datasets._versioned import VersionedArtifact

METADATA_KEY = "mlflow_artifact_path"
AIRFLOW = {"AIRFLOW_CTX_DAG_ID": "airflow.dag_id", "AIRFLOW_CTX_DAG_RUN_ID": "airflow.run_id",
           "AIRFLOW_CTX_TRY_NUMBER": "airflow.try_number", "AIRFLOW_CTX_EXECUTION_DATE": "airflow.logical_date",
           "AIRFLOW_CTX_LOGICAL_DATE": "airflow.logical_date"}  # Airflow 3's name last: it wins


def runner_name(text: Any) -> str:
    """``SequentialRunner`` from ``<kedro.runner.sequential_runner.SequentialRunner object at 0x...>`` (None too)."""
    text = "SequentialRunner" if str(text) in ("", "None") else str(text)  # None: Kedro's default runner
    found = re.search(r"([A-Za-z_][A-Za-z0-9_]*)(?: object at 0x[0-9a-f]+)?>?$", text)
    return found.group(1) if found else str(text)


def run_tags(run_params: dict, catalog: Any, method: str, pipelines: list[str]) -> tuple[str, dict[str, str]]:
    """The run's name, ``<data source> · <method> · <version>`` (a benchmark's: ``benchmark · <version>``), and
    its tags: those, the pipeline, the runner, iclfs's version, the thread policy in force in this process (a
    slow run is read beside it), and Airflow's DAG, run, try and logical date."""
    from iclfs import __version__, _threads

    version = str(run_params.get("run_id") or run_params.get("session_id") or "")
    source = _source(catalog) or "benchmark"
    tags = {"data_source": source, "method": method, "version": version, "pipeline": ",".join(pipelines),
            "runner": runner_name(run_params.get("runner")), "iclfs_version": __version__,
            "thread_policy": _threads.summary(_threads.APPLIED)}
    tags.update({tag: os.environ[name] for name, tag in AIRFLOW.items() if os.environ.get(name)})
    benchmark = any(name.startswith("benchmark") for name in pipelines)
    return (f"benchmark · {version}" if benchmark else f"{source} · {method} · {version}"), tags


def _source(catalog: Any) -> str | None:
    return artifact_folder(catalog.get("run_record")).parent.name if "run_record" in catalog else None


def log_outputs(outputs: set, catalog: Any, method: str, benchmark: bool) -> None:
    """Log what a run of ``method`` saved (``outputs``, read back through ``catalog``) to the active MLflow run."""
    import mlflow

    def saved(name: str) -> Any:
        return catalog.load(name) if name in outputs and name in catalog else None

    metrics, per_k = run_metrics(saved)
    if metrics:
        mlflow.log_metrics(metrics)
    log = saved("training_log")
    if not benchmark and log is not None and "member_seed" in log:
        seeds = log.drop_duplicates("member")["member_seed"].astype("int64").tolist()
        mlflow.log_params({"seed": seeds[0], "member_seeds": ",".join(map(str, seeds))})
    for name in sorted(n for n in outputs if n == "training_log" or str(n).endswith(".training_log")):
        log = saved(name)  # a benchmark's are one per dataset (COIL20.training_log: COIL20.loss)
        if log is not None and "loss" in log and log["loss"].notna().any() and "epoch" in log:
            for epoch, loss in log.groupby("epoch")["loss"].mean().items():
                if np.isfinite(loss):
                    mlflow.log_metric(name[: -len("training_log")] + "loss", float(loss), step=int(epoch))
    if per_k is not None and not per_k.empty:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "metrics_per_k.csv"
            per_k.to_csv(path, index=False)
            mlflow.log_artifact(str(path), artifact_path="tables")
    log_input(saved, catalog)
    for name in sorted(outputs):
        if name == "accuracy_vs_k" and not (saved("evaluation_summary") or {}).get("labels"):
            continue  # no labels: the figure would show nothing
        if str(name).endswith("model_state") and method != "iclfs":
            continue  # another method trains no model: its state is empty
        _log_artifact(name, catalog)
    for name in sorted(n for n in outputs if str(n).endswith("_cells")):
        mlflow.log_metrics(cell_metrics(saved(name)))


def _log_artifact(name: str, catalog: Any) -> None:
    import mlflow

    dataset = catalog.get(name) if name in catalog else None
    metadata = getattr(dataset, "metadata", None) or {}
    if METADATA_KEY not in metadata or not isinstance(dataset, VersionedArtifact):
        return
    path = version_file(dataset, save_version(dataset))
    if path.is_dir():  # a dict of figures saves one file per key
        mlflow.log_artifacts(str(path), artifact_path=metadata[METADATA_KEY] or None)
    elif path.is_file():
        mlflow.log_artifact(str(path), artifact_path=metadata[METADATA_KEY] or None)


def run_metrics(saved: Any) -> tuple[dict[str, float], pd.DataFrame | None]:
    """The run's headline metrics at k, under plain names, and every k's values as one table."""
    metrics: dict[str, float] = {}
    choice = saved("k_choice")
    k = int(choice["k"]) if choice else None
    if k is not None:
        metrics["k"] = float(k)
    standardized = saved("standardized_data")
    if standardized is not None:
        metrics["samples"], metrics["features"] = map(float, standardized.shape)
    ranking = saved("feature_ranking")
    if ranking is not None:
        metrics["members"] = float(ranking["members"].iloc[0])  # the members the order combines
    per_k = None
    table = saved("evaluation_table")
    if table is not None and "k" in table:
        per_k = table.copy()
        if k is not None and "accuracy_mean" in table and (table["k"] == k).any():
            row = table[table["k"] == k].iloc[0]
            metrics["accuracy"] = float(row["accuracy_mean"])
            metrics["nmi"] = float(row["nmi_mean"])
    summary = saved("evaluation_summary") or {}
    if summary.get("labels"):
        metrics["best_k"] = float(summary["best_k"])
        metrics["best_accuracy"] = float(summary["best_accuracy_mean"])
    stability = saved("selection_stability") or {}
    rows = stability.get("per_k") or {}
    if rows:
        compared = pd.DataFrame([{"k": int(key), **{m: row.get(m) for m in ("jaccard", "rank_correlation")}}
                                 for key, row in rows.items()])
        per_k = compared if per_k is None else per_k.merge(compared, on="k", how="outer")
        row = rows.get(k) or rows.get(str(k)) or {}
        for name in ("jaccard", "rank_correlation"):
            if row.get(name) is not None:
                metrics[name] = float(row[name])
    changes = stability.get("changes") or {}
    for key in ("features_dropped", "features_added", "samples_added", "samples_removed"):
        if changes.get(key) is not None:
            metrics[f"table.{key}"] = float(changes[key])
    history = stability.get("history") or {}
    if history.get("new_features") is not None:
        metrics["table.features_new_to_members"] = float(history["new_features"])
    evidence = stability.get("evidence") or {}
    if evidence.get("members"):  # docs/method.md §10; a bound only where the list claims evidence
        metrics["stable_features"] = float(evidence["stable_count"])
        if evidence.get("claims"):
            metrics["expected_false_selections_bound"] = float(evidence["bound"])
    signal = stability.get("signal") or {}
    if "above_chance" in signal:
        metrics["members_above_chance"] = float(signal["above_chance"])
    for key, value in (stability.get("nogueira") or {}).items():
        if isinstance(value, dict) and value.get("phi") is not None:
            for part in ("phi", "lower", "upper"):
                if value.get(part) is not None:
                    metrics[f"nogueira_{key}" + ("" if part == "phi" else f"_{part}")] = float(value[part])
    return {name: value for name, value in metrics.items() if np.isfinite(value)}, per_k


def cell_metrics(cells: Any) -> dict[str, float]:
    """A benchmark run's cells as metrics named by dataset and method: the best k's mean accuracy."""
    out = {}
    for table in (cells or {}).values():
        table = table() if callable(table) else table
        if table is None or table.empty:
            continue
        method = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(table["method"].iloc[0])).strip("_")
        out[f"{table['dataset'].iloc[0]}.{method}.best_accuracy"] = float(table["accuracy_mean"].max())
    return out


def log_input(saved: Any, catalog: Any) -> None:
    """The run's input table as an MLflow dataset: its data source, file, fingerprint and shape."""
    import mlflow

    truth = saved("ground_truth")
    standardized = saved("standardized_data")
    if truth is None or standardized is None:
        return
    name = _source(catalog) or "input"
    dataset = mlflow.data.from_numpy(np.asarray(standardized, dtype=np.float32),
                                     source=str(truth.get("source") or "embedded synthetic table"), name=name,
                                     digest=str(truth.get("fingerprint") or "")[:16] or None)
    mlflow.log_input(dataset, context="input")
