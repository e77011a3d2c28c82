"""A data source's member history, stored version by version (docs/members.md, "Carried members").

Each run that adds members writes a new version
(``member_history.npz/<run>/member_history.npz``) holding every member kept:
its feature names (exactly, as UTF-8), rank scores, seed, seconds, table
fingerprint, method and the Laplacian scores of its table. ``.head`` beside the versions names the newest
history; a version is whole or absent (written beside, then renamed) and is
never rewritten.

**Concurrency: the later writer merges.** A save takes an exclusive lock on
the history's folder, and when another run stored a history after this one
read its own, this run's members are added to that one (renumbered after
it), so two runs on one data source at once lose no member. A run that set
the stored history aside (``history.reset``, or a history it could not use)
starts a new history instead.

**Reading.** :class:`MemberHistoryView` (the catalog's
``previous_member_history``) reads the history ``.head`` names. A version that
cannot be read, or that belongs to another data source, is never an error:
the history comes back empty with ``problem`` saying why, and the run starts
afresh with that one message.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
from kedro.io.core import AbstractVersionedDataset, DatasetError, Version, get_protocol_and_path

from iclfs.io._lock import held as hold_lock
from iclfs.method._ranking import Member, MemberHistory

from ._versioned import VersionedArtifact

LOGGER = logging.getLogger(__name__)
FORMAT = 1
HEAD = ".head"  # earlier versions' pointer to the newest version; now set aside
LOCK = ".lock"
#: How long a run waits for the history's lock (held for a merge of a few milliseconds) before it stops, naming
#: the holder: a holder that keeps it longer hangs (stopped, or on a disk that does not answer).
LOCK_TIMEOUT = 600.0
RESERVED = ".reserved"


def _local(filepath: str, cls: str) -> Path:
    protocol, path = get_protocol_and_path(filepath)
    if protocol != "file":
        raise DatasetError(f"{cls}: the member history is kept on a local or mounted disk (its writers lock a "
                           f"file there); filepath {filepath!r} is {protocol}://")
    return Path(path)


def _encode(names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Names as one UTF-8 byte array and each name's end offset: every string, byte for byte."""
    encoded = [name.encode("utf-8", "surrogatepass") for name in names]
    ends = np.cumsum([len(b) for b in encoded], dtype=np.int64)
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), ends


def _decode(blob: np.ndarray, ends: np.ndarray) -> tuple[str, ...]:
    data = blob.tobytes()
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    return tuple(data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, ends, strict=True))


def to_bytes(history: MemberHistory, sequence: int = 0) -> bytes:
    """The ``.npz`` of a history (no pickles: plain arrays only); ``sequence`` orders the versions by when they
    were stored (:meth:`_Store.head`)."""
    tables: dict[tuple[str, ...], int] = {}
    arrays: dict[str, np.ndarray] = {
        "format": np.array(FORMAT), "data_source": np.array(history.data_source or ""),
        "runs": np.array(history.runs, dtype=np.int64), "next_index": np.array(history.next_index, dtype=np.int64),
        "kept": np.array(history.kept or 0, dtype=np.int64), "sequence": np.array(sequence, dtype=np.int64),
    }
    columns: dict[str, list] = {"run": [], "index": [], "seed": [], "seconds": [], "fingerprint": [], "table": [],
                                "method": [], "version": []}
    for i, member in enumerate(history.members):
        table = tables.setdefault(member.feature_names, len(tables))
        if table == len(tables) - 1 and f"names_{table}" not in arrays:
            arrays[f"names_{table}"], arrays[f"names_{table}_ends"] = _encode(member.feature_names)
        arrays[f"scores_{i}"] = np.asarray(member.scores, dtype=np.float64)
        if member.laplacian is not None and f"laplacian_run_{member.run}" not in arrays:
            # one run's members share its table's scores: stored once per run
            arrays[f"laplacian_run_{member.run}"] = np.asarray(member.laplacian, dtype=np.float64)
        for key, value in (("run", member.run), ("index", member.index), ("seed", member.seed),
                           ("seconds", member.seconds), ("fingerprint", member.fingerprint), ("table", table),
                           ("method", member.method), ("version", member.version or "")):
            columns[key].append(value)
    arrays.update({f"member_{key}": np.asarray(values, dtype=dtype) for (key, values), dtype in zip(
        columns.items(), (np.int64, np.int64, np.int64, np.float64, np.str_, np.int64, np.str_, np.str_),
        strict=True)})
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def from_file(path: Path, version: str | None) -> MemberHistory:
    """The history stored at ``path`` (raises on a file that is not one)."""
    with np.load(path, allow_pickle=False) as content:
        if int(content["format"]) != FORMAT:
            raise ValueError(f"format {int(content['format'])}, this version of iclfs reads format {FORMAT}")
        tables: dict[int, tuple[str, ...]] = {}
        laplacians: dict[int, np.ndarray] = {}
        members = []
        for i, table in enumerate(content["member_table"].tolist()):
            if table not in tables:
                tables[table] = _decode(content[f"names_{table}"], content[f"names_{table}_ends"])
            run = int(content["member_run"][i])
            if run not in laplacians and f"laplacian_run_{run}" in content.files:
                laplacians[run] = content[f"laplacian_run_{run}"]
            # a history written before the scores were stored once per run has them per member
            laplacian = content[f"laplacian_{i}"] if f"laplacian_{i}" in content.files else laplacians.get(run)
            # a history written before members recorded their run has no versions: its runs were complete
            trained_by = str(content["member_version"][i]) if "member_version" in content.files else ""
            members.append(Member(run=run, index=int(content["member_index"][i]),
                                  seed=int(content["member_seed"][i]), feature_names=tables[table],
                                  scores=content[f"scores_{i}"], seconds=float(content["member_seconds"][i]),
                                  fingerprint=str(content["member_fingerprint"][i]),
                                  method=str(content["member_method"][i]), laplacian=laplacian,
                                  version=trained_by or None))
        # A history an earlier version wrote may hold the lists its run handed on (list_<k>): the lists a run
        # holds to are now its data source's last published ones, so those are not read.
        runs = int(content["runs"])
        # members.kept, the cap; a history written before it was named so calls it max_members
        kept = int(content["kept"] if "kept" in content.files else content["max_members"])
        return MemberHistory(members=tuple(members), runs=runs, next_index=int(content["next_index"]),
                             data_source=str(content["data_source"]) or None, version=version, read_runs=runs,
                             kept=kept or None)


class _Store:
    """The versions of one method's history folder, its lock, and the numbers running runs have reserved.

    ``records`` is the data source's run records folder: a member trained by a run that has not completed (it
    runs still, or it died) is kept in the stored history but not read (:mod:`iclfs.io._liveness`).
    """

    def __init__(self, folder: Path, data_source: str | None, name: str | None = None, method: str = "iclfs",
                 records: Path | None = None) -> None:
        self.folder = folder
        self.name = name or folder.name
        self.data_source = data_source
        self.method = method
        self.records = records

    def versions(self) -> list[str]:
        return sorted(p.parent.name for p in self.folder.glob(f"*/{self.name}") if not p.parent.name.startswith("."))

    def _pointer_note(self, newest: str | None) -> str | None:
        """Why ``.head`` (which earlier versions wrote, and nothing now reads) is set aside, when it disagrees."""
        pointer = self.folder / HEAD
        if not pointer.exists() and not pointer.is_symlink():
            return None
        try:
            named = pointer.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            return f"the history's pointer {pointer} cannot be read ({type(err).__name__}); it is not used"
        if named != newest:
            return f"the history's pointer {pointer} names {named[:40]!r}; it is not used: the newest version is read"
        return None

    def head(self) -> str | None:
        """The version stored last: the highest ``sequence`` (one more than any stored before it, under the lock).

        Versions are named by when their runs started, and a run that started first may store last (merging
        onto what another stored meanwhile), so the name does not say which is newest; nor does the number of
        runs (a ``members.reset`` run stores a history of one run after one of many). Versions written before
        the sequence was stored count as 0 and are ordered as they were then: the most runs, then the most
        members ever added, then the name. Only these numbers of each file are read.
        """
        best, key = None, None
        self._unreadable = {}
        self._sequence = 0  # the highest stored: the next write's is one more
        for version in self.versions():
            try:
                with np.load(self.folder / version / self.name, allow_pickle=False) as content:
                    sequence = int(content["sequence"]) if "sequence" in content.files else 0
                    this = (sequence, int(content["runs"]), int(content["next_index"]), version)
            except Exception as err:  # noqa: BLE001  (unreadable: read() names it)
                self._unreadable[version] = f"{type(err).__name__}: {err}"
                this = (-1, -1, -1, version)
            self._sequence = max(self._sequence, this[0])
            if key is None or this > key:
                best, key = version, this
        return best

    def read(self, version: str | None = None, for_use: bool = True) -> MemberHistory:
        """The stored history: ``version``, or the :meth:`head` (an unreadable one is named and passed over for the
        one before it). ``for_use``: without the members of runs that have not completed."""
        notes = []
        if version is None:
            head = self.head()
            versions = [v for v in self.versions() if v != head] + ([head] if head is not None else [])
            # a damaged version newer than the one read: a run's history lost, say so
            notes += [f"the member history {self.folder / v / self.name} cannot be read ({why}); it is passed over"
                      for v, why in sorted(self._unreadable.items()) if head is None or v > head]
        else:
            versions = [version]
        for candidate in reversed(versions):
            path = self.folder / candidate / self.name
            try:
                history = from_file(path, candidate)
            except Exception as err:  # noqa: BLE001  (any unreadable file: say so and read the one before it)
                notes.append(f"the member history {path} cannot be read ({type(err).__name__}: {err}); "
                             "it is passed over")
                continue
            if self.data_source is not None and history.data_source not in (None, self.data_source):
                return MemberHistory(data_source=self.data_source, method=self.method, problem=(
                    f"the member history {path} belongs to the data source {history.data_source!r}, not "
                    f"{self.data_source!r}"))
            pointer = self._pointer_note(candidate) if version is None else None
            notes += [pointer] if pointer else []
            history = replace(history, method=self.method, notes=tuple(notes))
            return self.completed(history) if for_use else history
        if notes and version is None and not versions[:-len(notes)]:
            return MemberHistory(data_source=self.data_source, method=self.method, notes=tuple(notes),
                                 problem=notes[-1].replace("; it is passed over", ""))
        return MemberHistory(data_source=self.data_source, method=self.method, notes=tuple(notes))

    def completed(self, history: MemberHistory) -> MemberHistory:
        """``history`` without the members of runs that have not completed; a note names them."""
        if self.records is None:
            return history
        from iclfs.io._liveness import COMPLETE, state

        skipped = {}
        for member in history.members:
            if member.version is not None:
                now = state(self.records, member.version)
                if now != COMPLETE:
                    skipped.setdefault(member.version, now)
        if not skipped:
            return history
        kept = tuple(m for m in history.members if m.version not in skipped)
        why = {"running": "still running", "dead": "killed before it published", "unknown": "no run record"}
        shown = ", ".join(f"{v} ({why[s]})" for v, s in sorted(skipped.items()))
        note = (f"{len(history.members) - len(kept)} member(s) of run(s) that did not complete are not used: "
                f"{shown}")
        return replace(history, members=kept, notes=(*history.notes, note))

    # -- reservations: concurrent runs train from distinct member numbers ------------------------------

    def _reservations(self) -> dict[str, tuple[int, int]]:
        """``{run version: (first number, count)}`` of the runs that hold a reservation and still run."""
        from iclfs.io._liveness import ALIVE, state

        found = {}
        for path in sorted((self.folder / RESERVED).glob("*")):
            try:
                first, count = map(int, path.read_text().split())
            except (OSError, ValueError):
                continue
            if self.records is None or state(self.records, path.name) == ALIVE:
                found[path.name] = (first, count)
            else:
                path.unlink(missing_ok=True)  # its run completed or died: its members are stored, or never will be
        return found

    def reserve(self, version: str, count: int) -> int:
        """The first of ``count`` member numbers for the run ``version``, past every number stored or reserved by
        a running run; kept until the run ends."""
        with self.locked(run=version):
            held = self._reservations()
            if version in held:
                return held[version][0]
            stored = self.read(for_use=False)
            first = max([stored.next_index, *(a + n for a, n in held.values())])
            _write_atomically(self.folder / RESERVED / version, f"{first} {int(count)}".encode())
            return first

    def reserved(self, version: str) -> int | None:
        path = self.folder / RESERVED / version
        try:
            return int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    @contextlib.contextmanager
    def locked(self, run: str | None = None) -> Iterator[None]:
        """Hold the history's lock (``.lock``, :mod:`iclfs.io._lock`) for the block: a merge of a few
        milliseconds, so a wait past :data:`LOCK_TIMEOUT` s means a holder that hangs; the error names it."""
        # filelock never keeps a waiter on a file discard() removed: each try opens the lock afresh, and a file
        # removed between the open and the lock is let go and tried again
        what = f"the member history of {self.data_source!r} ({self.method})"
        with hold_lock(self.folder / LOCK, what, LOCK_TIMEOUT, run=run):
            yield

    def discard(self, version: str) -> bool:
        """Remove ``version`` (a failed or dead run's) and its reservation, and the folder's lock when no version
        is left. Whether ``version`` was there."""
        with self.locked(run=version):
            folder = self.folder / version
            found = folder.is_dir()
            shutil.rmtree(folder, ignore_errors=True)
            (self.folder / RESERVED / version).unlink(missing_ok=True)
            if not self.versions():
                shutil.rmtree(self.folder / RESERVED, ignore_errors=True)
                (self.folder / HEAD).unlink(missing_ok=True)
                (self.folder / LOCK).unlink(missing_ok=True)  # held: a waiter sees it gone and locks afresh
        with contextlib.suppress(OSError):
            self.folder.rmdir()  # only when empty
        return found

    def write(self, history: MemberHistory, version: str) -> tuple[MemberHistory, str | None]:
        """Store ``history`` as ``version``; the history stored and the version it was merged onto (None when
        none was stored since this run read).

        Another run may have stored the history after this one read it: this run's members are added to that
        one, so neither run's are lost. A run that set the history it read aside (``afresh``) keeps only what
        was stored since it read. Members of runs that died are dropped here; those of runs that still run, which
        this run did not read, are kept.
        """
        with self.locked(run=version):
            head = self.head()
            merged = None
            if head is not None and head == history.version and not history.afresh:
                # what this run read, less the members of runs still running (``completed``): they stay stored
                stored = self._without_dead(self.read(head, for_use=False))
                read = {(m.version, m.index) for m in history.members}
                hidden = [m for m in stored.members if (m.version, m.index) not in read]
                if stored.problem is None and hidden:
                    LOGGER.info("Member history of %r: %d member(s) of run(s) still running stay stored beside this "
                                "run's", self.data_source, len(hidden))
                    history = history.merged_onto(stored)
            elif head is not None and head != history.version:
                stored = self.read(head, for_use=False)
                if stored.problem is None:
                    if history.afresh:  # what it set aside goes; what came since stays
                        aside = history.version
                        since = self.read(aside, for_use=False).runs if aside in self.versions() else 0
                        stored = replace(stored, members=tuple(m for m in stored.members if m.run >= since))
                    stored = self._without_dead(stored)
                    onto = history.merged_onto(stored)
                    if onto.runs == stored.runs and not history.afresh:
                        # every member of this run is stored already (its ranking stage run again): nothing to add
                        (self.folder / RESERVED / version).unlink(missing_ok=True)
                        return stored, None
                    LOGGER.warning(
                        "Another run on data source %r stored the member history (version %s) after this run read "
                        "%s: this run's %d member(s) are added to it.", self.data_source, head,
                        history.version or "none", len(history.own))
                    history, merged = onto, head
            target = self.folder / version / self.name
            if target.exists():
                raise DatasetError(f"{target} exists: a version is never overwritten")
            _write_atomically(target, to_bytes(history, self._sequence + 1))
            (self.folder / RESERVED / version).unlink(missing_ok=True)  # its numbers are stored now
            if (self.folder / HEAD).is_file():
                with contextlib.suppress(OSError):
                    (self.folder / HEAD).unlink()  # the pointer earlier versions wrote: the newest version is read
        return history, merged

    def _without_dead(self, history: MemberHistory) -> MemberHistory:
        if self.records is None:
            return history
        from iclfs.io._liveness import DEAD, state

        dead = {m.version for m in history.members if m.version is not None and state(self.records, m.version) == DEAD}
        if not dead:
            return history
        LOGGER.info("Member history of %r: the members of the run(s) %s, killed before they published, are "
                    "removed", self.data_source, ", ".join(sorted(dead)))
        return replace(history, members=tuple(m for m in history.members if m.version not in dead))


class _Stores:
    """A data source's member histories, one folder per method: ``member_history.npz/<method>/<version>/...``.

    A folder an earlier version wrote (versions straight under it) is the history of the method its members
    have; every other method gets a folder of its own.
    """

    def __init__(self, root: Path, data_source: str | None, records: Path | None = None) -> None:
        self.root = root
        self.data_source = data_source
        self.records = records

    def legacy_method(self) -> str | None:
        legacy = _Store(self.root, self.data_source)
        if legacy.head() is None:
            return None
        members = legacy.read(for_use=False).members
        return members[0].method if members else "iclfs"

    def of(self, method: str) -> _Store:
        if not (self.root / method).is_dir() and self.legacy_method() == method:
            return _Store(self.root, self.data_source, method=method, records=self.records)
        return _Store(self.root / method, self.data_source, name=self.root.name, method=method, records=self.records)

    def all(self) -> list[_Store]:
        stores = [_Store(self.root / p.name, self.data_source, name=self.root.name, method=p.name,
                         records=self.records)
                  for p in sorted(self.root.iterdir()) if p.is_dir() and not p.name.startswith(".")
                  and not (p / self.root.name).exists()] if self.root.is_dir() else []
        legacy = self.legacy_method()
        return stores + ([_Store(self.root, self.data_source, method=legacy, records=self.records)] if legacy else [])


class MemberHistories:
    """Every method's member history of a data source (what ``previous_member_history`` loads).

    ``of(method)`` reads one: its newest version, without the members of runs that have not completed, its next
    member number past every number this run or another running run reserved. ``reserve(method, count)``
    reserves this run's numbers (the start of a carrying run), so that two runs started together train from
    distinct seeds.
    """

    def __init__(self, stores: _Stores, version: str | None = None) -> None:
        self._stores = stores
        self.version = version  # this run's

    def of(self, method: str) -> MemberHistory:
        store = self._stores.of(method)
        history = store.read()
        first = store.reserved(self.version) if self.version else None
        if first is not None and first > history.next_index:
            history = replace(history, next_index=first)
        return history

    def at(self, method: str, version: str | None) -> MemberHistory:
        """``method``'s history exactly as stored in ``version``, every member included; an empty one with
        None. A run's later nodes read the version its start named (:func:`iclfs.method._ranking.resume`)."""
        store = self._stores.of(method)
        if version is None:
            return MemberHistory(data_source=self._stores.data_source, method=method)
        if version not in store.versions():
            raise DatasetError(f"the member history {store.folder / version / store.name}, which this run started "
                               "from, is gone; run the training stage again")
        history = store.read(version, for_use=False)
        if history.problem is not None or not history.members and history.notes:
            raise DatasetError(f"the member history version {version}, which this run started from, cannot be read "
                               f"({history.problem or '; '.join(history.notes)}); run the training stage again")
        return history

    def reserve(self, method: str, count: int) -> int | None:
        """This run's first member number for ``method`` (None without a run version)."""
        if self.version is None:
            return None
        return self._stores.of(method).reserve(self.version, count)

    def methods(self) -> list[str]:
        return sorted({store.method for store in self._stores.all()})


def _write_atomically(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the history from the other users of the project
        with os.fdopen(handle, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _records(records: str | dict | None) -> Path | None:
    """The run records' folder (``{filepath: ...}``, which Kedro makes absolute), or None."""
    if isinstance(records, dict):
        records = records.get("filepath")
    return None if records is None else Path(get_protocol_and_path(str(records))[1])


def _owner(path: Path) -> str:
    try:
        import pwd

        return pwd.getpwuid(path.stat().st_uid).pw_name
    except (ImportError, KeyError, OSError):
        return "another user"


class MemberHistoryDataset(VersionedArtifact, AbstractVersionedDataset[MemberHistory, MemberHistories]):
    """The member histories of one data source, one per method: saved version by version, the later writer
    merging.

    ``save`` writes nothing when the history gained no member (a run that does
    not carry, or a ``ranking`` stage run on members already carried); the
    members it adds record this run's version, so a run that does not complete
    leaves members that no run reads. ``load`` returns :class:`MemberHistories`.
    ``records`` is the data source's run records (``run_record.json``).

    Example ``catalog.yml`` entry::

        member_history:
          type: iclfs.io.datasets.MemberHistoryDataset
          filepath: data/07_model_output/<source>/member_history.npz
          data_source: <source>
          records: {filepath: data/08_reporting/<source>/run_record.json}
          versioned: true
    """

    def __init__(self, *, filepath: str, data_source: str | None = None, version: Version | None = None,
                 records: str | dict | None = None, metadata: dict[str, Any] | None = None) -> None:
        import fsspec

        path = _local(filepath, type(self).__name__)
        self._stores = _Stores(path, data_source, _records(records))
        self._protocol = "file"
        self._fs = fsspec.filesystem("file")
        self.metadata = metadata
        self.merged_onto: str | None = None  # the version another run stored, which this run's save merged onto
        super().__init__(filepath=PurePosixPath(str(path)), version=version, exists_function=self._fs.exists,
                         glob_function=self._fs.glob)

    def load(self) -> MemberHistories:
        return MemberHistories(self._stores, self._version.save if self._version is not None else None)

    def save(self, data: MemberHistory) -> None:
        if not isinstance(data, MemberHistory):
            raise DatasetError(f"MemberHistoryDataset saves a MemberHistory, got {type(data).__name__}")
        if not data.own:
            return
        version = self._version.save if self._version is not None and self._version.save else None
        if version is None:
            from kedro.io.core import generate_timestamp

            version = generate_timestamp()
        own = {id(m) for m in data.own}
        data = replace(data, members=tuple(replace(m, version=version) if id(m) in own else m for m in data.members))
        _, self.merged_onto = self._stores.of(data.method).write(data, version)

    def discard(self, version: str) -> bool:
        """Remove a failed or dead run's ``version`` (of whichever method it wrote) and its reservations."""
        return any([store.discard(version) for store in self._stores.all()])

    def writable_problem(self) -> str | None:
        """Why this run could not write or lock the history, naming the folder and its owner; None if it can."""
        root = self._stores.root
        for folder in [root, *(store.folder for store in self._stores.all())]:
            if folder.exists() and (not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK)):
                what = "is not a folder" if not folder.is_dir() else f"cannot be written (owner: {_owner(folder)})"
                return f"the member history folder {folder} {what}"
            lock = folder / LOCK
            if lock.exists() and not os.access(lock, os.W_OK):
                return f"the member history's lock {lock} cannot be opened (owner: {_owner(lock)})"
        return None

    def resolve_load_version(self) -> str | None:
        # A save may write nothing (no new member) or merge: what a run saved is its own version or none,
        # never "the latest"; loading reads each method's newest version.
        if self._version is not None and self._version.save:
            return self._version.save
        return None

    def _exists(self) -> bool:
        return any(store.head() is not None for store in self._stores.all())

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._stores.root), "data_source": self._stores.data_source}


class MemberHistoryView(AbstractVersionedDataset[None, MemberHistories]):
    """Load-only: the member histories a run starts from, one per method (:class:`MemberHistories`).

    A separate catalog entry from ``member_history`` because a run both reads
    the history and writes a new version of it. Versioned only to know the
    run's version, under which a carrying run reserves its member numbers.
    """

    def __init__(self, *, filepath: str, data_source: str | None = None, version: Version | None = None,
                 records: str | dict | None = None, metadata: dict[str, Any] | None = None) -> None:
        import fsspec

        path = _local(filepath, type(self).__name__)
        self._stores = _Stores(path, data_source, _records(records))
        self.metadata = metadata
        fs = fsspec.filesystem("file")
        super().__init__(filepath=PurePosixPath(str(path)), version=version, exists_function=fs.exists,
                         glob_function=fs.glob)

    def load(self) -> MemberHistories:
        return MemberHistories(self._stores, self._version.save if self._version is not None else None)

    def save(self, data: None) -> None:
        raise DatasetError("MemberHistoryView is read-only; the run's history is saved to member_history")

    def _exists(self) -> bool:
        return any(store.head() is not None for store in self._stores.all())

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._stores.root), "data_source": self._stores.data_source}
