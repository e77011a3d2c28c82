"""Read the version of a versioned CSV artifact saved by the run before this one."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import fsspec
import pandas as pd
from kedro.io.core import AbstractVersionedDataset, DatasetError, Version, get_protocol_and_path


class PreviousVersionDataset(AbstractVersionedDataset[None, pd.DataFrame]):
    """Load-only view of an earlier run's version of a versioned CSV artifact.

    Point ``filepath`` at the same file as the artifact and set
    ``versioned: true``: Kedro then passes this run's save version, and
    ``load`` returns the newest version strictly older than it (so a run that
    has already saved its own version still sees the previous one). With
    ``records`` (the run records' file, ``run_record.json``), only the
    versions of complete runs count: a killed run's partial version is never
    the previous list. With no earlier version it returns an empty DataFrame.
    With ``count``, it returns the ``count`` newest earlier versions in one
    table, oldest first, with a ``version`` column.

    Example ``catalog.yml`` entry::

        previous_selections:
          type: iclfs.io.datasets.PreviousVersionDataset
          filepath: data/07_model_output/synthetic/selections.csv
          versioned: true
    """

    def __init__(self, *, filepath: str, version: Version | None = None, records: str | dict | None = None,
                 count: int | None = None, load_args: dict[str, Any] | None = None,
                 metadata: dict[str, Any] | None = None) -> None:
        if count is not None and (not isinstance(count, int) or count < 1):
            raise DatasetError(f"PreviousVersionDataset({filepath}): count must be a positive integer, got {count!r}")
        self._count = count
        protocol, path = get_protocol_and_path(filepath, version)
        if isinstance(records, dict):  # {filepath: ...}: Kedro makes a filepath absolute, whatever the cwd
            records = records["filepath"]
        self._records = None if records is None else PurePosixPath(get_protocol_and_path(records)[1])
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
        current = self._version.save if self._version is not None else None
        pattern = str(self._filepath / "*" / self._filepath.name)
        found = sorted(PurePosixPath(p).parent.name for p in self._fs.glob(pattern))
        if self._records is not None:
            complete = {PurePosixPath(p).parent.name
                        for p in self._fs.glob(str(self._records / "*" / self._records.name))}
            found = [v for v in found if v in complete]
        return [v for v in found if current is None or v < current]

    def _read(self, version: str) -> pd.DataFrame:
        from ._versioned import CSVDataset

        return CSVDataset(filepath=str(self._filepath), version=Version(version, None),
                          load_args=self._load_args).load()

    def load(self) -> pd.DataFrame:
        if self._count is not None:
            versions = self.previous_versions()[-self._count:]
            if not versions:
                return pd.DataFrame()
            return pd.concat([self._read(v).assign(version=v) for v in versions], ignore_index=True)
        version = self.previous_version()
        if version is None:
            return pd.DataFrame()
        frame = self._read(version)
        frame.attrs["version"] = version
        return frame

    def save(self, data: None) -> None:
        raise DatasetError("PreviousVersionDataset is read-only")

    def _exists(self) -> bool:
        return self.previous_version() is not None

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath, "version": self._version}
