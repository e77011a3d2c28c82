"""The run's lifecycle: one hook, its steps in the order written here.

:class:`LifecycleHook` is the project's only Kedro hook besides tracking's. Before
the run: the checks (:func:`check_parameters`, then :func:`check_outputs`,
which covers ``data/latest``), so a refused run writes nothing and starts no
MLflow run; then every other hook's (tracking checks its store); then
:meth:`iclfs.project._runs.Run.begin`: the lease, what killed runs left, a stage
run's pinned inputs, the stop signals. After the run:
:meth:`~iclfs.project._runs.Run.finish` (the run record, then the latest
switch: the run is complete), then the other hooks' (tracking logs a
published run), then the run summary. On an error: the run's versions are
removed. Ordering against other plugins' hooks is by pluggy's wrappers
(``wrapper=True``), never by ``tryfirst``/``trylast``: a wrapper's code before
its ``yield`` runs before every other hook, after it, after them.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from kedro.framework.hooks import hook_impl
from kedro.io import AbstractVersionedDataset

from iclfs import _threads
from iclfs.io._kedro import artifact_folder, save_version, version_file

from ._latest import existing_folder, latest_folder, latest_problem
from ._logs import plain_off_terminal
from ._runs import RECORD, Run, data_folder, run_method

LOGGER = logging.getLogger(__name__)
METADATA_KEY = "mlflow_artifact_path"


class LifecycleHook:
    """The run's lifecycle (module docstring)."""

    def __init__(self) -> None:
        self._run: Run | None = None

    @hook_impl
    def after_context_created(self, context: Any) -> None:
        plain_off_terminal()

    @hook_impl(wrapper=True)
    def before_pipeline_run(self, run_params: dict, pipeline: Any, catalog: Any):
        self._run = None
        check_parameters(run_params, pipeline, catalog)
        check_outputs(pipeline, catalog)
        LOGGER.info("%s", _threads.describe(_threads.APPLIED))  # the thread policy in force here
        result = yield  # the other hooks': tracking checks its store
        self._run = Run.begin(pipeline, catalog)
        return result

    @hook_impl(wrapper=True)
    def after_pipeline_run(self, run_params: dict, pipeline: Any, catalog: Any):
        run, self._run = self._run, None
        if run is not None:
            try:
                run.finish(run_params, pipeline, catalog)
            except BaseException:
                _fail_tracking(run.version)  # not complete: its MLflow run must not read FINISHED or RUNNING
                raise
        result = yield  # the other hooks': tracking logs the run, complete and published
        log_summary(pipeline, catalog)
        return result

    @hook_impl(wrapper=True)
    def on_pipeline_error(self, error: Exception, run_params: dict, pipeline: Any, catalog: Any):
        run, self._run = self._run, None
        if run is not None:  # before every other hook's: one that raises (kedro-mlflow on a locked store) skips the rest
            run.fail(error, pipeline, catalog)
        return (yield)


def _fail_tracking(version: str) -> None:
    """Mark this run's MLflow run FAILED: still open (the other hooks were not called), or closed FINISHED by the
    tracking hook before the record and the switch failed. Only a run tagged with this run's version."""
    mlflow = sys.modules.get("mlflow")
    if mlflow is None:  # tracking is not in use
        return
    try:
        run = mlflow.active_run() or mlflow.last_active_run()
        if run is None or mlflow.get_run(run.info.run_id).data.tags.get("version") != version:
            return
        while mlflow.active_run() is not None:
            mlflow.end_run("FAILED")
        mlflow.MlflowClient().set_terminated(run.info.run_id, "FAILED")
    except Exception as err:  # noqa: BLE001  (the run's own error is the one to tell)
        LOGGER.warning("the MLflow run of this run could not be marked FAILED: %s", str(err)[:300])


#: Parameters a run takes only through ``--params`` (or a declared source): the input and how to read it, its
#: data source, and a declared source's name.
RUN_INPUTS = ("input", "orientation", "id_column", "label_column", "sep", "decimal", "data_source", "source")
#: Parameter sections outside the method's own: the declared sources, the other methods' options, the benchmark's.
OTHER_SECTIONS = ("sources", "baselines", "benchmark", "benchmark_report")


def check_parameter_names(parameters: dict) -> None:
    """Refuse a top-level parameter no part of the project reads, naming the nearest one that exists."""
    from iclfs.method._config import SECTIONS, ParameterError, closest

    known = ["seed", *SECTIONS, *OTHER_SECTIONS, *RUN_INPUTS]
    unknown = sorted(str(key) for key in parameters if key not in known)
    if unknown:
        hints = ", ".join(f"{key!r}{closest(key, known)}" for key in unknown)
        raise ParameterError(f"unknown parameter(s) {hints}; known: {', '.join(known)}")


def check_parameters(run_params: dict, pipeline: Any, catalog: Any) -> None:
    """Refuse to start a run whose parameters, device or input are wrong, before anything is written.

    Every section and key (an unknown one is named with the nearest that
    exists), the baselines' options, the device and the precision it can
    run, an empty ``input=``, and the input file's existence and kind. A run
    on the embedded synthetic table says so.
    """
    from iclfs import baselines
    from iclfs.chain import check_runtime
    from iclfs.method._config import ParameterError, Settings

    parameters = catalog.load("parameters")
    check_parameter_names(parameters)
    settings = Settings.from_parameters(parameters)
    for key, options in (parameters.get("baselines") or {}).items():
        baselines.options_of(key, options)
    baselines.check_method(settings.selection.method, settings.selection.n_clusters)
    check_runtime(settings)
    given = run_params.get("runtime_params") or {}
    if "input" in given and given["input"] in (None, ""):
        raise ParameterError("input is empty (--params input=): give the table's path, e.g. --params "
                             "input=data/01_raw/expr.tsv; leave input out to run on the embedded synthetic table")
    if "raw_data" in pipeline.inputs() and "raw_data" in catalog:
        raw = catalog.get("raw_data")
        if hasattr(raw, "check"):
            raw.check()
        if getattr(raw, "embedded", False):
            LOGGER.warning("No input given (--params input=path/to/table): this run selects from the embedded "
                           "synthetic table.")


def saved_path(dataset: Any) -> Path | None:
    """The local file a dataset's latest save wrote, or None if it has no file."""
    if getattr(dataset, "_filepath", None) is None:  # no file (a memory dataset, the embedded table)
        return None
    if isinstance(dataset, AbstractVersionedDataset) and save_version(dataset) is not None:
        return version_file(dataset, dataset.resolve_save_version())
    return Path(str(artifact_folder(dataset)))


class OutputNotWritableError(PermissionError):
    """Raised before a run when an output's folder cannot be created or written."""


def _blocking_problem(directory: Path) -> str | None:
    """Why files cannot be created under ``directory``, or None if they can."""
    probe = existing_folder(directory)
    if isinstance(probe, str):
        return probe
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def check_outputs(pipeline: Any, catalog: Any) -> None:
    """Refuse to start a run whose local outputs cannot be written, its latest list included, naming each."""
    problems = []
    for name in sorted(pipeline.all_outputs()):
        dataset = catalog.get(name) if name in catalog else None
        filepath = getattr(dataset, "_filepath", None)
        if filepath is None or getattr(dataset, "_protocol", "file") not in ("file", "local"):
            continue
        problem = _blocking_problem(Path(str(PurePosixPath(filepath))).parent)
        if problem is None and hasattr(dataset, "writable_problem"):  # the member history: its folders, lock
            problem = dataset.writable_problem()
        if problem:
            problems.append(f"{name} ({filepath}): {problem}")
    if "feature_list" in pipeline.all_outputs() and RECORD in catalog:  # the run will publish its list
        source = artifact_folder(catalog.get(RECORD)).parent.name
        problem = latest_problem(data_folder(catalog), source, run_method(catalog))
        if problem:
            problems.append(f"the latest list: {problem}")
    if len(problems) == 1:
        raise OutputNotWritableError(f"{problems[0]}; the run was not started")
    if problems:
        raise OutputNotWritableError(
            "these outputs cannot be written, so the run was not started:\n  " + "\n  ".join(problems)
        )


SUMMARY = logging.getLogger("iclfs.summary")


def log_summary(pipeline: Any, catalog: Any) -> None:
    """At the end of every run, a short block in the log: what was selected, where it is, what changed.

    It goes to the ``iclfs.summary`` logger, which ``conf/logging.yml`` sends
    to standard output as plain text, one item per line, never wrapped, so a
    scheduled job's log carries every path whole.

    It reads back what the run saved (each through its catalog entry, so the
    run's own versions): the data source and the table's shape, the k and
    why, the list's path and its first ten features, the best k and accuracy
    when labels exist, and the overlap with the previous run.
    """
    try:
        lines = summary_lines(pipeline.all_outputs(), catalog)
    except Exception as err:  # a summary must never turn a finished run into a failed one
        LOGGER.debug("no run summary: %s", err)
        return
    if not lines:
        return
    if not SUMMARY.handlers:  # conf/logging.yml not read (a packaged job's Kedro logging): plain stdout lines
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        SUMMARY.addHandler(handler)
        SUMMARY.propagate = False
        SUMMARY.setLevel(logging.INFO)
    SUMMARY.info("Run summary")
    for line in lines:
        SUMMARY.info("  %s", line)
        if line.startswith("WARNING: "):
            LOGGER.warning("%s", line[len("WARNING: "):])


def _load(catalog: Any, name: str, outputs: set) -> Any:
    return catalog.load(name) if name in outputs and name in catalog else None


def summary_lines(outputs: set, catalog: Any) -> list[str]:
    """The run summary's lines (empty when the run produced no selection)."""
    listing = _load(catalog, "feature_list", outputs)
    selected = _load(catalog, "selections", outputs)
    if listing is None and selected is None:
        return []
    lines = []
    names = catalog.load("feature_names") if "feature_names" in catalog else None
    # the run record is the data source's (data/<layer>/<source>/run_record.json); the list is in the method's folder
    source = artifact_folder(catalog.get(RECORD)).parent.name if RECORD in catalog else None
    if source is not None:
        lines.append(f"data source: {source}")
    standardized = catalog.load("standardized_data") if "standardized_data" in catalog else None
    if standardized is not None:
        lines.append(f"table: {standardized.shape[1]} features x {standardized.shape[0]} samples")
    elif names is not None:
        lines.append(f"table: {len(names)} features")
    method = catalog.load("params:selection").get("method", "iclfs") if "params:selection" in catalog else "iclfs"
    if method != "iclfs":
        from iclfs.baselines import REGISTRY

        lines.append(f"method: {REGISTRY[method].name} (selection.method = {method})")
    choice = _load(catalog, "k_choice", outputs)
    if choice is not None:
        lines.append(f"k = {choice['k']}: {choice['reason']}")
    if listing is not None:
        path = saved_path(catalog.get("feature_list"))
        lines.append(f"the list: {path}")
        if path is not None and source is not None:
            latest = latest_folder(data_folder(catalog), source, method) / path.name
            lines.append(f"the latest list, the same after every run: {latest}")
        from iclfs.pipelines.report._report import shown_name

        top = ", ".join(shown_name(name) for name in listing["feature_name"].head(10))
        lines.append(f"top {min(10, len(listing))}: {top}")
    evaluation = _load(catalog, "evaluation_summary", outputs)
    if evaluation and evaluation.get("labels"):
        lines.append(f"best k = {evaluation['best_k']}: k-means accuracy "
                     f"{100 * evaluation['best_accuracy_mean']:.1f} % (NMI {100 * evaluation['best_nmi_mean']:.1f} %)")
    stability = _load(catalog, "selection_stability", outputs)
    if stability is not None:
        if stability.get("previous_version") is None:
            message = stability.get("message") or "first run on this data source, nothing to compare"
            lines.append(f"stability: {message}")
        elif choice is not None and str(choice["k"]) in {str(k) for k in stability.get("per_k", {})}:
            row = stability["per_k"].get(str(choice["k"])) or stability["per_k"].get(choice["k"])
            if "jaccard" in row:
                lines.append(f"stability: Jaccard {row['jaccard']:.2f} with the run of {stability['previous_version']}"
                             f" ({len(row['entered'])} entered, {len(row['left'])} left)")
        from iclfs.pipelines.report._report import stability_sentences

        lines.extend(stability_sentences(stability))
    lines.extend(concurrency_lines(catalog))
    return lines


def concurrency_lines(catalog: Any) -> list[str]:
    """What other runs on the same data source did meanwhile: stored the member history (this run's members were
    added to theirs), or still run (theirs join when they publish)."""
    from iclfs.io._kedro import artifact_folder, save_version
    from iclfs.io._liveness import ALIVE, RUNNING, state

    lines = []
    history = catalog.get("member_history") if "member_history" in catalog else None
    merged = getattr(history, "merged_onto", None)
    if merged:
        lines.append(f"another run on this data source stored the member history while this one ran (version "
                     f"{merged}): this run's members were added to it, and both runs' are kept")
    if "run_record" in catalog:
        record = catalog.get("run_record")
        records, own = Path(str(artifact_folder(record))), save_version(record)
        leases = (records / RUNNING).glob("[!.]*") if (records / RUNNING).is_dir() else []  # not one being taken
        running = sorted(p.name for p in leases if p.name != own and state(records, p.name) == ALIVE)
        if running:
            lines.append(f"{len(running)} other run(s) on this data source still run ({', '.join(running)}): their "
                         "members join the member history when they publish")
    return lines

