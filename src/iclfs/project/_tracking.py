"""Every run is one MLflow run (docs/guides/tracking.md).

:class:`TrackingHook` opens one MLflow run when a pipeline starts and closes
it when it ends: a ``kedro run``, a run of the packaged job and a scheduled
refresh (the Airflow DAG's one task) each make one. The run is named
``<data source> · <method> · <version>``, the version being the run's
artifact version. It holds:

* **parameters**: the seed, ``selection`` and, for ICLFS, the sections of
  the method (``training``, ``views``, ``members``, ``ranking``,
  ``laplacian``, ``runtime``); for another method its own options
  (``baselines.<method>``): never another method's;
* **tags**: the pipeline, the runner's class, the project's folder, the Kedro environment, the
  data source, the method, the versions of iclfs and Kedro, and a
  scheduler's run (``AIRFLOW_CTX_*``);
* **the input** as an MLflow dataset: the data source's name, the file, the
  table's fingerprint and its shape;
* **metrics** under plain names, at the list's k (``accuracy``, ``jaccard``,
  ``nogueira_lists`` ...), what changed in the table (``table.features_added``
  ...), and the training loss by epoch; every k's values
  in the table artifact ``tables/metrics_per_k.csv``, never as steps;
* **artifacts**: the catalog entries whose metadata names an
  ``mlflow_artifact_path``, as this run wrote them (no figure of nothing:
  accuracy against k only when labels exist).

The tracking store is checked before anything is written
(:func:`check_tracking_store`): a server that does not answer or answers an
error, a SQLite file that is read-only, damaged or a folder each stop the run
with one message that names the URI (never its password) and the fix.
``conf/base/mlflow.yml`` names the store and the experiment.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import sqlite3
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from kedro.config import MissingConfigException
from kedro.framework.hooks import hook_impl

from iclfs.io._kedro import artifact_folder, save_version, version_file
from iclfs.io.datasets._versioned import VersionedArtifact
from iclfs.method._config import ParameterError

from ._runs import pipelines_run

LOGGER = logging.getLogger(__name__)
METADATA_KEY = "mlflow_artifact_path"
DEFAULT_URI = "sqlite:///mlflow.db"
DEFAULT_EXPERIMENT = "iclfs"
#: How long a tracking server may take to answer, and how often MLflow's client tries again, for this run
#: (where the user has not set them): a server that never answers fails the run in seconds, not in 7 x 120 s.
MLFLOW_TIMEOUTS = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "10", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1"}
CONNECT_TIMEOUT = 5.0
#: The sections of the Settings an ICLFS run depends on (another method: its options and these two).
ICLFS_SECTIONS = ("training", "views", "members", "ranking", "laplacian", "runtime", "evaluation")
OTHER_SECTIONS = ("laplacian", "runtime", "evaluation")


class TrackingUnavailableError(ConnectionError):
    """The MLflow tracking store cannot take this run; the message names the URI and the fix."""


def mask_credentials(uri: str) -> str:
    """``uri`` with any ``user:password@`` replaced by ``***@``, fit to print or log."""
    parts = urllib.parse.urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


_ADVICE = ("Nothing was run. Fix it, or track in a local file: tracking_uri: sqlite:///mlflow.db in "
           "conf/local/mlflow.yml.")


def _refuse(uri: str, problem: str) -> TrackingUnavailableError:
    return TrackingUnavailableError(f"the MLflow tracking store {mask_credentials(uri)} (tracking_uri in "
                                    f"mlflow.yml) {problem}. {_ADVICE}")


def check_tracking_store(uri: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise :class:`TrackingUnavailableError` when the store at ``uri`` cannot take a run; nothing is written.

    ``http(s)``: the server must accept a connection and answer ``/health``
    without an error within ``timeout`` seconds. ``sqlite``: the file must be a
    SQLite database (or not exist yet, in a folder this process may write), and
    writable. ``file`` (``./mlruns``): refused, as MLflow refuses it. Other
    schemes are left to MLflow.
    """
    scheme = urllib.parse.urlsplit(uri).scheme
    if scheme in ("http", "https"):
        _check_server(uri, timeout)
    elif scheme == "sqlite":
        _check_sqlite(uri)
    elif scheme in ("", "file"):
        raise _refuse(uri, "is a folder store, which MLflow 3 no longer opens")


def _check_server(uri: str, timeout: float) -> None:
    for key, value in MLFLOW_TIMEOUTS.items():
        os.environ.setdefault(key, value)
    parts = urllib.parse.urlsplit(uri)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as err:
        raise _refuse(uri, f"does not answer ({err.strerror or err})") from None
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path.rstrip("/"), "", ""))
    try:
        urllib.request.urlopen(f"{base}/health", timeout=timeout).close()  # noqa: S310  (the user's own server)
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            return  # it answered: its authentication is MLflow's to negotiate with the credentials given
        raise _refuse(uri, f"answers {err.code} {err.reason} at /health: it is not an MLflow server, or not at "
                           "this address (check the host, port and path)") from None
    except (OSError, TimeoutError) as err:
        raise _refuse(uri, f"accepts connections but does not answer within {timeout:g} s "
                           f"({getattr(err, 'reason', err)})") from None


def _sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite`` store; None for another scheme or an in-memory store."""
    if urllib.parse.urlsplit(uri).scheme != "sqlite":
        return None
    raw = uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else uri[len("sqlite://"):]
    return None if raw in ("", ":memory:") else Path(raw)


@contextlib.contextmanager
def _opened_alone(uri: str) -> Iterator[None]:
    """One process at a time opens a SQLite store. MLflow makes a new store's tables on first use, and two runs
    started together on a fresh project would both make them, and one fail ("table ... already exists"): the
    store's folder is locked meanwhile (no file of its own: a folder can be locked)."""
    path = _sqlite_path(uri)
    try:
        import fcntl
    except ImportError:  # pragma: no cover  (Windows: one first run at a time is the user's to keep)
        fcntl = None
    if path is None or fcntl is None:
        yield
        return
    handle = os.open(path.parent if str(path.parent) else ".", os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # lets go of the lock


def _check_sqlite(uri: str) -> None:
    path = _sqlite_path(uri)
    if path is None:
        return
    if path.is_dir():
        raise _refuse(uri, f"is a folder ({path}), not a SQLite file")
    if not path.exists():
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise _refuse(uri, f"cannot be created: the folder {folder} is not writable or does not exist")
        return
    with open(path, "rb") as handle:
        header = handle.read(16)
    if header and header != b"SQLite format 3\x00":
        raise _refuse(uri, f"is not a SQLite database ({path} is damaged or another kind of file)")
    if not os.access(path, os.W_OK) or not os.access(path.parent if str(path.parent) else Path("."), os.W_OK):
        raise _refuse(uri, f"is read-only ({path} or its folder cannot be written)")
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=CONNECT_TIMEOUT)) as db:
            db.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as err:
        raise _refuse(uri, f"cannot be read as a database ({err})") from None


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """A nested dict as ``{"a.b": value}``; lists as their text."""
    if not isinstance(tree, dict):
        return {prefix.rstrip("."): tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(flatten(value, f"{prefix}{key}."))
    return out


def method_parameters(parameters: dict) -> dict[str, Any]:
    """The parameters the run's method depends on, flattened: never another method's options."""
    selection = parameters.get("selection") or {}
    method = selection.get("method", "iclfs")
    chosen: dict[str, Any] = {"seed": parameters.get("seed"), "selection": selection}
    for section in ICLFS_SECTIONS if method == "iclfs" else OTHER_SECTIONS:
        if section in parameters:
            chosen[section] = parameters[section]
    if method != "iclfs":
        chosen["baselines"] = {method: (parameters.get("baselines") or {}).get(method) or {}}
    return {key: value for key, value in flatten(chosen).items() if value is not None}


def runner_name(text: str) -> str:
    """``SequentialRunner`` from Kedro's ``<kedro.runner.sequential_runner.SequentialRunner object at 0x...>``
    (and from ``None``: Kedro's default runner)."""
    if str(text) in ("", "None"):
        return "SequentialRunner"
    found = re.search(r"([A-Za-z_][A-Za-z0-9_]*)(?: object at 0x[0-9a-f]+)?>?$", str(text))
    return found.group(1) if found else str(text)


def _source_of(catalog: Any) -> str | None:
    if "run_record" not in catalog:
        return None
    return artifact_folder(catalog.get("run_record")).parent.name


class TrackingHook:
    """One MLflow run per pipeline run (module docstring)."""

    def __init__(self) -> None:
        self.uri = DEFAULT_URI
        self.experiment = DEFAULT_EXPERIMENT
        self.enabled = True
        self.env = "local"
        self.method = "iclfs"
        self._run = None
        self._pending: tuple | None = None  # the run to start with the first node: (name, tags, parameters)

    @hook_impl(tryfirst=True)
    def after_context_created(self, context: Any) -> None:
        loader = context.config_loader
        self.env = str(getattr(context, "env", None) or getattr(loader, "default_run_env", None) or "local")
        loader.config_patterns.setdefault("mlflow", ["mlflow*", "mlflow*/**", "**/mlflow*"])
        try:
            config = dict(loader["mlflow"])
        except MissingConfigException:
            config = {}
        unknown = sorted(set(config) - {"tracking_uri", "experiment", "enabled"})
        if unknown:  # kedro-mlflow's keys (server:, tracking:, ui:) would be ignored in silence
            raise ParameterError(
                f"mlflow.yml: unknown key(s) {', '.join(unknown)}; its keys are tracking_uri, experiment and enabled "
                "(docs/guides/tracking.md; kedro-mlflow's server.mlflow_tracking_uri is now tracking_uri)")
        self.uri = str(config.get("tracking_uri") or DEFAULT_URI)
        self.experiment = str(config.get("experiment") or DEFAULT_EXPERIMENT)
        self.enabled = bool(config.get("enabled", True))

    @hook_impl(tryfirst=True)
    def before_pipeline_run(self, run_params: dict, pipeline: Any, catalog: Any) -> None:
        """Check the store (an unreachable one refuses the run before anything), and name the run; it starts with
        the first node, after every check, so a refused run leaves no MLflow run."""
        self._run = self._pending = None
        if not self.enabled:
            return
        check_tracking_store(self.uri)

        parameters = catalog.load("parameters") if "parameters" in catalog else {}
        method = (parameters.get("selection") or {}).get("method", "iclfs")
        self.method = str(method)
        source = _source_of(catalog) or "benchmark"
        names = pipelines_run(run_params)
        benchmark = any(str(n).startswith("benchmark") for n in names)
        version = run_params.get("run_id") or run_params.get("session_id") or ""
        name = f"benchmark · {version}" if benchmark else f"{source} · {method} · {version}"
        tags = {"pipeline": ",".join(names), "runner": runner_name(run_params.get("runner", "")),
                "project_path": str(run_params.get("project_path")),
                "env": str(run_params.get("env") or self.env), "data_source": source, "method": method,
                "version": str(version), "kedro_version": str(run_params.get("kedro_version"))}
        given = run_params.get("runtime_params") or {}
        for key in ("input", "source", "orientation", "id_column", "label_column"):
            if given.get(key) not in (None, ""):
                tags[f"run.{key}"] = str(given[key])
        for variable, tag in (("AIRFLOW_CTX_DAG_ID", "airflow.dag_id"), ("AIRFLOW_CTX_DAG_RUN_ID", "airflow.run_id"),
                              ("AIRFLOW_CTX_TRY_NUMBER", "airflow.try_number")):
            if os.environ.get(variable):
                tags[tag] = os.environ[variable]
        from iclfs import __version__

        tags["iclfs_version"] = __version__
        self._pending = (name, tags, method_parameters(parameters))

    @hook_impl(tryfirst=True)
    def before_node_run(self, node: Any) -> None:
        if self._pending is None:
            return
        name, tags, params = self._pending
        self._pending = None
        import mlflow

        try:
            mlflow.set_tracking_uri(self.uri)
            with _opened_alone(self.uri):
                experiment = mlflow.get_experiment_by_name(self.experiment)
                if experiment is None:
                    with contextlib.suppress(Exception):  # a concurrent first run on a server may have made it
                        mlflow.create_experiment(self.experiment)
                    experiment = mlflow.get_experiment_by_name(self.experiment)
            self._run = mlflow.start_run(experiment_id=experiment.experiment_id, run_name=name, tags=tags)
            mlflow.log_params({key: str(value)[:6000] for key, value in params.items()})
        except Exception as err:  # noqa: BLE001  (any store fault: one message, nothing written)
            self._close("FAILED")
            raise _refuse(self.uri, f"could not start a run ({type(err).__name__}: {str(err)[:300]})") from None

    @hook_impl(trylast=True)
    def on_pipeline_error(self, error: Exception, run_params: dict, pipeline: Any, catalog: Any) -> None:
        self._close("FAILED")

    @hook_impl(tryfirst=True)
    def after_pipeline_run(self, run_params: dict, pipeline: Any, catalog: Any) -> None:
        if self._run is None:
            return
        try:
            self._log_outputs(pipeline.all_outputs(), catalog)
        except Exception as err:  # noqa: BLE001
            self._close("FAILED")
            raise _refuse(self.uri, f"failed while logging the run ({type(err).__name__}: {str(err)[:300]})"
                          ) from None
        self._close("FINISHED")

    def _close(self, status: str) -> None:
        if self._run is None:
            return
        import mlflow

        with contextlib.suppress(Exception):
            mlflow.end_run(status)
        self._run = None

    # -- what a run logs ------------------------------------------------------

    def _log_outputs(self, outputs: set, catalog: Any) -> None:
        import mlflow

        def saved(name: str) -> Any:
            return catalog.load(name) if name in outputs and name in catalog else None

        metrics, per_k = run_metrics(saved)
        if metrics:
            mlflow.log_metrics(metrics)
        for name in sorted(n for n in outputs if n == "training_log" or str(n).endswith(".training_log")):
            log = saved(name)  # a benchmark's are one per dataset (COIL20.training_log: COIL20.loss)
            if log is not None and "loss" in log and log["loss"].notna().any() and "epoch" in log:
                metric = name[: -len("training_log")] + "loss"
                for epoch, loss in log.groupby("epoch")["loss"].mean().items():
                    if np.isfinite(loss):
                        mlflow.log_metric(metric, float(loss), step=int(epoch))
        if per_k is not None and not per_k.empty:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "metrics_per_k.csv"
                per_k.to_csv(path, index=False)
                mlflow.log_artifact(str(path), artifact_path="tables")
        log_input(saved, catalog)
        for name in sorted(outputs):
            if name == "accuracy_vs_k" and not (saved("evaluation_summary") or {}).get("labels"):
                continue  # no labels: the figure would show nothing
            if str(name).endswith("model_state") and self.method != "iclfs":
                continue  # another method trains no model: its state is empty
            self._log_artifact(name, catalog)
        for name in sorted(n for n in outputs if str(n).endswith("_cells")):
            for metric, value in cell_metrics(saved(name)).items():
                mlflow.log_metric(metric, value)

    @staticmethod
    def _log_artifact(name: str, catalog: Any) -> None:
        import mlflow

        if name not in catalog:
            return
        dataset = catalog.get(name)
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
        members = [c for c in ranking.columns if c.startswith("member_") and c.endswith("_rank")]
        metrics["members"] = float(max(len(members), 1))
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
    source = str(truth.get("source") or "embedded synthetic table")
    name = _source_of(catalog) or "input"
    dataset = mlflow.data.from_numpy(np.asarray(standardized, dtype=np.float32), source=source, name=name,
                                     digest=str(truth.get("fingerprint") or "")[:16] or None)
    mlflow.log_input(dataset, context="input")
