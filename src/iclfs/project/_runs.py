"""Runs a stage can trust: a record of every complete run, and stage runs that combine one run's versions.

Every artifact version is a run's: its version folder is the run's id (the
session's save version). When a run ends well, :class:`RunRecordHook` writes
its **run record** (``run_record.json``, versioned like every artifact): the
pipeline, the input file and its fingerprint, each artifact it wrote (version
and SHA-256) and each artifact it read from an earlier run. A run that fails
or is refused removes every version it wrote; a run that is killed writes no
record, so its partial versions are never taken for a run.

A stage run alone (``kedro run --pipelines ranking``) reads artifacts that
earlier runs wrote. Before any node runs, each of them is pinned to the
newest version a *complete* run wrote; the versions chosen must come from
runs on one table (the same input fingerprint: member scores trained on one
table are never labelled with another table's names), and each file must
still be what its run wrote. Otherwise the stage run is refused with a
message naming the versions that disagree. A stage run's own record carries
the fingerprint of the table its inputs came from.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from kedro.framework.hooks import hook_impl
from kedro.io import AbstractVersionedDataset

from iclfs.io._kedro import artifact_folder, pin_load_version, save_version, version_file
from iclfs.io.datasets._versioned import VersionedArtifact

from iclfs.io._liveness import DEAD, RUNNING, Lease, dead_versions, state

from ._latest import publish

LOGGER = logging.getLogger(__name__)
RECORD = "run_record"
#: The layers a run publishes: its list, its tables and its report (not its intermediate arrays or models).
PUBLISHED_LAYERS = ("07_model_output", "08_reporting")


def pipelines_run(run_params: dict) -> list[str]:
    """The pipelines a run ran, by name: a run without ``--pipelines`` ran ``__default__``, which is ``select``."""
    names = run_params.get("pipeline_names") or [run_params.get("pipeline_name") or "__default__"]
    return ["select" if str(name) == "__default__" else str(name) for name in names]


class RunRecordError(RuntimeError):
    """A stage run cannot be given one run's versions; the message names the artifacts and versions."""


def _source(dataset: Any) -> str:
    """The data source folder a versioned artifact lives in: ``data/<layer>/<source>/<file>``."""
    return artifact_folder(dataset).parent.name


def _artifacts(names: set[str], catalog: Any) -> dict[str, AbstractVersionedDataset]:
    """The versioned artifacts among ``names`` that belong to the run record's data source.

    Not the input file, parameters, metrics, the views of earlier runs, nor the
    benchmark's namespaced artifacts (each in a folder of its own).
    """
    source = _source(catalog.get(RECORD))
    found = {}
    for name in sorted(names):
        if name == RECORD or name not in catalog:
            continue
        dataset = catalog.get(name)
        if (isinstance(dataset, VersionedArtifact) and getattr(dataset, "_version", None) is not None
                and _source(dataset) == source):
            found[name] = dataset
    return found


def digest(path: Path) -> str | None:
    """SHA-256 of a file; None for a folder (a set of figures) or nothing."""
    if not path.is_file():
        return None
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def read_records(record: AbstractVersionedDataset) -> list[dict]:
    """Every complete run's record of this data source, newest first (unreadable ones are skipped)."""
    import json

    folder = Path(str(artifact_folder(record)))
    records = []
    for path in sorted(folder.glob(f"*/{folder.name}"), reverse=True):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            LOGGER.warning("run record %s cannot be read; that run is left out", path)
    return records


def choose_versions(needed: list[str], records: list[dict], source: str = "this data source"
                    ) -> dict[str, tuple[str, dict]]:
    """For each needed artifact, the newest complete run that wrote it: ``{name: (version, record)}``.

    Raises :class:`RunRecordError` when one was never written by a complete
    run, or when the chosen runs worked on different tables (their input
    fingerprints differ: one run's scores would be read with another's names).
    """
    chosen = {}
    for name in needed:
        run = next((r for r in records if name in r.get("wrote", {})), None)
        if run is None:
            raise RunRecordError(
                f"data source {source!r}: no complete run wrote {name}, which this pipeline reads. Run the stages "
                f"before it first (kedro run --pipelines select, or the stage that writes {name})")
        chosen[name] = (run["wrote"][name]["version"], run)
    tables = {}
    for name, (version, run) in chosen.items():
        tables.setdefault(run.get("fingerprint"), []).append(f"{name} (run {version})")
    if len(tables) > 1:
        shown = "; ".join(f"{', '.join(names)} from the table {str(fingerprint)[:12]}"
                          for fingerprint, names in tables.items())
        raise RunRecordError(
            f"data source {source!r}: the newest complete versions of this stage's inputs come from runs on "
            f"different tables: {shown}. Run the stages in order again (kedro run --pipelines select, or from "
            "data_processing on)")
    return chosen


class RunStopped(Exception):  # noqa: N818  (a stop, not an error of the run's)
    """The run was stopped by a signal (SIGTERM from a scheduler's timeout, Ctrl-C); its versions are removed."""

    def __init__(self, signal_name: str) -> None:
        self.signal_name = signal_name
        super().__init__(f"the run was stopped ({signal_name}): the versions it had written were removed, and "
                         "nothing of it is read by a later run")


class RunRecordHook:
    """Write each complete run's record; pin a stage run's inputs to one run's versions; clean a failed run.

    While a run runs it holds its lease (:mod:`iclfs.io._liveness`), so a run
    on the same data source tells it from a killed one. A run starts by
    removing what killed runs left (versions with no record and no lease
    held), and a stopped run (SIGTERM, SIGINT) removes its own versions, as a
    failed one does.
    """

    def __init__(self) -> None:
        self._inherited: str | None = None  # the table fingerprint a stage run's inputs come from
        self._lease: Lease | None = None
        self._handlers: dict = {}

    @hook_impl(trylast=True)  # after every check: a refused run takes no lease
    def before_pipeline_run(self, run_params: dict, pipeline: Any, catalog: Any) -> None:
        self._inherited = None
        if RECORD not in catalog:
            return
        record = catalog.get(RECORD)
        self._lease = Lease(Path(str(artifact_folder(record))), save_version(record))
        self._lease.take()
        try:
            clear_dead_runs(catalog, _source(record), save_version(record))
            self._pin_inputs(pipeline, catalog)
        except BaseException:
            self._end()
            raise
        self._stop_on_signals()

    def _pin_inputs(self, pipeline: Any, catalog: Any) -> None:
        """A stage run reads one complete run's versions of its inputs, on one table, checked byte for byte."""
        needed = _artifacts(pipeline.inputs(), catalog)
        if not needed:
            return
        record = catalog.get(RECORD)
        chosen = choose_versions(sorted(needed), read_records(record), _source(record))
        self._inherited = next(iter(chosen.values()))[1].get("fingerprint")
        for name, (version, run) in chosen.items():
            dataset = needed[name]
            expected = run["wrote"][name].get("sha256")
            path = version_file(dataset, version)
            if expected is not None and digest(path) != expected:
                raise RunRecordError(
                    f"{name}: version {version} is not what its run wrote (its content changed or was cut short). "
                    f"Delete the folder {path.parent} and run the stage that writes it again")
            pin_load_version(dataset, version)
        runs = sorted({version for version, _ in chosen.values()})
        LOGGER.info("Stage run on the versions of the complete run(s) %s", ", ".join(runs))

    @hook_impl
    def after_pipeline_run(self, run_params: dict, pipeline: Any, catalog: Any) -> None:
        if RECORD not in catalog:
            return
        written = {}
        for name, dataset in _artifacts(pipeline.all_outputs(), catalog).items():
            version = save_version(dataset)
            path = version_file(dataset, version)
            if path.exists():
                written[name] = {"version": version, "sha256": digest(path)}
        read = {name: {"version": dataset.resolve_load_version()}
                for name, dataset in _artifacts(pipeline.inputs(), catalog).items()}
        record = {
            "run": save_version(catalog.get(RECORD)),
            "pipelines": pipelines_run(run_params),
            "finished": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "input": (run_params.get("runtime_params") or {}).get("input"),
            "method": _method(catalog),
            "fingerprint": _fingerprint(catalog, written, read) or self._inherited,
            "wrote": written,
            "read": read,
        }
        catalog.get(RECORD).save(record)
        self._end()
        if "feature_list" in written:  # a run that published a list: it becomes the latest
            records = catalog.get(RECORD)
            files = {name: version_file(dataset, written[name]["version"])
                     for name, dataset in _artifacts(set(written), catalog).items()
                     if str(artifact_folder(dataset).parent.parent.name) in PUBLISHED_LAYERS}
            files[RECORD] = version_file(records, record["run"])
            data = Path(str(artifact_folder(records))).parents[2]
            link = publish(data, _source(records), record["method"], record["run"], files)
            if link is not None:
                LOGGER.info("The latest list of %r (%s): %s", _source(records), record["method"],
                            link / "feature_list.csv")

    def _stop_on_signals(self) -> None:
        """SIGTERM and SIGINT stop the run through an exception, so Kedro calls ``on_pipeline_error`` and the
        run's versions are removed (only where signals can be handled: the main thread)."""
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return

        def stop(number: int, frame: Any) -> None:
            raise RunStopped(signal.Signals(number).name)

        for number in (signal.SIGTERM, signal.SIGINT):
            try:
                self._handlers[number] = signal.signal(number, stop)
            except (OSError, ValueError):
                continue

    def _end(self) -> None:
        import signal

        for number, handler in self._handlers.items():
            try:
                signal.signal(number, handler)
            except (OSError, ValueError):
                continue
        self._handlers = {}
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    @hook_impl
    def on_pipeline_error(self, error: Exception, run_params: dict, pipeline: Any, catalog: Any) -> None:
        """Remove every version this run wrote: a failed, refused or stopped run leaves nothing behind."""
        if RECORD not in catalog:
            return
        try:
            self._remove(pipeline, catalog, error)
        finally:
            self._end()

    def _remove(self, pipeline: Any, catalog: Any, error: Exception) -> None:
        removed = []
        for name, dataset in _artifacts(pipeline.all_outputs(), catalog).items():
            if hasattr(dataset, "discard"):  # the member history keeps its .head on a version that exists
                if dataset.discard(save_version(dataset)):
                    removed.append(name)
                continue
            folder = version_file(dataset, save_version(dataset)).parent
            if folder.is_dir() and PurePosixPath(folder).name == save_version(dataset):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(name)
        if isinstance(error, RunStopped):
            LOGGER.warning("%s (%s)", error, ", ".join(removed) or "none yet")
        elif removed:
            LOGGER.info("The run failed: removed the versions it had written (%s)", ", ".join(removed))


def clear_dead_runs(catalog: Any, source: str, own: str | None) -> list[str]:
    """Remove, from every versioned artifact of ``source``, the versions of runs that died (killed before they
    could clean up: no run record, no lease held); one line names them. The removed versions."""
    record = catalog.get(RECORD)
    records = Path(str(artifact_folder(record)))
    dead: set[str] = set()
    for name in catalog.keys() if hasattr(catalog, "keys") else catalog.list():
        if name == RECORD or str(name).startswith("params:") or name == "parameters":
            continue
        try:
            dataset = catalog.get(name)
        except Exception:  # noqa: BLE001  (a factory pattern, or an entry that cannot be built here)
            continue
        if not isinstance(dataset, VersionedArtifact) or _source(dataset) != source:
            continue
        folder = Path(str(artifact_folder(dataset)))
        if hasattr(dataset, "discard"):  # the member history: its versions per method
            versions = sorted({p.parent.name for p in folder.glob(f"**/{folder.name}") if p.parent != folder})
        else:
            versions = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
        for version in dead_versions(records, versions, own):
            if hasattr(dataset, "discard"):
                dataset.discard(version)
            else:
                shutil.rmtree(folder / version, ignore_errors=True)
            dead.add(version)
    for lease in (records / RUNNING).glob("*") if (records / RUNNING).is_dir() else []:
        if lease.name != own and state(records, lease.name) == DEAD:  # its holder is gone
            lease.unlink(missing_ok=True)
    if dead:
        LOGGER.warning("Removed what %d run(s) on data source %r left when they were killed (no run record, not "
                       "running): %s", len(dead), source, ", ".join(sorted(dead)))
    return sorted(dead)


def _method(catalog: Any) -> str:
    """The run's ``selection.method``: a data source keeps each method's lists and members apart."""
    parameters = catalog.load("parameters") if "parameters" in catalog else {}
    return str((parameters.get("selection") or {}).get("method") or "iclfs")


def _fingerprint(catalog: Any, written: dict, read: dict) -> str | None:
    """The input table's fingerprint, from the run's ``ground_truth`` (written or read)."""
    entry = written.get("ground_truth") or read.get("ground_truth")
    if entry is None or "ground_truth" not in catalog:
        return None
    try:
        import json

        return json.loads(version_file(catalog.get("ground_truth"), entry["version"]).read_text()).get("fingerprint")
    except (OSError, ValueError):
        return None
