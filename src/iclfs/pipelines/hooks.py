"""Project hooks.

:class:`ParameterCheckHook` builds every parameter section (:class:`iclfs.method.config.Settings`)
before the first node runs, so a bad value stops the run before anything is written.

:class:`OutputPreflightHook` checks, before the first node runs, that every
local file a pipeline will write can be created, so an unwritable folder
fails the run up front with the dataset and folder named.

:class:`MlflowPreflightHook` checks that an HTTP MLflow tracking server
answers before kedro-mlflow starts talking to it (its client would otherwise
retry for minutes and end in a deep traceback).

:class:`MlflowArtifactHook` logs a saved catalog artifact to the active MLflow
run when its catalog entry asks for it with::

    metadata:
      mlflow_artifact_path: plots   # folder inside the run's artifacts ("" for the root)

It logs the exact version file the run just wrote. It replaces
``kedro_mlflow``'s ``MlflowArtifactDataset`` wrapper, which gives the wrapped
dataset a save version of its own and so cannot wrap a versioned dataset.
"""

from __future__ import annotations

import logging
import os
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any

import mlflow
from kedro.config import MissingConfigException
from kedro.framework.hooks import hook_impl
from kedro.io import AbstractVersionedDataset

LOGGER = logging.getLogger(__name__)
METADATA_KEY = "mlflow_artifact_path"


class ParameterCheckHook:
    """Refuse to start a run whose parameters are invalid (every section, every key)."""

    @hook_impl(tryfirst=True)
    def before_pipeline_run(self, run_params: dict, pipeline: Any, catalog: Any) -> None:
        from iclfs.method.config import Settings

        Settings.from_parameters(catalog.load("parameters"))


def saved_path(dataset: Any) -> Path | None:
    """The local file a dataset's latest save wrote, or None if it has no file."""
    filepath = getattr(dataset, "_filepath", None)
    if filepath is None:
        return None
    if isinstance(dataset, AbstractVersionedDataset) and dataset._version is not None:
        return Path(str(dataset._get_versioned_path(dataset.resolve_save_version())))
    return Path(str(filepath))


class MlflowArtifactHook:
    """Log catalog artifacts marked with ``metadata.mlflow_artifact_path``."""

    def __init__(self) -> None:
        self._catalog = None

    @hook_impl
    def after_catalog_created(self, catalog: Any) -> None:
        self._catalog = catalog

    @hook_impl
    def after_dataset_saved(self, dataset_name: str, data: Any, node: Any) -> None:
        if self._catalog is None or mlflow.active_run() is None:
            return
        dataset = self._catalog.get(dataset_name)
        metadata = getattr(dataset, "metadata", None) or {}
        if METADATA_KEY not in metadata:
            return
        path = saved_path(dataset)
        if path is None or not path.exists():
            LOGGER.warning("Not logging %s to MLflow: no local file found (%s)", dataset_name, path)
            return
        if path.is_dir():  # a dict of figures saves one file per key
            mlflow.log_artifacts(str(path), artifact_path=metadata[METADATA_KEY] or None)
        else:
            mlflow.log_artifact(str(path), artifact_path=metadata[METADATA_KEY] or None)


class OutputNotWritableError(PermissionError):
    """Raised before a run when an output's folder cannot be created or written."""


def _blocking_problem(directory: Path) -> str | None:
    """Why files cannot be created under ``directory``, or None if they can."""
    probe = directory
    while not probe.exists():
        if probe.parent == probe:
            return f"no existing parent folder of {directory}"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


class OutputPreflightHook:
    """Refuse to start a run whose local outputs cannot be written."""

    @hook_impl
    def before_pipeline_run(self, run_params: dict, pipeline: Any, catalog: Any) -> None:
        problems = []
        for name in sorted(pipeline.all_outputs()):
            dataset = catalog.get(name) if name in catalog else None
            filepath = getattr(dataset, "_filepath", None)
            if filepath is None or getattr(dataset, "_protocol", "file") not in ("file", "local"):
                continue
            problem = _blocking_problem(Path(str(PurePosixPath(filepath))).parent)
            if problem:
                problems.append(f"{name} ({filepath}): {problem}")
        if problems:
            raise OutputNotWritableError(
                "these outputs cannot be written, so the run was not started:\n  " + "\n  ".join(problems)
            )


class TrackingUnavailableError(ConnectionError):
    """Raised before a run when the configured MLflow tracking server does not answer."""


class MlflowPreflightHook:
    """Fail fast, with the URI and the remedies, when an HTTP tracking server is down."""

    timeout_seconds = 5.0

    @hook_impl(tryfirst=True)  # before kedro-mlflow's own after_context_created
    def after_context_created(self, context: Any) -> None:
        loader = context.config_loader
        # kedro-mlflow registers this pattern in its own hook, which runs after this one.
        loader.config_patterns.setdefault("mlflow", ["mlflow*", "mlflow*/**", "**/mlflow*"])
        try:
            server = loader["mlflow"].get("server", {})
        except MissingConfigException:  # no mlflow.yml: kedro-mlflow uses its defaults
            return
        uri = str(server.get("mlflow_tracking_uri") or "")
        if not uri.startswith(("http://", "https://")):
            return
        try:
            with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=self.timeout_seconds):
                return
        except urllib.error.HTTPError:
            return  # it answered; authentication and paths are kedro-mlflow's business
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise TrackingUnavailableError(
                f"the MLflow tracking server {uri} (server.mlflow_tracking_uri in mlflow.yml) does not answer "
                f"({reason}); nothing was run. Start the server, or track locally by setting "
                "server.mlflow_tracking_uri: sqlite:///mlflow.db in conf/local/mlflow.yml."
            ) from None
