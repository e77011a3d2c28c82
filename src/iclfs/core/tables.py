"""Parse a samples x features table from the bytes of a ``.mat``, ``.csv`` or ``.parquet`` file.

No Kedro here: :class:`iclfs.datasets.FeatureTableDataset` reads the bytes
(any fsspec location) and hands them to :func:`parse_feature_table`; scripts
that run without Kedro (the benchmarks, on a machine that has only the
numeric stack) read a local file with :func:`read_feature_table`.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.io

from iclfs.core.preprocessing import FeatureTable

SUFFIXES = (".mat", ".csv", ".parquet")


class TableReadError(ValueError):
    """The file cannot be read as a feature table; the message names the file and why."""


def parse_feature_table(
    raw: bytes,
    suffix: str,
    source: str,
    *,
    data_key: str = "X",
    label_key: str | None = "Y",
    label_column: str | None = None,
    id_column: str | None = None,
    load_args: dict[str, Any] | None = None,
) -> FeatureTable:
    """The table held in ``raw``, the whole content of a file named ``source``.

    * ``.mat`` (scikit-feature layout): matrix under ``data_key``, optional
      labels under ``label_key``. Dense or sparse, any numeric dtype.
    * ``.csv`` / ``.parquet`` with a header: every column is a feature except
      ``label_column`` and ``id_column`` when given; headers become feature names.

    Raises:
        TableReadError: unsupported suffix, empty file, unparsable content, or
            a key or column that is not there.
    """
    suffix = suffix.lower()
    load_args = dict(load_args or {})
    if suffix not in SUFFIXES:
        raise TableReadError(f"{source}: suffix {suffix!r} is not supported; supported: {', '.join(SUFFIXES)}")
    if not raw:
        raise TableReadError(f"{source}: the file is empty")
    if suffix == ".mat":
        return _parse_mat(raw, source, data_key, label_key, load_args)
    return _parse_frame(raw, suffix, source, label_column, id_column, load_args)


def read_feature_table(path: str | Path, **options: Any) -> FeatureTable:
    """:func:`parse_feature_table` of a local file (``options`` as there)."""
    path = Path(path)
    if not path.is_file():
        raise TableReadError(f"{path}: file not found")
    return parse_feature_table(path.read_bytes(), path.suffix, str(path), **options)


def _parse_mat(raw: bytes, source: str, data_key: str, label_key: str | None, load_args: dict) -> FeatureTable:
    try:
        content = scipy.io.loadmat(io.BytesIO(raw), **load_args)
    except Exception as err:  # scipy raises several unrelated types for bad files
        raise TableReadError(f"{source}: not a readable MATLAB .mat file ({err})") from err
    keys = sorted(k for k in content if not k.startswith("__"))
    if data_key not in content:
        raise TableReadError(
            f"{source}: no data matrix under key {data_key!r}; keys found: {keys}. Set data_key in the catalog entry."
        )
    y = None
    if label_key is not None and label_key in content:
        y = np.asarray(content[label_key]).reshape(-1) if np.size(content[label_key]) else None
    return FeatureTable(X=content[data_key], y=y, source=source)


def _parse_frame(raw: bytes, suffix: str, source: str, label_column: str | None, id_column: str | None,
                 load_args: dict) -> FeatureTable:
    try:
        if suffix == ".csv":
            frame = pd.read_csv(io.BytesIO(raw), **load_args)
        else:
            frame = pd.read_parquet(io.BytesIO(raw), **load_args)
    except Exception as err:  # pandas/pyarrow parse errors have many types
        raise TableReadError(f"{source}: cannot be parsed as {suffix} ({err})") from err
    missing = [c for c in (label_column, id_column) if c is not None and c not in frame.columns]
    if missing:
        raise TableReadError(f"{source}: column(s) {missing} not found; columns start with {list(frame.columns[:10])}")
    y = frame.pop(label_column).to_numpy() if label_column else None
    if id_column:
        frame = frame.drop(columns=[id_column])
    names = [str(c) for c in frame.columns]
    if suffix == ".csv":
        names = _csv_header(raw, load_args, exclude={label_column, id_column}) or names
    return FeatureTable(X=frame, y=y, feature_names=names, source=source)


def _csv_header(raw: bytes, load_args: dict, exclude: set) -> list[str] | None:
    """The header as written: pandas renames a repeated name ("a" -> "a.1"),
    which would hide a duplicate from the checks downstream."""
    if load_args.get("header", "infer") != "infer" or "names" in load_args:
        return None
    first_line = raw.split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")
    header = next(csv.reader([first_line], delimiter=load_args.get("sep", ",")), [])
    return [name for name in header if name not in exclude]
