"""Runs a stage can trust: a record of every complete run, and stage runs that combine one run's versions.

Every artifact version is a run's: its version folder is the run's id (the
session's save version). When a run ends well, :meth:`Run.finish` writes
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

**Where a run's versions are.** The table's artifacts are the data source's
(``data/<layer>/<source>/<file>``); what a method makes is in its folder
(``data/<layer>/<source>/<method>/<file>``). The run records stay the data
source's, one ledger of every method's runs: each names its method and the
versions it wrote, and the files are found in that method's folder, or, for a
run of a version before method folders, where that version wrote them
(:func:`stored_file`).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from kedro.io import AbstractVersionedDataset

from iclfs.io._kedro import artifact_folder, pin_load_version, save_version, version_file
from iclfs.io._liveness import DEAD, RUNNING, Lease, dead_versions, lease_held, state
from iclfs.io.datasets._versioned import VersionedArtifact

from ._latest import LatestError, current_version, latest_folder, publish
from ._resolvers import DEFAULT_METHOD

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
    """The data source folder a run record lives in: ``data/<layer>/<source>/run_record.json``."""
    return artifact_folder(dataset).parent.name


def _belongs(dataset: Any, source: str, method: str) -> bool:
    """Whether a versioned artifact is the data source's (``data/<layer>/<source>/<file>``) or its ``method``'s
    (``data/<layer>/<source>/<method>/<file>``)."""
    folder = artifact_folder(dataset).parent
    return folder.name == source or (folder.name == method and folder.parent.name == source)


def old_layout_folder(dataset: Any, method: str) -> Path | None:
    """Where a method's artifact was stored before each method had a folder (``data/<layer>/<source>/<file>``
    for ``data/<layer>/<source>/<method>/<file>``); None for the data source's own artifacts."""
    return _old_layout(Path(str(artifact_folder(dataset))), method)


def _old_layout(folder: Path, method: str) -> Path | None:
    """:func:`old_layout_folder` of the artifact folder ``folder``."""
    return folder.parent.parent / folder.name if folder.parent.name == method else None


def stored_file(dataset: Any, version: str, method: str, own: str | None = None) -> Path:
    """The file of ``version``, written by a run of ``method``: in that method's folder (beside ``own``'s, the
    folder ``dataset`` names), or, for a version written before method folders (and never moved), in the old
    layout. Nothing is moved."""
    folder = Path(str(artifact_folder(dataset)))
    if own is not None and method != own and folder.parent.name == own:  # the same artifact, the other method's
        folder = folder.parent.parent / method / folder.name
    path = folder / version / folder.name
    old = _old_layout(folder, method)
    if not path.exists() and old is not None and (old / version / old.name).exists():
        return old / version / old.name
    return path


def _artifacts(names: set[str], catalog: Any) -> dict[str, AbstractVersionedDataset]:
    """The versioned artifacts among ``names`` that belong to the run record's data source and the run's method.

    Not the input file, parameters, metrics, the views of earlier runs, nor the
    benchmark's namespaced artifacts (each in a folder of its own).
    """
    source, method = _source(catalog.get(RECORD)), run_method(catalog)
    found = {}
    for name in sorted(names):
        if name == RECORD or name not in catalog:
            continue
        dataset = catalog.get(name)
        if (isinstance(dataset, VersionedArtifact) and getattr(dataset, "_version", None) is not None
                and _belongs(dataset, source, method)):
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


def choose_versions(needed: list[str], records: list[dict], source: str = "this data source",
                    present: Callable[[str, str], bool] | None = None) -> dict[str, tuple[str, dict]]:
    """For each needed artifact, the newest complete run that wrote it: ``{name: (version, record)}``.

    ``present(name, version)`` says whether that version is still on disk; a
    version whose folder was deleted (as a refusal's message suggests) is
    passed over for the complete run before it.

    Raises :class:`RunRecordError` when one was never written by a complete
    run, or is deleted from every run that wrote it, or when the chosen runs
    worked on different tables (their input fingerprints differ: one run's
    scores would be read with another's names).
    """
    chosen = {}
    for name in needed:
        wrote = [r for r in records if name in r.get("wrote", {})]
        run = next((r for r in wrote if present is None or present(name, r["wrote"][name]["version"])), None)
        if run is None and wrote:
            raise RunRecordError(
                f"data source {source!r}: {name} is deleted from every complete run that wrote it (the newest: "
                f"{wrote[0]['wrote'][name]['version']}), and this pipeline reads it. Run the stage that writes {name} "
                "first (or kedro run --pipelines select)")
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


class PublishError(RunRecordError):
    """A run's list could not be published under ``data/latest``; the run's versions were removed."""


class StopSignals:
    """SIGTERM and SIGINT, while a run runs, stop it through :class:`RunStopped` (only in the main thread, where
    Python handles signals).

    While the nodes run, the stop is raised at once, so Kedro calls
    ``on_pipeline_error``. Once they are done (:meth:`defer`) a signal is
    noted and raised at :meth:`check`, the points between the record and the
    latest switch where the run can still be undone whole; one that comes after
    the switch finds the run complete.
    """

    def __init__(self) -> None:
        self._handlers: dict = {}
        self._deferred = False
        self.caught: str | None = None

    def arm(self) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return

        def stop(number: int, frame: Any) -> None:
            name = signal.Signals(number).name
            if not self._deferred:
                raise RunStopped(name)
            self.caught = self.caught or name

        for number in (signal.SIGTERM, signal.SIGINT):
            try:
                self._handlers[number] = signal.signal(number, stop)
            except (OSError, ValueError):
                continue

    def defer(self) -> None:
        self._deferred = True

    def check(self) -> None:
        """Raise the noted stop, if any."""
        if self.caught is not None:
            raise RunStopped(self.caught)

    def disarm(self) -> str | None:
        """Put the handlers back; the stop noted and not raised, if any."""
        import signal

        for number, handler in self._handlers.items():
            try:
                signal.signal(number, handler)
            except (OSError, ValueError):
                continue
        self._handlers = {}
        return self.caught


class Run:
    """One run on a data source, from its lease to its published list (:class:`iclfs.project._hooks.LifecycleHook`
    calls these steps in order).

    :meth:`begin` takes the run's lease (:mod:`iclfs.io._liveness`), so a run
    on the same data source tells it from a killed one; removes what killed
    runs left (versions with no record and no lease held); pins a stage run's
    inputs to one complete run's versions; and lets SIGTERM and SIGINT stop the
    run. :meth:`finish` writes the run record and switches the latest list;
    the run is complete when both are done, and if either fails or a stop comes
    between them, both are undone with every version the run wrote.
    :meth:`fail` removes a failed, refused or stopped run's versions.
    """

    def __init__(self, catalog: Any) -> None:
        record = catalog.get(RECORD)
        self.version = save_version(record)
        self.source = _source(record)
        self.method = run_method(catalog)
        self.records = Path(str(artifact_folder(record)))
        self._inherited: str | None = None  # the table fingerprint a stage run's inputs come from
        self._lease = Lease(self.records, self.version)
        self._stop = StopSignals()

    @classmethod
    def begin(cls, pipeline: Any, catalog: Any) -> Run | None:
        """Start the run (class docstring); None where the pipeline keeps no run records (the benchmark)."""
        if RECORD not in catalog:
            return None
        run = cls(catalog)
        run._lease.take()
        try:
            clear_dead_runs(catalog, run.source, run.version)
            catch_up_latest(catalog, run.source)
            run._pin_inputs(pipeline, catalog)
        except BaseException:
            run._end()
            raise
        run._stop.arm()
        return run

    def _pin_inputs(self, pipeline: Any, catalog: Any) -> None:
        """A stage run reads one complete run's versions of its inputs, on one table, checked byte for byte."""
        needed = _artifacts(pipeline.inputs(), catalog)
        if not needed:
            return
        # this method's runs: another method's versions are in its own folder, and its table artifacts were made
        # for it (variance keeps the measured table, ICLFS its inverted one)
        records = [r for r in read_records(catalog.get(RECORD)) if record_method(r) == self.method]
        self._refuse_old_layout(needed, records)
        chosen = choose_versions(sorted(needed), records, self.source,
                                 lambda name, version: version_file(needed[name], version).parent.is_dir())
        self._inherited = next(iter(chosen.values()))[1].get("fingerprint")
        for name, (version, run) in chosen.items():
            dataset = needed[name]
            expected = run["wrote"][name].get("sha256")
            path = version_file(dataset, version)
            if expected is not None and digest(path) != expected:
                raise RunRecordError(
                    f"{name}: version {version} is not what its run wrote (its content changed or was cut short). "
                    f"Delete the folder {path.parent} (a stage run then reads the complete run before it) or run "
                    f"the stage that writes {name} again")
            pin_load_version(dataset, version)
        runs = sorted({version for version, _ in chosen.values()})
        LOGGER.info("Stage run on the versions of the complete run(s) %s", ", ".join(runs))

    def _refuse_old_layout(self, needed: dict[str, AbstractVersionedDataset], records: list[dict]) -> None:
        """A stage run reads the method's folder: where the newest complete run that wrote an input stored it in the
        old layout (a version before method folders), say how to go on, moving nothing."""
        for name, dataset in sorted(needed.items()):
            wrote = [r for r in records if name in r.get("wrote", {})]
            if not wrote or version_file(dataset, wrote[0]["wrote"][name]["version"]).parent.is_dir():
                continue
            version = wrote[0]["wrote"][name]["version"]
            old = old_layout_folder(dataset, self.method)
            if old is not None and (old / version).is_dir():
                raise RunRecordError(
                    f"{name}: the newest complete {self.method} run on data source {self.source!r} ({version}) stored "
                    f"it before each method had a folder, in {old / version}; a stage run reads "
                    f"{artifact_folder(dataset)}. Run kedro run --pipelines select once (it reads the old lists for "
                    f"the hold), or move that run's version folders into the method's folder (mv {old / version} "
                    f"{artifact_folder(dataset)}/, and so for each of its files)")

    def finish(self, run_params: dict, pipeline: Any, catalog: Any) -> None:
        """Write the run record, then switch the latest list: the run is complete. A failure or a stop before the
        switch undoes both, and the run's versions are removed."""
        self._stop.defer()
        try:
            record = self._write_record(run_params, pipeline, catalog)
            self._stop.check()
            if "feature_list" in record["wrote"]:  # a run that selected a list: it becomes the latest
                self._publish(record, catalog)
        except BaseException as err:
            self._undo(pipeline, catalog, err)
            if isinstance(err, LatestError):
                raise PublishError(f"{err}. The run's versions were removed: nothing of this run was kept") from err
            raise
        finally:
            late = self._end()
        if late is not None:  # the run was complete when the stop came: it stays so
            LOGGER.warning("the run was stopped (%s) as it completed: its list was published and is kept", late)

    def _write_record(self, run_params: dict, pipeline: Any, catalog: Any) -> dict:
        written = {}
        for name, dataset in _artifacts(pipeline.all_outputs(), catalog).items():
            version = save_version(dataset)
            path = version_file(dataset, version)
            if path.exists():
                written[name] = {"version": version, "sha256": digest(path)}
        read = {name: {"version": dataset.resolve_load_version()}
                for name, dataset in _artifacts(pipeline.inputs(), catalog).items()}
        record = {
            "run": self.version,
            "pipelines": pipelines_run(run_params),
            "finished": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "input": (run_params.get("runtime_params") or {}).get("input"),
            "method": run_method(catalog),
            "fingerprint": _fingerprint(catalog, written, read) or self._inherited,
            "wrote": written,
            "read": read,
        }
        catalog.get(RECORD).save(record)
        return record

    def _publish(self, record: dict, catalog: Any) -> None:
        link = publish_record(record, catalog, self.source, before_switch=self._stop.check)
        if link is not None:
            LOGGER.info("The latest list of %r (%s): %s", self.source, record["method"], link / "feature_list.csv")

    def fail(self, error: BaseException, pipeline: Any, catalog: Any) -> None:
        """Remove every version this run wrote: a failed, refused or stopped run leaves nothing behind."""
        try:
            self._undo(pipeline, catalog, error)
        finally:
            self._end()

    def _end(self) -> str | None:
        late = self._stop.disarm()
        self._lease.release()
        return late

    def _undo(self, pipeline: Any, catalog: Any, error: BaseException) -> None:
        removed = []
        folder = version_file(catalog.get(RECORD), self.version).parent
        if folder.is_dir() and folder.name == self.version:  # the record first: the run is no longer complete
            shutil.rmtree(folder, ignore_errors=True)
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


def publish_record(record: dict, catalog: Any, source: str, before_switch: Callable[[], None] | None = None
                   ) -> Path | None:
    """Publish the files a complete run's ``record`` lists (its list, tables and report) as the latest of its
    data source and method (:func:`iclfs.project._latest.publish`)."""
    method, own = record_method(record), run_method(catalog)
    files = {name: stored_file(dataset, record["wrote"][name]["version"], method, own)
             for name, dataset in _artifacts(set(record["wrote"]), catalog).items()
             if set(artifact_folder(dataset).parts[-4:-1]) & set(PUBLISHED_LAYERS)}
    files[RECORD] = version_file(catalog.get(RECORD), record["run"])
    return publish(data_folder(catalog), source, record["method"], record["run"], files, before_switch=before_switch)


def catch_up_latest(catalog: Any, source: str) -> list[str]:
    """Publish the newest complete run's list of each method where the latest holds an older one: a run killed
    (``kill -9``) after its record and before its switch is complete, so its list becomes the latest now, before
    this run compares with it. A run still finishing (its lease held) publishes its own. Each run's files are
    found in its method's folder (:func:`stored_file`). The versions published."""
    done, seen = [], set()
    records = Path(str(artifact_folder(catalog.get(RECORD))))
    for record in read_records(catalog.get(RECORD)):
        method = record_method(record)
        if "feature_list" not in record.get("wrote", {}) or method in seen:
            continue
        seen.add(method)
        current = current_version(latest_folder(data_folder(catalog), source, method), method)
        if (current is not None and current >= record["run"]) or lease_held(records, record["run"]):
            continue
        try:
            link = publish_record(record, catalog, source)
        except LatestError as err:  # this run's own publication says the same, when it comes to it
            LOGGER.warning("the run %s completed but its list was not published, and cannot be now: %s",
                           record["run"], err)
            continue
        if link is not None:
            LOGGER.warning("The run %s on data source %r completed but was stopped before its list was published: "
                           "it is published now, as the latest list (%s)", record["run"], source, method)
            done.append(record["run"])
    return done


def data_folder(catalog: Any) -> Path:
    """The project's ``data/`` folder: ``data/<layer>/<source>/run_record.json`` up three."""
    return Path(str(artifact_folder(catalog.get(RECORD)))).parents[2]


def clear_dead_runs(catalog: Any, source: str, own: str | None) -> list[str]:
    """Remove, from every versioned artifact of ``source``, the versions of runs that died (killed before they
    could clean up: no run record, no lease held); one line names them. The removed versions.

    The artifacts are the catalog's (the table's and this run's method's) and the same artifacts in the other
    methods' folders beside it: the leases are the source's, and a dead lease is let go here, after which a
    version it left would be nobody's to remove."""
    record = catalog.get(RECORD)
    records = Path(str(artifact_folder(record)))
    method = run_method(catalog)
    dead: set[str] = set()
    for name in catalog.keys() if hasattr(catalog, "keys") else catalog.list():
        if name == RECORD or str(name).startswith("params:") or name == "parameters":
            continue
        try:
            dataset = catalog.get(name)
        except Exception:  # noqa: BLE001  (a factory pattern, or an entry that cannot be built here)
            continue
        if not isinstance(dataset, VersionedArtifact) or not _belongs(dataset, source, method):
            continue
        folder = Path(str(artifact_folder(dataset)))
        if hasattr(dataset, "discard"):  # the member history: its versions per method
            versions = sorted({p.parent.name for p in folder.glob(f"**/{folder.name}") if p.parent != folder})
            for version in dead_versions(records, versions, own):
                dataset.discard(version)
                dead.add(version)
            continue
        for artifact in [folder, *_in_other_methods(folder, method)]:
            versions = sorted(p.name for p in artifact.iterdir() if p.is_dir()) if artifact.is_dir() else []
            for version in dead_versions(records, versions, own):
                shutil.rmtree(artifact / version, ignore_errors=True)
                dead.add(version)
    for lease in (records / RUNNING).glob("*") if (records / RUNNING).is_dir() else []:
        if lease.name != own and state(records, lease.name) == DEAD:  # its holder is gone
            lease.unlink(missing_ok=True)
    if dead:
        LOGGER.warning("Removed what %d run(s) on data source %r left when they were killed (no run record, not "
                       "running): %s", len(dead), source, ", ".join(sorted(dead)))
    return sorted(dead)


def _in_other_methods(folder: Path, method: str) -> list[Path]:
    """The artifact ``folder`` (``data/<layer>/<source>/<method>/<file>``) in the other methods' folders beside
    ``method``'s; none for the source's own artifacts."""
    if folder.parent.name != method or not folder.parent.parent.is_dir():
        return []
    return [other / folder.name for other in sorted(folder.parent.parent.iterdir())
            if other.is_dir() and other.name != method and not other.name.startswith(".") and not other.suffix
            and (other / folder.name).is_dir()]


def run_method(catalog: Any) -> str:
    """The run's ``selection.method``: a data source keeps each method's lists and members apart."""
    parameters = catalog.load("parameters") if "parameters" in catalog else {}
    return str((parameters.get("selection") or {}).get("method") or DEFAULT_METHOD)


def record_method(record: dict) -> str:
    """The method of a run ``record``: ICLFS for a record of a version that named none."""
    return str(record.get("method") or DEFAULT_METHOD)


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
