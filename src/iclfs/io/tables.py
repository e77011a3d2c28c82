"""Read a samples x features table from the bytes of a file, in the formats expression data comes in.

=========================  ==================================================
suffix                     read by
=========================  ==================================================
``.csv``                   ``pandas.read_csv`` (comma)
``.tsv``, ``.tab``         ``pandas.read_csv`` (tab)
``.txt``                   ``pandas.read_csv``, delimiter sniffed
``.parquet``               ``pandas.read_parquet``
``.h5ad``                  ``anndata.read_h5ad`` (optional: ``pip install anndata``)
``.mat``                   ``scipy.io.loadmat`` (scikit-feature layout: ``X``, ``Y``)
=========================  ==================================================

A text table may be compressed (``.gz``, ``.bz2``, ``.xz``, ``.zip``:
``expr.tsv.gz``); pandas decompresses it. Feature names are the column
names of pandas' own parse, with the user's ``load_args`` (any option
``pandas.read_csv`` takes); a UTF-8 byte-order mark is dropped.

``orientation: features_in_rows`` reads the usual genes x samples layout:
the first column holds the feature names and the header the sample ids, and
the table is transposed. ``id_column`` names the column of sample ids (kept
in the reduced table), ``label_column`` the column (or, features in rows,
the row) of labels, which only the evaluation uses.

No Kedro here: :class:`iclfs.io.datasets.FeatureTableDataset` reads the bytes
(any fsspec location) and hands them to :func:`parse_feature_table`; scripts
that run without Kedro read a local file with :func:`read_feature_table`.
Problems that make a table unusable raise :class:`TableReadError`; shapes that
are usually a mistake (no header, a pandas index column, an undeclared id
column, empty names) are logged as warnings naming the column.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import scipy.io

from iclfs.method.preprocessing import FeatureTable

LOGGER = logging.getLogger(__name__)
TEXT = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".txt": None}
FORMATS = (*TEXT, ".parquet", ".h5ad", ".mat")
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip"}
ORIENTATIONS = ("samples_in_rows", "features_in_rows")
#: For messages: every suffix the reader takes.
SUFFIXES = FORMATS


class TableReadError(ValueError):
    """The file cannot be read as a feature table; the message names the file and why."""


def table_format(name: str, source: str | None = None) -> tuple[str, str | None]:
    """(format suffix, compression) of a file name: ``expr.tsv.gz`` -> (``.tsv``, ``gzip``).

    ``source`` (the full path) names the file in the error; ``name`` by default.
    """
    suffixes = [s.lower() for s in PurePosixPath(name).suffixes]
    compression = COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    if compression:
        suffixes = suffixes[:-1]
    fmt = suffixes[-1] if suffixes else ""
    if fmt not in FORMATS or (compression and fmt not in TEXT):
        known = ", ".join(FORMATS)
        raise TableReadError(f"{source or name}: the format {''.join(suffixes[-1:]) or '(no suffix)'}"
                             f"{' with ' + compression if compression else ''} is not supported; supported: {known} "
                             "(text tables also compressed: .gz, .bz2, .xz, .zip)")
    return fmt, compression


def parse_feature_table(
    raw: bytes,
    name: str,
    source: str | None = None,
    *,
    orientation: str = "samples_in_rows",
    data_key: str = "X",
    label_key: str | None = "Y",
    label_column: str | None = None,
    id_column: str | None = None,
    sep: str | None = None,
    load_args: dict[str, Any] | None = None,
) -> FeatureTable:
    """The table held in ``raw``, the whole content of a file named ``name`` (its suffixes pick the reader).

    ``sep`` sets a text table's delimiter (the suffix's by default); ``load_args``
    go to the reader as they are.

    Raises
    ------
    TableReadError
        Unsupported format, empty file, unparsable content, or a key, column
        or option that does not fit the file.
    """
    source = source or name
    if orientation not in ORIENTATIONS:
        raise TableReadError(f"{source}: orientation {orientation!r} is not one of {', '.join(ORIENTATIONS)}")
    fmt, compression = table_format(name, source)
    if not raw:
        raise TableReadError(f"{source}: the file is empty")
    load_args = dict(load_args or {})
    if sep is not None:
        load_args["sep"] = sep
    if fmt == ".mat":
        table = _parse_mat(raw, source, data_key, label_key, load_args)
        if orientation == "features_in_rows":
            table.X = table.X.T
        return table
    if fmt == ".h5ad":
        return _parse_h5ad(raw, source, label_column, load_args)
    frame = _read_frame(raw, fmt, compression, source, load_args)
    if orientation == "features_in_rows":
        return _from_features_in_rows(frame, source, label_column)
    return _from_samples_in_rows(frame, source, label_column, id_column)


def find_dataset(name: str, folders: Sequence[str | Path]) -> Path:
    """``<folder>/<name>.mat`` in the first of ``folders`` that has it (the scikit-feature benchmark files)."""
    for folder in folders:
        path = Path(folder) / f"{name}.mat"
        if path.is_file():
            return path
    raise TableReadError(f"{name}.mat is in none of {', '.join(map(str, folders))}")


def read_feature_table(path: str | Path, **options: Any) -> FeatureTable:
    """:func:`parse_feature_table` of a local file (``options`` as there)."""
    path = Path(path)
    if not path.is_file():
        raise TableReadError(f"{path}: file not found")
    return parse_feature_table(path.read_bytes(), path.name, str(path), **options)


# -- formats -------------------------------------------------------------------


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


def _parse_h5ad(raw: bytes, source: str, label_column: str | None, load_args: dict) -> FeatureTable:
    """An AnnData ``.h5ad`` file, read with h5py from its documented on-disk layout.

    ``X`` (a dense array, or a ``csr_matrix`` / ``csc_matrix`` group) is samples
    x features; ``var``'s index gives the feature names, ``obs``'s the sample
    ids, and ``label_column`` an ``obs`` column (plain or categorical).
    """
    try:
        import h5py
    except ImportError as err:
        raise TableReadError(f"{source}: reading .h5ad needs the optional package h5py "
                             "(pip install 'iclfs[h5ad]')") from err
    try:
        handle = h5py.File(io.BytesIO(raw), "r", **load_args)
    except Exception as err:  # h5py raises OSError and others for files that are not HDF5
        raise TableReadError(f"{source}: not a readable AnnData .h5ad file ({err})") from err
    with handle:
        missing = [key for key in ("X", "obs", "var") if key not in handle]
        if missing:
            raise TableReadError(f"{source}: not an AnnData .h5ad file: no {', '.join(missing)} "
                                 f"(found {sorted(handle)})")
        X = _h5ad_matrix(handle["X"], source)
        samples = _h5ad_index(handle["obs"])
        y = None
        if label_column is not None:
            columns = [k for k in handle["obs"] if k != handle["obs"].attrs.get("_index", "_index")]
            if label_column not in columns:
                raise TableReadError(f"{source}: obs has no column {label_column!r}; obs columns: {columns[:10]}")
            y = _h5ad_column(handle["obs"][label_column])
        return FeatureTable(X=X, y=y, feature_names=_h5ad_index(handle["var"]), source=source,
                            sample_ids=samples, sample_id_name="obs_names")


def _text(values: np.ndarray) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def _h5ad_matrix(node, source: str):
    import h5py
    from scipy import sparse

    if isinstance(node, h5py.Dataset):
        return node[()]
    encoding = node.attrs.get("encoding-type", "")
    if encoding in ("csr_matrix", "csc_matrix"):
        kind = sparse.csr_matrix if encoding == "csr_matrix" else sparse.csc_matrix
        return kind((node["data"][()], node["indices"][()], node["indptr"][()]), shape=tuple(node.attrs["shape"]))
    raise TableReadError(f"{source}: X is stored as {encoding or 'an unknown group'!r}; expected a dense array, "
                         "csr_matrix or csc_matrix")


def _h5ad_index(frame) -> list[str]:
    return _text(frame[frame.attrs.get("_index", "_index")][()])


def _h5ad_column(node) -> np.ndarray:
    if node.attrs.get("encoding-type", "") == "categorical":
        categories = np.asarray(_text(node["categories"][()]), dtype=object)
        codes = node["codes"][()]
        return np.where(codes >= 0, categories[np.clip(codes, 0, None)], None)
    values = node[()]
    return np.asarray(_text(values), dtype=object) if values.dtype.kind in "OS" else values


def _read_frame(raw: bytes, fmt: str, compression: str | None, source: str, load_args: dict) -> pd.DataFrame:
    try:
        if fmt == ".parquet":
            frame = pd.read_parquet(io.BytesIO(raw), **load_args)
        else:
            args = {"encoding": "utf-8-sig", "compression": compression, **load_args}
            if "sep" not in args and "delimiter" not in args:
                args["sep"] = TEXT[fmt]
                if TEXT[fmt] is None:  # .txt: let pandas sniff the delimiter
                    args["engine"] = "python"
            frame = pd.read_csv(io.BytesIO(raw), **args)
    except TableReadError:
        raise
    except Exception as err:  # pandas/pyarrow parse errors have many types
        raise TableReadError(f"{source}: cannot be parsed as {fmt} ({type(err).__name__}: {err})") from err
    if frame.shape[1] == 1 and fmt in TEXT:
        header = str(frame.columns[0])
        found = [(sep, name) for sep, name in ((";", "';'"), ("\t", "tabs"), (",", "','"), ("|", "'|'"))
                 if sep in header]
        if found:
            sep, name = found[0]
            raise TableReadError(
                f"{source}: the header {header[:60]!r} was read as one column: the delimiter looks wrong (the "
                f"header holds {name}). Say which it is: kedro run ... --params \"sep={sep!r}\" (or sep: {sep!r} "
                "in the catalog entry), or give the file a suffix that says it (.csv for commas, .tsv for tabs).")
    if frame.shape[1] == 0:
        raise TableReadError(f"{source}: no columns were read")
    if fmt in TEXT and not {"header", "names", "index_col", "usecols"} & set(load_args):
        _refuse_repeated_names(raw, args, source)
    return frame


def _refuse_repeated_names(raw: bytes, args: dict, source: str) -> None:
    """pandas renames a repeated column (``g``, ``g.1``): read the header row as data to see it as written."""
    header = pd.read_csv(io.BytesIO(raw), **{**args, "header": None, "nrows": 1}).iloc[0].astype(str).tolist()
    seen: dict[str, int] = {}
    repeated = []
    for j, name in enumerate(header):
        if name in seen:
            repeated.append(f"{name!r} (columns {seen[name]} and {j})")
        seen.setdefault(name, j)
    if repeated:
        raise TableReadError(f"{source}: duplicate feature name(s): {', '.join(repeated[:5])}. Feature names must "
                             "be unique so selections are unambiguous.")


def _pop_column(frame: pd.DataFrame, column: str | None, role: str, source: str) -> pd.Series | None:
    if column is None:
        return None
    if column not in frame.columns:
        raise TableReadError(f"{source}: column(s) [{column!r}] not found ({role}); columns start with "
                             f"{[str(c) for c in frame.columns[:10]]}")
    return frame.pop(column)


def _from_samples_in_rows(frame: pd.DataFrame, source: str, label_column: str | None,
                          id_column: str | None) -> FeatureTable:
    labels = _pop_column(frame, label_column, "label_column", source)
    ids = _pop_column(frame, id_column, "id_column", source)
    _warn_suspicious(frame, source, has_ids=ids is not None)
    names = [str(c) for c in frame.columns]
    return FeatureTable(X=frame, y=None if labels is None else labels.to_numpy(), feature_names=names, source=source,
                        sample_ids=None if ids is None else ids.tolist(), sample_id_name=id_column)


def _from_features_in_rows(frame: pd.DataFrame, source: str, label_column: str | None) -> FeatureTable:
    """A genes x samples table: first column the feature names, header the sample ids."""
    frame = frame.set_index(frame.columns[0])
    frame.index = frame.index.map(str)
    labels = None
    if label_column is not None:
        if label_column not in frame.index:
            raise TableReadError(f"{source}: no row named {label_column!r} (label_column; with features in rows, "
                                 f"labels are a row); rows start with {list(frame.index[:10])}")
        labels = frame.loc[label_column].to_numpy()
        frame = frame.drop(index=label_column)
    samples = [str(c) for c in frame.columns]
    X = frame.T.reset_index(drop=True)
    _warn_suspicious(X.set_axis(list(frame.index), axis=1), source, has_ids=True)
    # The header's first cell names the feature column (gene), so the sample ids get a name of their own.
    return FeatureTable(X=X, y=labels, feature_names=list(frame.index), source=source, sample_ids=samples,
                        sample_id_name="sample_id")


# -- warnings for shapes that are usually a mistake ----------------------------------

_UNNAMED = re.compile(r"^Unnamed: \d+$")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _warn_suspicious(frame: pd.DataFrame, source: str, has_ids: bool) -> None:
    names = [str(c) for c in frame.columns]
    n = len(frame)
    if names and sum(_is_number(name) for name in names) == len(names):
        LOGGER.warning("%s: every column name is a number (%s, ...): the file may have no header, so its first "
                       "sample became the feature names. If so, set load_args: {header: null}.", source,
                       ", ".join(names[:3]))
    empty = [j for j, name in enumerate(names) if _UNNAMED.match(name) or not name.strip()]
    first = frame.iloc[:, 0] if frame.shape[1] else None
    if first is not None and (names[0] == "" or _UNNAMED.match(names[0])) and _is_counter(first):
        LOGGER.warning("%s: the first column (%r) counts 0..%d: it looks like a saved pandas index, not a "
                       "feature. Drop it or set load_args: {index_col: 0}.", source, names[0], n - 1)
        empty = [j for j in empty if j != 0]
    if empty:
        LOGGER.warning("%s: %d column(s) have an empty name (positions %s); pandas named them 'Unnamed: j'. "
                       "Give every feature a name.", source, len(empty), empty[:10])
    if not has_ids and n >= 10:
        for name in names[:3]:
            column = frame[name]
            if column.dtype.kind in "iu" and column.is_unique and (column.diff().dropna() > 0).all():
                LOGGER.warning("%s: column %r holds %d distinct increasing integers: it looks like a sample id. "
                               "If it is, set id_column: %s so it is kept aside instead of selected.",
                               source, name, n, name)
                break


def _is_counter(column: pd.Series) -> bool:
    values = column.to_numpy()
    return values.dtype.kind in "iuf" and np.array_equal(values, np.arange(len(values)))
