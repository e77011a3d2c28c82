"""A data source's member history, stored version by version (docs/consensus.md, "Carried members").

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
from kedro.io.core import AbstractDataset, AbstractVersionedDataset, DatasetError, Version, get_protocol_and_path

from iclfs.method._ranking import Member, MemberHistory

from ._versioned import VersionedArtifact

LOGGER = logging.getLogger(__name__)
FORMAT = 1
HEAD = ".head"
LOCK = ".lock"


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


def to_bytes(history: MemberHistory) -> bytes:
    """The ``.npz`` of a history (no pickles: plain arrays only)."""
    tables: dict[tuple[str, ...], int] = {}
    arrays: dict[str, np.ndarray] = {
        "format": np.array(FORMAT), "data_source": np.array(history.data_source or ""),
        "runs": np.array(history.runs, dtype=np.int64), "next_index": np.array(history.next_index, dtype=np.int64),
        "max_members": np.array(history.kept or 0, dtype=np.int64),
    }
    columns: dict[str, list] = {"run": [], "index": [], "seed": [], "seconds": [], "fingerprint": [], "table": [],
                                "method": []}
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
                           ("method", member.method)):
            columns[key].append(value)
    arrays.update({f"member_{key}": np.asarray(values, dtype=dtype) for (key, values), dtype in zip(
        columns.items(), (np.int64, np.int64, np.int64, np.float64, np.str_, np.int64, np.str_), strict=True)})
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
            members.append(Member(run=run, index=int(content["member_index"][i]),
                                  seed=int(content["member_seed"][i]), feature_names=tables[table],
                                  scores=content[f"scores_{i}"], seconds=float(content["member_seconds"][i]),
                                  fingerprint=str(content["member_fingerprint"][i]),
                                  method=str(content["member_method"][i]), laplacian=laplacian))
        # A history an earlier version wrote may hold the lists its run handed on (list_<k>): the lists a run
        # holds to are now its data source's last published ones, so those are not read.
        runs = int(content["runs"])
        return MemberHistory(members=tuple(members), runs=runs, next_index=int(content["next_index"]),
                             data_source=str(content["data_source"]) or None, version=version, read_runs=runs,
                             kept=int(content["max_members"]) or None)


class _Store:
    """The versions of one history folder, its ``.head`` and its lock."""

    def __init__(self, folder: Path, data_source: str | None, name: str | None = None,
                 method: str = "iclfs") -> None:
        self.folder = folder
        self.name = name or folder.name
        self.data_source = data_source
        self.method = method

    def versions(self) -> list[str]:
        return sorted(p.parent.name for p in self.folder.glob(f"*/{self.name}"))

    def head(self) -> str | None:
        """The version ``.head`` names; the newest version when ``.head`` is missing or names a removed one."""
        versions = self.versions()
        pointer = self.folder / HEAD
        with contextlib.suppress(OSError):
            named = pointer.read_text().strip()
            if named in versions:
                return named
        return versions[-1] if versions else None

    def read(self, version: str | None) -> MemberHistory:
        if version is None:
            return MemberHistory(data_source=self.data_source, method=self.method)
        path = self.folder / version / self.name
        try:
            history = from_file(path, version)
        except Exception as err:  # noqa: BLE001  (any unreadable file: say so and start afresh)
            return MemberHistory(data_source=self.data_source, method=self.method, problem=(
                f"the member history {path} cannot be read ({type(err).__name__}: {err})"))
        if self.data_source is not None and history.data_source not in (None, self.data_source):
            return MemberHistory(data_source=self.data_source, method=self.method, problem=(
                f"the member history {path} belongs to the data source {history.data_source!r}, not "
                f"{self.data_source!r}"))
        return replace(history, method=self.method)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        try:
            import fcntl
        except ImportError:  # pragma: no cover  (Windows: one writer at a time is the user's to keep)
            self.folder.mkdir(parents=True, exist_ok=True)
            yield
            return
        while True:
            self.folder.mkdir(parents=True, exist_ok=True)
            try:
                handle = open(self.folder / LOCK, "a+")  # noqa: SIM115  (closed by the with below)
            except FileNotFoundError:  # discard() removed the emptied folder in between: make it again
                continue
            with handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                try:
                    # discard() may have removed the lock file while this run waited on it: lock the one there is
                    try:
                        current = os.path.samestat(os.fstat(handle.fileno()), os.stat(self.folder / LOCK))
                    except FileNotFoundError:
                        current = False
                    if current:
                        yield
                        return
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def discard(self, version: str) -> bool:
        """Remove ``version`` (a failed run's), point ``.head`` at the newest one left, and remove the folder's
        ``.head`` and lock when none is left. Whether ``version`` was there."""
        with self.locked():
            folder = self.folder / version
            found = folder.is_dir()
            shutil.rmtree(folder, ignore_errors=True)
            versions = self.versions()
            if versions:
                if (self.folder / HEAD).is_file() and (self.folder / HEAD).read_text().strip() not in versions:
                    _write_atomically(self.folder / HEAD, versions[-1].encode())
            else:
                (self.folder / HEAD).unlink(missing_ok=True)
                (self.folder / LOCK).unlink(missing_ok=True)  # held: a waiter sees it gone and locks afresh
        with contextlib.suppress(OSError):
            self.folder.rmdir()  # only when empty
        return found

    def write(self, history: MemberHistory, version: str) -> MemberHistory:
        """Store ``history`` as ``version`` (merged onto a newer head first) and point ``.head`` at it."""
        with self.locked():
            head = self.head()
            if not history.afresh and head is not None and head != history.version:
                stored = self.read(head)
                if stored.problem is None:
                    LOGGER.warning(
                        "Another run on data source %r stored the member history (version %s) after this run read "
                        "%s: this run's %d member(s) are added to it.", self.data_source, head,
                        history.version or "none", len(history.own))
                    history = history.merged_onto(stored)
            target = self.folder / version / self.name
            if target.exists():
                raise DatasetError(f"{target} exists: a version is never overwritten")
            _write_atomically(target, to_bytes(history))
            _write_atomically(self.folder / HEAD, version.encode())
        return history


class _Stores:
    """A data source's member histories, one folder per method: ``member_history.npz/<method>/<version>/...``.

    A folder an earlier version wrote (versions straight under it) is the history of the method its members
    have; every other method gets a folder of its own.
    """

    def __init__(self, root: Path, data_source: str | None) -> None:
        self.root = root
        self.data_source = data_source

    def legacy_method(self) -> str | None:
        legacy = _Store(self.root, self.data_source)
        head = legacy.head()
        if head is None:
            return None
        members = legacy.read(head).members
        return members[0].method if members else "iclfs"

    def of(self, method: str) -> _Store:
        if not (self.root / method).is_dir() and self.legacy_method() == method:
            return _Store(self.root, self.data_source, method=method)
        return _Store(self.root / method, self.data_source, name=self.root.name, method=method)

    def all(self) -> list[_Store]:
        stores = [_Store(self.root / p.name, self.data_source, name=self.root.name, method=p.name)
                  for p in sorted(self.root.iterdir()) if p.is_dir() and (p / HEAD).exists()] \
            if self.root.is_dir() else []
        legacy = self.legacy_method()
        return stores + ([_Store(self.root, self.data_source, method=legacy)] if legacy else [])


class MemberHistories:
    """Every method's member history of a data source (what ``previous_member_history`` loads): ``of(method)``
    reads one, as its ``.head`` names it; a method that has none gets an empty history."""

    def __init__(self, stores: _Stores) -> None:
        self._stores = stores

    def of(self, method: str) -> MemberHistory:
        store = self._stores.of(method)
        return store.read(store.head())

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


class MemberHistoryDataset(VersionedArtifact, AbstractVersionedDataset[MemberHistory, MemberHistory]):
    """The member history of one data source: saved version by version, the later writer merging.

    ``save`` writes nothing when the history gained no member (a run that does
    not carry, or a ``ranking`` stage run on members already carried). ``load``
    returns the history ``.head`` names.

    Example ``catalog.yml`` entry::

        member_history:
          type: iclfs.io.datasets.MemberHistoryDataset
          filepath: data/07_model_output/<source>/member_history.npz
          data_source: <source>
          versioned: true
    """

    def __init__(self, *, filepath: str, data_source: str | None = None, version: Version | None = None,
                 metadata: dict[str, Any] | None = None) -> None:
        import fsspec

        path = _local(filepath, type(self).__name__)
        self._stores = _Stores(path, data_source)
        self._protocol = "file"
        self._fs = fsspec.filesystem("file")
        self.metadata = metadata
        super().__init__(filepath=PurePosixPath(str(path)), version=version, exists_function=self._fs.exists,
                         glob_function=self._fs.glob)

    def load(self) -> MemberHistories:
        return MemberHistories(self._stores)

    def save(self, data: MemberHistory) -> None:
        if not isinstance(data, MemberHistory):
            raise DatasetError(f"MemberHistoryDataset saves a MemberHistory, got {type(data).__name__}")
        if not data.own:
            return
        version = self._version.save if self._version is not None and self._version.save else None
        if version is None:
            from kedro.io.core import generate_timestamp

            version = generate_timestamp()
        self._stores.of(data.method).write(data, version)

    def discard(self, version: str) -> bool:
        """Remove a failed run's ``version`` (of whichever method it wrote), keeping each ``.head`` on a version
        that exists."""
        return any([store.discard(version) for store in self._stores.all()])

    def resolve_load_version(self) -> str | None:
        # A save may write nothing (no new member) or merge: what a run saved is its own version or none,
        # never "the latest"; loading goes through each method's .head.
        if self._version is not None and self._version.save:
            return self._version.save
        return None

    def _exists(self) -> bool:
        return any(store.head() is not None for store in self._stores.all())

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._stores.root), "data_source": self._stores.data_source}


class MemberHistoryView(AbstractDataset[None, MemberHistories]):
    """Load-only: the member histories a run starts from, one per method (:class:`MemberHistories`).

    A separate catalog entry from ``member_history`` because a run both reads
    the history and writes a new version of it.
    """

    def __init__(self, *, filepath: str, data_source: str | None = None,
                 metadata: dict[str, Any] | None = None) -> None:
        self._stores = _Stores(_local(filepath, type(self).__name__), data_source)
        self.metadata = metadata

    def load(self) -> MemberHistories:
        return MemberHistories(self._stores)

    def save(self, data: None) -> None:
        raise DatasetError("MemberHistoryView is read-only; the run's history is saved to member_history")

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._stores.root), "data_source": self._stores.data_source}
