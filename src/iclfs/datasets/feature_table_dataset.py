"""Read a samples x features table from ``.mat``, ``.csv`` or ``.parquet``."""

from __future__ import annotations

import csv
import io
from pathlib import PurePosixPath
from typing import Any

import fsspec
import numpy as np
import pandas as pd
import scipy.io
from kedro.io import AbstractDataset, DatasetError
from kedro.io.core import get_filepath_str, get_protocol_and_path

from iclfs.core.preprocessing import FeatureTable

SUFFIXES = (".mat", ".csv", ".parquet")


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
        if not raw:
            raise DatasetError(f"{source}: the file is empty")
        if self._suffix == ".mat":
            return self._load_mat(raw, source)
        return self._load_frame(raw, source)

    def _load_mat(self, raw: bytes, source: str) -> FeatureTable:
        try:
            content = scipy.io.loadmat(io.BytesIO(raw), **self._load_args)
        except Exception as err:  # scipy raises several unrelated types for bad files
            raise DatasetError(f"{source}: not a readable MATLAB .mat file ({err})") from err
        keys = sorted(k for k in content if not k.startswith("__"))
        if self._data_key not in content:
            raise DatasetError(
                f"{source}: no data matrix under key {self._data_key!r}; keys found: {keys}. "
                "Set data_key in the catalog entry."
            )
        y = None
        if self._label_key is not None and self._label_key in content:
            y = np.asarray(content[self._label_key]).reshape(-1) if np.size(content[self._label_key]) else None
        return FeatureTable(X=content[self._data_key], y=y, source=source)

    def _load_frame(self, raw: bytes, source: str) -> FeatureTable:
        try:
            if self._suffix == ".csv":
                frame = pd.read_csv(io.BytesIO(raw), **self._load_args)
            else:
                frame = pd.read_parquet(io.BytesIO(raw), **self._load_args)
        except Exception as err:  # pandas/pyarrow parse errors have many types
            raise DatasetError(f"{source}: cannot be parsed as {self._suffix} ({err})") from err
        missing = [c for c in (self._label_column, self._id_column) if c is not None and c not in frame.columns]
        if missing:
            raise DatasetError(f"{source}: column(s) {missing} not found; columns start with {list(frame.columns[:10])}")
        y = frame.pop(self._label_column).to_numpy() if self._label_column else None
        if self._id_column:
            frame = frame.drop(columns=[self._id_column])
        names = [str(c) for c in frame.columns]
        if self._suffix == ".csv":
            names = self._csv_header(raw, exclude={self._label_column, self._id_column}) or names
        return FeatureTable(X=frame, y=y, feature_names=names, source=source)

    def _csv_header(self, raw: bytes, exclude: set) -> list[str] | None:
        """The header as written: pandas renames a repeated name ("a" -> "a.1"),
        which would hide a duplicate from the checks downstream."""
        if self._load_args.get("header", "infer") != "infer" or "names" in self._load_args:
            return None
        first_line = raw.split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")
        header = next(csv.reader([first_line], delimiter=self._load_args.get("sep", ",")), [])
        return [name for name in header if name not in exclude]

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
