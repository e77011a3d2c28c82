"""The run's input: a samples x features table at any fsspec location, or the embedded synthetic one."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import fsspec
from kedro.io import AbstractDataset, DatasetError
from kedro.io.core import get_filepath_str, get_protocol_and_path

from iclfs.io._synthetic import make_synthetic
from iclfs.io._tables import ORIENTATIONS, TableReadError, parse_feature_table, table_format
from iclfs.method._preprocessing import FeatureTable


class FeatureTableDataset(AbstractDataset[None, FeatureTable]):
    """Read-only input dataset returning a :class:`~iclfs.method._preprocessing.FeatureTable`.

    Formats, compression, ``orientation``, ``id_column``, ``label_column``,
    ``sep`` and ``decimal`` are those of :func:`iclfs.io._tables.parse_feature_table`: ``.csv``,
    ``.tsv``, ``.txt`` (also ``.gz``, ``.bz2``, ``.xz``, ``.zip``),
    ``.parquet``, ``.h5ad`` and ``.mat``. Instead of ``filepath``, a
    ``filename`` is looked up in ``search_dirs`` (the first folder that has
    it). With neither it is the embedded synthetic table, generated from
    ``synthetic`` (the arguments of :func:`iclfs.io._synthetic.make_synthetic`).

    Example ``catalog.yml`` entry::

        raw_data:
          type: iclfs.io.datasets.FeatureTableDataset
          filepath: data/01_raw/expression.tsv.gz
          orientation: features_in_rows   # genes x samples
          label_column: null
    """

    def __init__(
        self,
        *,
        filepath: str | None = None,
        filename: str | None = None,
        search_dirs: list[str] | None = None,
        orientation: str = "samples_in_rows",
        data_key: str = "X",
        label_key: str | None = "Y",
        label_column: str | None = None,
        id_column: str | None = None,
        sep: str | None = None,
        decimal: str | None = None,
        load_args: dict[str, Any] | None = None,
        synthetic: dict[str, Any] | None = None,
        credentials: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if orientation not in ORIENTATIONS:
            raise DatasetError(f"FeatureTableDataset: orientation {orientation!r} is not one of "
                               f"{', '.join(ORIENTATIONS)}")
        self._options = {"orientation": orientation, "data_key": data_key, "label_key": label_key,
                         "label_column": label_column, "id_column": id_column, "sep": sep, "decimal": decimal,
                         "load_args": dict(load_args or {})}
        self._synthetic = dict(synthetic or {})
        self._search_dirs = [str(d) for d in search_dirs or []]
        self.metadata = metadata
        self._filepath = None
        if filepath is not None and filename is not None:
            raise DatasetError("FeatureTableDataset: give filepath, or filename with search_dirs, not both")
        if filename is not None and not self._search_dirs:
            raise DatasetError(f"FeatureTableDataset: filename {filename!r} needs search_dirs to look in")
        filepath = filepath if filepath is not None else filename
        if filepath is None:
            return
        if filename is None and "://" not in str(filepath) and Path(str(filepath)).is_dir():
            raise DatasetError(f"{filepath}: is a folder, not a file; give the table's own path "
                               "(input=folder/expr.tsv)")
        try:
            table_format(str(filepath))
        except TableReadError as err:
            raise DatasetError(str(err)) from err
        protocol, path = get_protocol_and_path(str(filepath))
        self._filepath = PurePosixPath(path)
        self._protocol = protocol
        self._fs = fsspec.filesystem(protocol, **(credentials or {}))

    def _candidates(self) -> list[str]:
        if not self._search_dirs:
            return [get_filepath_str(self._filepath, self._protocol)]
        # Only the name: Kedro's catalog makes relative paths in path-like keys absolute.
        return [get_filepath_str(PurePosixPath(d) / self._filepath.name, self._protocol) for d in self._search_dirs]

    def _located(self) -> str | None:
        return next((path for path in self._candidates() if self._fs.exists(path)), None)

    @property
    def embedded(self) -> bool:
        """True when there is no file: the embedded synthetic table."""
        return self._filepath is None

    def check(self) -> None:
        """Raise :class:`DatasetError` unless the file is there and is a file (a folder is named as such)."""
        if self._filepath is None:
            return
        source = self._located()
        if source is None:
            looked = " or ".join(self._candidates())
            raise DatasetError(f"{looked}: file not found. Check the path (for the benchmark files, "
                               "datasets_dir and validation_dir in conf/base/globals.yml).")
        if self._fs.isdir(source):
            raise DatasetError(f"{source}: is a folder, not a file; give the table's own path "
                               "(input=folder/expr.tsv)")

    def load(self) -> FeatureTable:
        if self._filepath is None:
            try:
                return make_synthetic(**self._synthetic)
            except TypeError as err:
                raise DatasetError(f"FeatureTableDataset: bad synthetic argument ({err})") from err
        self.check()
        source = self._located()
        with self._fs.open(source, "rb") as handle:
            raw = handle.read()
        try:
            return parse_feature_table(raw, self._filepath.name, source, **self._options)
        except TableReadError as err:
            raise DatasetError(str(err)) from err

    def save(self, data: None) -> None:
        raise DatasetError("FeatureTableDataset is read-only")

    def _exists(self) -> bool:
        return self._filepath is None or self._located() is not None

    def _describe(self) -> dict[str, Any]:
        return {"filepath": None if self._filepath is None else str(self._filepath),
                "search_dirs": self._search_dirs, **{k: v for k, v in self._options.items() if k != "load_args"},
                "synthetic": self._synthetic or None}
