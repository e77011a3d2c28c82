"""Read a samples x features table from ``.mat``, ``.csv`` or ``.parquet``, at any fsspec location.

The parsing is :func:`iclfs.core.tables.parse_feature_table`; this class adds
the location, the catalog options and Kedro's error type.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import fsspec
from kedro.io import AbstractDataset, DatasetError
from kedro.io.core import get_filepath_str, get_protocol_and_path

from iclfs.core.preprocessing import FeatureTable
from iclfs.core.tables import SUFFIXES, TableReadError, parse_feature_table


class FeatureTableDataset(AbstractDataset[None, FeatureTable]):
    """Read-only input dataset returning a :class:`~iclfs.core.preprocessing.FeatureTable`.

    * ``.mat`` (scikit-feature layout): matrix under ``data_key`` (``X``),
      optional labels under ``label_key`` (``Y``). Dense or sparse, any
      numeric dtype.
    * ``.csv`` / ``.parquet`` with a header: every column is a feature except
      ``label_column`` and ``id_column`` when given; headers become feature names.

    Example ``catalog.yml`` entry::

        raw_data:
          type: iclfs.datasets.FeatureTableDataset
          filepath: ../shared/datasets/COIL20.mat
    """

    def __init__(
        self,
        *,
        filepath: str,
        data_key: str = "X",
        label_key: str | None = "Y",
        label_column: str | None = None,
        id_column: str | None = None,
        load_args: dict[str, Any] | None = None,
        credentials: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        protocol, path = get_protocol_and_path(filepath)
        self._suffix = PurePosixPath(path).suffix.lower()
        if self._suffix not in SUFFIXES:
            raise DatasetError(
                f"FeatureTableDataset: {filepath!r} has suffix {self._suffix!r}; supported: {', '.join(SUFFIXES)}"
            )
        self._filepath = PurePosixPath(path)
        self._protocol = protocol
        self._fs = fsspec.filesystem(protocol, **(credentials or {}))
        self._data_key = data_key
        self._label_key = label_key
        self._label_column = label_column
        self._id_column = id_column
        self._load_args = dict(load_args or {})
        self.metadata = metadata

    @property
    def _source(self) -> str:
        return get_filepath_str(self._filepath, self._protocol)

    def load(self) -> FeatureTable:
        source = self._source
        if not self._fs.exists(source):
            raise DatasetError(
                f"{source}: file not found. Check the path (for the benchmark files, the "
                "'datasets_dir' entry in conf/base/globals.yml)."
            )
        with self._fs.open(source, "rb") as handle:
            raw = handle.read()
        try:
            return parse_feature_table(
                raw, self._suffix, source, data_key=self._data_key, label_key=self._label_key,
                label_column=self._label_column, id_column=self._id_column, load_args=self._load_args,
            )
        except TableReadError as err:
            raise DatasetError(str(err)) from err

    def save(self, data: None) -> None:
        raise DatasetError("FeatureTableDataset is read-only")

    def _exists(self) -> bool:
        return self._fs.exists(self._source)

    def _describe(self) -> dict[str, Any]:
        return {
            "filepath": self._filepath,
            "data_key": self._data_key,
            "label_key": self._label_key,
            "label_column": self._label_column,
            "id_column": self._id_column,
        }
