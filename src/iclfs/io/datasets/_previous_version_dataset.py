"""Read the version of a versioned CSV artifact saved by the run before this one."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

import fsspec
import pandas as pd
from kedro.io.core import AbstractVersionedDataset, DatasetError, Version, get_protocol_and_path


class PreviousVersionDataset(AbstractVersionedDataset[None, pd.DataFrame]):
    """Load-only view of the earlier runs' versions of a versioned CSV artifact, by method.

    Point ``filepath`` at the same file as the artifact and set
    ``versioned: true``: Kedro then passes this run's save version, and
    ``load`` returns the versions strictly older than it (so a run that
    has already saved its own version still sees the ones before). With
    ``records`` (the run records' file, ``run_record.json``), only the
    versions of complete runs count: a killed run's partial version is never
    a previous list, and each version's ``method`` column is its run's
    ``selection.method``. It returns, per method, the ``count`` newest earlier
    versions (default 1) in one table, oldest first, with ``version`` and
    ``method`` columns; a node takes its own method's
    (:func:`iclfs.project._frames.previous_of`). With no earlier version it
    returns an empty DataFrame.

    ``old_layout`` (a filepath) is where the same artifact was stored before
    each method had a folder of its own
    (``data/07_model_output/<source>/selections.csv`` for
    ``data/07_model_output/<source>/<method>/selections.csv``): its versions
    are read too, each still of its run record's method, so a run after the
    upgrade holds to the list an earlier version of the project handed on.
    Nothing there is moved or written; a version in both places is read from
    ``filepath``.

    Example ``catalog.yml`` entry::

        previous_selections:
          type: iclfs.io.datasets.PreviousVersionDataset
          filepath: data/07_model_output/synthetic/iclfs/selections.csv
          old_layout: {filepath: data/07_model_output/synthetic/selections.csv}
          records: {filepath: data/08_reporting/synthetic/run_record.json}
          versioned: true
    """

    def __init__(self, *, filepath: str, version: Version | None = None, records: str | dict | None = None,
                 count: int | None = None, old_layout: str | dict | None = None,
                 load_args: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> None:
        if count is None:
            count = 1
        if not isinstance(count, int) or count < 1:
            raise DatasetError(f"PreviousVersionDataset({filepath}): count must be a positive integer, got {count!r}")
        self._count = count
        protocol, path = get_protocol_and_path(filepath, version)
        if isinstance(records, dict):  # {filepath: ...}: Kedro makes a filepath absolute, whatever the cwd
            records = records["filepath"]
        self._records = None if records is None else PurePosixPath(get_protocol_and_path(records)[1])
        if isinstance(old_layout, dict):  # {filepath: ...}, as records
            old_layout = old_layout["filepath"]
        self._old_layout = None if old_layout is None else PurePosixPath(get_protocol_and_path(old_layout)[1])
        if self._old_layout is not None and self._old_layout.name != PurePosixPath(path).name:
            raise DatasetError(f"PreviousVersionDataset({filepath}): old_layout {old_layout} must name the same file")
        self._folders: dict[str, PurePosixPath] = {}  # version -> the artifact folder it was read from
        self._load_args = dict(load_args or {})
        self._protocol = protocol
        self._fs = fsspec.filesystem(protocol)
        self.metadata = metadata
        super().__init__(filepath=PurePosixPath(path), version=version,
                         exists_function=self._fs.exists, glob_function=self._fs.glob)

    def previous_version(self) -> str | None:
        """The newest saved version older than this run's, or None."""
        older = self.previous_versions()
        return older[-1] if older else None

    def previous_versions(self) -> list[str]:
        """Every saved version older than this run's (of complete runs, with ``records``), oldest first."""
        return list(self._methods())

    def _methods(self) -> dict[str, str]:
        """``{version: method}`` of every saved version older than this run's, oldest first; the method is its
        run record's (``iclfs`` for a record of an earlier version, which named none)."""
        current = self._version.save if self._version is not None else None
        self._folders = {}
        for folder in (self._old_layout, self._filepath):  # the method's own folder last: it wins a tie
            if folder is not None:
                pattern = str(folder / "*" / folder.name)
                self._folders.update({PurePosixPath(p).parent.name: folder for p in self._fs.glob(pattern)})
        found = sorted(self._folders)
        methods = dict.fromkeys(found, "iclfs")
        if self._records is not None:
            methods = {}
            for version in found:
                record = self._records / version / self._records.name
                if not self._fs.exists(str(record)):
                    continue  # not a complete run's
                try:
                    with self._fs.open(str(record), "r") as handle:
                        methods[version] = str(json.load(handle).get("method") or "iclfs")
                except (OSError, ValueError):
                    continue
        return {v: m for v, m in methods.items() if current is None or v < current}

    def folder_of(self, version: str) -> PurePosixPath:
        """The artifact folder ``version`` is stored in: ``filepath``'s, or the old layout's."""
        if version not in self._folders:
            self._methods()
        return self._folders.get(version, self._filepath)

    def _read(self, version: str) -> pd.DataFrame:
        from ._versioned import CSVDataset, JSONDataset

        folder = self.folder_of(version)
        if folder.suffix == ".json":  # one row, the file's content in "content"
            content = JSONDataset(filepath=str(folder), version=Version(version, None)).load()
            return pd.DataFrame({"content": [content]})
        return CSVDataset(filepath=str(folder), version=Version(version, None), load_args=self._load_args).load()

    def load(self) -> pd.DataFrame:
        methods = self._methods()
        chosen = []
        for method in sorted(set(methods.values())):
            chosen += [v for v, m in methods.items() if m == method][-self._count:]
        if not chosen:
            return pd.DataFrame()
        return pd.concat([self._read(v).assign(version=v, method=methods[v]) for v in sorted(chosen)],
                         ignore_index=True)

    def save(self, data: None) -> None:
        raise DatasetError("PreviousVersionDataset is read-only")

    def _exists(self) -> bool:
        return self.previous_version() is not None

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath, "old_layout": self._old_layout, "version": self._version}
