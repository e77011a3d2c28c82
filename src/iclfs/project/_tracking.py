"""kedro-mlflow's companion: what ICLFS adds to the MLflow run kedro-mlflow opens for every Kedro run.

:class:`TrackingHook` (docs/guides/tracking.md): the run's name and tags, only the method's parameters and each
member's real seed, metrics at k, the input and the artifacts (:mod:`._tracked`); ``mlflow.yml`` and the store
checked first (:mod:`._store`); a refused run leaves no run; a store that fails while a run runs lets it end
complete, marks its MLflow run FAILED and says so. Every method is a pluggy wrapper: hook order does not matter.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

import mlflow
from kedro.framework.hooks import hook_impl

from iclfs.io._tables import TableReadError
from iclfs.method._config import ParameterError
from iclfs.method._preprocessing import DataValidationError
from iclfs.method._runtime import ResourceLimitError

from ._resolvers import DataSourceError
from ._runs import pipelines_run
from ._store import DEFAULT_URI, SESSION_RUNS, TrackingFailedError, check_tracking_store, from_store, is_active
from ._store import TrackingUnavailableError  # noqa: F401  (cli.py names the store's errors from here)
from ._store import leave, leave_earlier_session, make_experiment, mask_credentials, note_session, opened_alone
from ._store import refuse, tracking_config
from ._tracked import log_outputs, run_tags

LOGGER = logging.getLogger(__name__)
#: The parameter sections a run of each method depends on (another method: its own options among baselines).
SECTIONS = {"iclfs": ("selection", "training", "views", "members", "ranking", "laplacian", "runtime", "evaluation")}
OTHER_METHOD = ("selection", "evaluation", "baselines")
#: A run that stops on one of these before any node finished was refused: what it was given is wrong.
REFUSALS = (DataValidationError, ParameterError, TableReadError, ResourceLimitError, DataSourceError)
#: How long a run tries to mark its MLflow run FAILED after the store failed (a locked SQLite file frees up).
FAILED_MARK_SECONDS = 60.0


def _refused(error: BaseException | None) -> bool:
    while error is not None and not isinstance(error, REFUSALS):
        error = error.__cause__ or error.__context__
    return error is not None


class TrackingHook:
    """kedro-mlflow's companion (module docstring)."""

    def __init__(self) -> None:
        self._uri, self._origin, self._method, self._benchmark, self._named = DEFAULT_URI, "", "iclfs", False, False
        self._run_id, self._done, self._failure = None, 0, None

    @hook_impl(wrapper=True)
    def after_context_created(self, context: Any) -> Any:
        """Check mlflow.yml and the store before kedro-mlflow opens it, and hold a SQLite store while it does. The
        session starts from its own mlflow.yml, whatever an earlier session of this process left (:mod:`._store`)."""
        exported = leave_earlier_session()
        loader = context.config_loader
        loader.config_patterns.setdefault("mlflow", ["mlflow*", "mlflow*/**", "**/mlflow*"])
        config, self._origin = tracking_config(loader)
        self._uri = config["server"]["mlflow_tracking_uri"]
        self._named = bool((config["tracking"].get("run") or {}).get("name"))
        check_tracking_store(self._uri, origin=self._origin)
        loader["mlflow"] = config  # what kedro-mlflow reads: the store chosen here
        with opened_alone(self._uri):
            try:
                experiment = make_experiment(self._uri, config["tracking"]["experiment"])
                if mlflow.active_run() is None:  # else kedro-mlflow tracks into the user's run, as it was opened
                    mlflow.set_tracking_uri(self._uri)
                    if experiment is not None:
                        mlflow.set_experiment(experiment_id=experiment)
                return (yield)
            except Exception as err:
                if not from_store(err):
                    raise
                raise refuse(self._uri, f"could not be opened ({type(err).__name__}: {str(err)[:300]})",
                             self._origin) from None
            finally:
                note_session(exported)

    @hook_impl(wrapper=True)
    def before_pipeline_run(self, run_params: dict, catalog: Any) -> Any:
        """Name and tag the run kedro-mlflow started; a run refused by the checks leaves none."""
        from kedro_mlflow.framework.hooks.mlflow_hook import mlflow_hook

        self._run_id, self._done, self._failure = None, 0, None
        mlflow_hook.run_id = None  # its last run's, in a process that runs again (a notebook): never resumed
        earlier = mlflow.active_run()
        # Two runs that start at once on one SQLite store take turns to create, name and tag their runs: each of
        # those reads, then writes, and SQLite refuses such a write at once ("database is locked", no wait) while
        # another process writes, which would end a run before it trains
        with opened_alone(self._uri):
            try:
                result = yield
            except BaseException:
                started = mlflow.active_run()
                if started is not None and (earlier is None or started.info.run_id != earlier.info.run_id):
                    self._discard(started.info.run_id)
                raise
            if (run := mlflow.active_run()) is None:  # tracking is off for this pipeline (disable_tracking)
                return result
            self._run_id = run.info.run_id
            SESSION_RUNS.add(self._run_id)
            self._method = str(catalog.load("params:selection").get("method", "iclfs"))
            names = pipelines_run(run_params)
            self._benchmark = any(name.startswith("benchmark") for name in names)
            name, tags = run_tags(run_params, catalog, self._method, names)
            mlflow.set_tags(tags)
            if not self._named:  # the user's tracking.run.name wins
                mlflow.MlflowClient().update_run(self._run_id, name=name)
        return result

    @hook_impl(wrapper=True)
    def before_node_run(self, inputs: dict) -> Any:
        """kedro-mlflow logs the parameters a node takes: it sees the method's own (none once the store failed)."""
        keep = None if self._benchmark else SECTIONS.get(self._method, OTHER_METHOD)
        hidden = {key: inputs.pop(key) for key in list(inputs) if self._run_id and (key == "parameters" or (
            key.startswith("params:") and (self._failure or keep and key[7:].split(".")[0] not in keep)))}
        if self._run_id and keep == OTHER_METHOD and isinstance(inputs.get("params:baselines"), dict):
            hidden["params:baselines"] = options = inputs["params:baselines"]
            inputs["params:baselines"] = {self._method: options.get(self._method) or {}}
        try:
            return (yield)
        except Exception as err:
            if not (self._run_id and from_store(err)):
                raise
            self._failure = self._failure or err
            return []
        finally:
            inputs.update(hidden)

    @hook_impl
    def after_node_run(self) -> None:
        self._done += 1

    @hook_impl(wrapper=True)
    def on_pipeline_error(self, error: Exception) -> Any:
        """kedro-mlflow marks its run FAILED (or the run's own error is shown); a refused run's is deleted."""
        run_id, self._run_id = self._run_id, None
        try:
            return (yield)
        except Exception as err:  # noqa: BLE001
            LOGGER.warning("the MLflow run %s could not be marked FAILED: %s", run_id, str(err)[:300])
        finally:
            if run_id is not None and self._done == 0 and _refused(error):
                self._discard(run_id)

    @hook_impl(wrapper=True)
    def after_pipeline_run(self, pipeline: Any, catalog: Any) -> Any:
        """Once the run is complete (record, latest) and kedro-mlflow closed its run, log what the run made."""
        run_id, self._run_id = self._run_id, None
        if run_id is None:
            return (yield)
        try:
            result = yield
        except Exception as err:
            if not from_store(err):
                raise
            self._failure, result = self._failure or err, None
        if self._failure is None:
            try:
                if not is_active(run_id):  # kedro-mlflow ended it (nested: it may still be on the stack)
                    mlflow.start_run(run_id=run_id)
                log_outputs(pipeline.all_outputs(), catalog, self._method, self._benchmark)
                while is_active(run_id):
                    mlflow.end_run("FINISHED")
            except Exception as err:  # noqa: BLE001  (any store fault: the run is kept, and says so)
                self._failure = err
        if self._failure is not None:
            state = "is marked FAILED" if self._mark_failed(run_id) else "could not be marked FAILED: it shows RUNNING"
            raise TrackingFailedError(
                f"the run ran and is kept as any complete run, but tracking it failed at the MLflow tracking store "
                f"{mask_credentials(self._uri)} ({self._origin}): {type(self._failure).__name__}: "
                f"{str(self._failure)[:300]}; its MLflow run {run_id} {state}. Fix the store "
                "(docs/guides/tracking.md); the next run tracks as usual.") from self._failure
        return result

    @staticmethod
    def _mark_failed(run_id: str) -> bool:
        """Mark the run FAILED, again while the store may free up (a locked SQLite file): whether it was written."""
        leave(run_id, "FAILED")
        deadline = time.monotonic() + FAILED_MARK_SECONDS
        while time.monotonic() < deadline:
            try:
                mlflow.MlflowClient().set_terminated(run_id, "FAILED")
                return True
            except Exception:  # noqa: BLE001
                time.sleep(1)
        return False

    @staticmethod
    def _discard(run_id: str) -> None:
        leave(run_id, "FAILED")
        with contextlib.suppress(Exception):
            mlflow.MlflowClient().delete_run(run_id)
            LOGGER.info("The run was refused: its MLflow run %s is deleted", run_id)
