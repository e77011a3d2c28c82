"""Versioned artifacts that are whole or absent, and runs that read the versions they wrote.

Every versioned entry of the catalog is one of these classes: a Kedro
dataset with :class:`VersionedArtifact` in front of it.

* **Atomic versions.** A save writes ``<file>/<version>/.<name>.partial<suffix>``
  and renames it to ``<file>/<version>/<name>`` once complete. A run killed
  mid-write, or a full disk, leaves no file under the artifact's name, so the
  version is absent rather than truncated and "load the latest" skips it.
  Unversioned files (the benchmark's cells, the published report) are
  replaced the same way: the old file stays whole until the new one is.
* **Run isolation.** Within one Kedro session every dataset is given the
  session's save version. A load with no pinned version reads that version
  when it exists (this run wrote it) and the latest version otherwise (a
  stage run alone reads the last run's output). Two runs on the same data
  source at once therefore never read each other's artifacts.
* **Unreadable versions are named.** A version that cannot be read names its
  folder, so it can be deleted.
"""

from __future__ import annotations

import csv
import io
from pathlib import PurePosixPath
from typing import Any

import pandas as pd
from kedro.io.core import DatasetError, get_filepath_str
from pandas._libs.parsers import STR_NA_VALUES
from kedro_datasets.json import JSONDataset as _JSONDataset
from kedro_datasets.matplotlib import MatplotlibDataset as _MatplotlibDataset
from kedro_datasets.pandas import CSVDataset as _CSVDataset
from kedro_datasets.pandas import ParquetDataset as _ParquetDataset
from kedro_datasets.text import TextDataset as _TextDataset


def _unwrapped(method: Any) -> Any:
    """The function Kedro's load/save wrapper wraps (the wrapper is re-applied to the subclass)."""
    return getattr(method, "__wrapped__", method)


def staging_path(final: PurePosixPath) -> PurePosixPath:
    """Where a version's file is written before it is renamed to ``final`` (same folder, same suffix)."""
    return final.parent / f".{final.stem}.partial{final.suffix}"


class VersionedArtifact:
    """Mixin for a Kedro dataset class: atomic versioned saves, run-isolated loads (module docstring)."""

    _staging: PurePosixPath | None = None

    def _get_save_path(self) -> PurePosixPath:
        if self._staging is not None:
            return self._staging
        return super()._get_save_path()

    def resolve_load_version(self) -> str | None:
        version = getattr(self, "_version", None)
        if version is not None and version.load is None and version.save is not None:
            own = self._get_versioned_path(version.save)
            if self._exists_function(get_filepath_str(own, self._protocol)):
                return version.save
        return super().resolve_load_version()

    def save(self, data: Any) -> None:
        parent_save = _unwrapped(super().save)
        final = super()._get_save_path()  # Kedro refuses a version that exists
        self._staging = staging_path(final)
        staged = get_filepath_str(self._staging, self._protocol)
        target = get_filepath_str(final, self._protocol)
        try:
            parent_save(self, data)
            if self._fs.isdir(staged) and self._fs.exists(target):  # a folder of figures replaces its old self
                self._fs.rm(target, recursive=True)
            self._fs.mv(staged, target, recursive=True)
        except BaseException:
            if self._fs.exists(staged):
                self._fs.rm(staged, recursive=True)
            raise
        finally:
            self._staging = None
            self._fs.invalidate_cache(get_filepath_str(final.parent, self._protocol))

    def load(self) -> Any:
        try:
            return _unwrapped(super().load)(self)
        except Exception as err:
            if not getattr(self, "_version", None) or isinstance(err, FileNotFoundError):
                raise
            folder = self._get_load_path().parent
            raise DatasetError(
                f"{self._filepath.name}: version {folder.name} cannot be read ({type(err).__name__}: {err}). "
                f"Delete the folder {folder} to fall back to the version before it, or run the stage that "
                "writes it again."
            ) from err


#: First characters that make a spreadsheet read a cell as a formula (or a command), and the quote that
#: neutralises them; a cell that already starts with the quote gets one more, so reading back is exact.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def neutralise(text: str) -> str:
    """``text`` as a spreadsheet-safe CSV cell: a quote in front when it starts like a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def restore(text: str) -> str:
    """The inverse of :func:`neutralise`."""
    return text[1:] if text.startswith("'") else text


class _NamedCSV(_CSVDataset):
    """``pandas.CSVDataset`` whose ``text_columns`` round-trip exactly and are written spreadsheet-safe."""

    def __init__(self, *, text_columns: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._text_columns = tuple(text_columns) if text_columns is not None else ("feature_name",)

    def load(self) -> pd.DataFrame:
        path = get_filepath_str(self._get_load_path(), self._protocol)
        with self._fs.open(path, mode="rb") as handle:
            raw = handle.read()
        first = raw.split(b"\n", 1)[0].decode("utf-8-sig") if raw else ""
        columns = next(csv.reader([first]), []) if first else []
        text = [c for c in columns if c in self._text_columns]
        args = dict(self._load_args)
        # pandas 3.1 (the pinned range) reads every float back as the exact value written by default; its
        # float_precision argument is deprecated
        if text:
            # Only the other columns read pandas' missing-value markers: a name is never missing.
            args.update(dtype={**args.get("dtype", {}), **dict.fromkeys(text, str)}, keep_default_na=False,
                        na_values={c: sorted(STR_NA_VALUES) for c in columns if c not in text})
        frame = pd.read_csv(io.BytesIO(raw), **args)
        for column in text:
            frame[column] = pd.Series([restore(v) for v in frame[column].astype(object)], index=frame.index,
                                      dtype=object)
        return frame

    def save(self, data: pd.DataFrame) -> None:
        if isinstance(data, pd.DataFrame) and any(c in data for c in self._text_columns):
            data = data.copy()
            for column in (c for c in self._text_columns if c in data):
                data[column] = [neutralise(str(v)) for v in data[column]]
        _unwrapped(_CSVDataset.save)(self, data)


class CSVDataset(VersionedArtifact, _NamedCSV):
    """``pandas.CSVDataset`` with whole-or-absent versions and run-isolated loads.

    The ``text_columns`` (default: ``feature_name``) hold names, which are
    data: they are read back as the exact strings written (``NA``, ``042``
    and an empty name stay strings), and written spreadsheet-safe: a cell that
    starts with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return or a quote
    gets a quote in front, which loading takes off again.
    """


class ParquetDataset(VersionedArtifact, _ParquetDataset):
    """``pandas.ParquetDataset`` with whole-or-absent versions and run-isolated loads."""


class JSONDataset(VersionedArtifact, _JSONDataset):
    """``json.JSONDataset`` with whole-or-absent versions and run-isolated loads."""


class TextDataset(VersionedArtifact, _TextDataset):
    """``text.TextDataset`` with whole-or-absent versions and run-isolated loads."""


class MatplotlibDataset(VersionedArtifact, _MatplotlibDataset):
    """``matplotlib.MatplotlibDataset`` with whole-or-absent versions (a figure, or a folder of them)."""
