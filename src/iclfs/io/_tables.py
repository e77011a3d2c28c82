"""Read a samples x features table from the bytes of a file, in the formats expression data comes in.

=========================  ==================================================
suffix                     read by
=========================  ==================================================
``.csv``                   ``pandas.read_csv`` (comma)
``.tsv``, ``.tab``         ``pandas.read_csv`` (tab)
``.txt``                   ``pandas.read_csv``, delimiter sniffed
``.parquet``               ``pandas.read_parquet``
``.h5ad``                  ``anndata.read_h5ad`` (the ``h5ad`` extra)
``.mat``                   ``scipy.io.loadmat`` (scikit-feature layout: ``X``, ``Y``)
=========================  ==================================================

A text table may be compressed (``.gz``, ``.bz2``, ``.xz``, ``.zip``:
``expr.tsv.gz``); pandas decompresses it, with the user's ``load_args`` (any
option ``pandas.read_csv`` takes); a UTF-8 byte-order mark is dropped.
``.txt`` is sniffed among ``,``, tab, ``;``, ``|`` and space; ``decimal:
comma`` reads decimal commas.

**Names are data.** Feature names (and sample ids) are the file's own text,
read apart from the values as strings: ``042``, ``104.20``, ``NA``, an empty
name stay exactly what they are, never numbers or missing values.

``orientation: features_in_rows`` reads the usual genes x samples layout:
the first column holds the feature names and the header the sample ids, and
the table is transposed. R's ``write.table`` writes a header with no cell
for the row names; such a file (its header one cell shorter than its rows)
is read with the row names as the first column, in either orientation.
``id_column`` names the column of sample ids (kept in the reduced table; a
parquet file's stored index is kept so too), ``label_column`` the column (or,
features in rows, the row) of labels, which only the evaluation uses.

No Kedro here: :class:`iclfs.io.datasets.FeatureTableDataset` reads the bytes
(any fsspec location) and hands them to :func:`parse_feature_table`; scripts
that run without Kedro read a local file with :func:`read_feature_table`.
Problems that make a table unusable raise :class:`TableReadError`; shapes that
are usually a mistake (no header, a pandas index column, an undeclared id
column, empty names) are logged as warnings naming the column.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import scipy.io

from iclfs.method._preprocessing import FeatureTable

LOGGER = logging.getLogger(__name__)
TEXT = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".txt": None}
#: ``decimal`` by name: a comma cannot travel in ``--params``, whose items commas separate.
DECIMAL_WORDS = {"comma": ",", "point": "."}
#: The delimiters a ``.txt`` table is sniffed among.
SNIFFED = ",\t;| "
#: Options of ``load_args`` that change which row holds the names: then pandas' own names are kept.
HEADER_OPTIONS = {"header", "names", "index_col", "usecols"}
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
    decimal: str | None = None,
    load_args: dict[str, Any] | None = None,
) -> FeatureTable:
    """The table held in ``raw``, the whole content of a file named ``name`` (its suffixes pick the reader).

    ``sep`` sets a text table's delimiter (the suffix's by default), ``decimal``
    its decimal mark; ``load_args`` go to the reader as they are.

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
        if sep == "":
            raise TableReadError(f"{source}: sep is empty. A shell or YAML may have eaten it: --params \"sep=|\" is "
                                 "read as YAML, where | starts a block; quote the value: --params \"sep='|'\"")
        load_args["sep"] = sep
    if decimal is not None:
        mark = DECIMAL_WORDS.get(str(decimal), str(decimal))
        if len(mark) != 1:
            raise TableReadError(f"{source}: decimal must be comma, point or one character, got {decimal!r}")
        load_args["decimal"] = mark
    if label_column is not None and label_column == id_column:
        raise TableReadError(f"{source}: label_column and id_column are both {label_column!r}; a column is either "
                             "the labels or the sample ids")
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
    """An AnnData ``.h5ad`` file, read by ``anndata.read_h5ad`` (``load_args`` are its options).

    ``X`` (a dense array, or a ``csr_matrix`` / ``csc_matrix``) is samples x
    features; ``var``'s index gives the feature names, ``obs``'s the sample
    ids, and ``label_column`` an ``obs`` column (plain or categorical). The
    file's layout is checked first (with h5py, anndata's own dependency), so a
    file that is not one AnnData writes is refused naming what it lacks: anndata
    reads an ``obs`` or ``var`` without its encoding metadata with the names
    ``'0'``, ``'1'``, ... in place of the file's (docs/architecture.md).
    """
    try:
        import anndata
        import h5py
    except ImportError as err:
        raise TableReadError(f"{source}: reading .h5ad needs the optional package anndata "
                             "(pip install 'iclfs[h5ad]')") from err
    if "backed" in load_args:
        raise TableReadError(f"{source}: load_args backed is not an option here: the table is read whole, from "
                             "the file's bytes (any fsspec location)")
    buffer = io.BytesIO(raw)
    try:
        handle = h5py.File(buffer, "r")
    except Exception as err:  # h5py raises OSError and others for files that are not HDF5
        raise TableReadError(f"{source}: not a readable AnnData .h5ad file ({err})") from err
    with handle:
        _check_h5ad_layout(handle, source)
    try:
        adata = anndata.read_h5ad(buffer, **load_args)  # h5py opens a file object as it opens a path
    except TypeError as err:
        raise TableReadError(f"{source}: load_args {sorted(load_args)} are not all options of anndata.read_h5ad "
                             f"({err})") from err
    except Exception as err:  # noqa: BLE001  (anndata's registry and h5py raise many kinds)
        raise TableReadError(f"{source}: anndata cannot read this .h5ad file ({type(err).__name__}: "
                             f"{str(err)[:300]})") from err
    y = None
    if label_column is not None:
        columns = [str(c) for c in adata.obs.columns]
        if label_column not in columns:
            raise TableReadError(f"{source}: obs has no column {label_column!r}; obs columns: {columns[:10]}")
        y = _obs_column(adata.obs[label_column])
    X = adata.X
    return FeatureTable(X=X if not isinstance(X, np.matrix) else np.asarray(X), y=y,
                        feature_names=[str(n) for n in adata.var_names], source=source,
                        sample_ids=[str(n) for n in adata.obs_names], sample_id_name="obs_names")


def _check_h5ad_layout(handle, source: str) -> None:
    """Refuse, naming the problem, a file whose ``X``, ``obs`` or ``var`` anndata would not read as written."""
    import h5py

    missing = [key for key in ("X", "obs", "var") if key not in handle]
    if missing:
        raise TableReadError(f"{source}: not an AnnData .h5ad file: no {', '.join(missing)} (found {sorted(handle)})")
    encoding = "" if isinstance(handle["X"], h5py.Dataset) else handle["X"].attrs.get("encoding-type", "")
    if not isinstance(handle["X"], h5py.Dataset) and encoding not in ("csr_matrix", "csc_matrix"):
        raise TableReadError(f"{source}: X is stored as {encoding or 'an unknown group'!r}; expected a dense array, "
                             "csr_matrix or csc_matrix")
    # a group without encoding metadata: anndata would name its rows '0', '1', ... (files of anndata < 0.7 store
    # obs and var as arrays, which it reads with their names)
    unnamed = [key for key in ("obs", "var")
               if isinstance(handle[key], h5py.Group) and handle[key].attrs.get("encoding-type") != "dataframe"]
    if unnamed:
        raise TableReadError(f"{source}: {' and '.join(unnamed)} lack AnnData's encoding metadata (encoding-type "
                             "'dataframe'), so their names cannot be read; write the file with anndata "
                             "(AnnData.write_h5ad) or scanpy")


def _obs_column(column: pd.Series) -> np.ndarray:
    """An ``obs`` column's values: text as str (a missing category as None), numbers as they are."""
    if isinstance(column.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(column.dtype):
        return np.asarray([None if pd.isna(v) else str(v) for v in column], dtype=object)
    return column.to_numpy()


@dataclass
class Frame:
    """A text or parquet table as read: the values, and the names and ids as the file spells them.

    ``values`` has one column per header cell, by position; ``columns`` are
    the header's cells; ``first_column`` the first column's cells, as text;
    ``row_names`` the rows' own names when the file gives them (R's header
    without a row-name cell, a parquet index), else None, and
    ``row_names_label`` the stored index's name, if any.
    """

    values: pd.DataFrame
    columns: list[str]
    first_column: list[str] | None = None
    row_names: list[str] | None = None
    row_names_label: str | None = None


def _sniff(raw: bytes, compression: str | None, source: str) -> str:
    """The delimiter of a ``.txt`` table, among :data:`SNIFFED` only."""
    try:
        with pd.io.common.get_handle(io.BytesIO(raw), "r", compression=compression, encoding="utf-8-sig") as handle:
            sample = handle.handle.read(64 * 1024)
        return csv.Sniffer().sniff(sample, delimiters=SNIFFED).delimiter
    except (csv.Error, UnicodeDecodeError) as err:
        raise TableReadError(f"{source}: cannot tell its delimiter among comma, tab, ';', '|' and space ({err}); "
                             "say it: --params \"sep=';'\" (or a .csv or .tsv suffix)") from err


def _read_frame(raw: bytes, fmt: str, compression: str | None, source: str, load_args: dict) -> Frame:
    args = dict(load_args)
    try:
        if fmt == ".parquet":
            frame = pd.read_parquet(io.BytesIO(raw), **args)
            stored = not isinstance(frame.index, pd.RangeIndex)
            columns = [str(c) for c in frame.columns]
            values = frame.reset_index(drop=True).set_axis(range(frame.shape[1]), axis=1)
            if stored:  # a stored index: the sample ids
                return Frame(values, columns, None, [str(v) for v in frame.index],
                             None if frame.index.name is None else str(frame.index.name))
            return Frame(values, columns)
        args = {"encoding": "utf-8-sig", "compression": compression, **args}
        if "sep" not in args and "delimiter" not in args:
            args["sep"] = TEXT[fmt] if TEXT[fmt] is not None else _sniff(raw, compression, source)
        frame = pd.read_csv(io.BytesIO(raw), **args)
    except TableReadError:
        raise
    except Exception as err:  # pandas/pyarrow parse errors have many types
        raise TableReadError(f"{source}: cannot be parsed as {fmt} ({type(err).__name__}: {err})") from err
    if frame.shape[1] == 1 and isinstance(frame.index, pd.RangeIndex):
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
    if HEADER_OPTIONS & set(load_args):
        return Frame(frame, [str(c) for c in frame.columns], [str(v) for v in frame.iloc[:, 0]])
    header, first = _raw_names(raw, args, source)
    if not isinstance(frame.index, pd.RangeIndex):
        # pandas took the first column as the index: the header is one cell short (R's write.table)
        if len(header) != frame.shape[1]:
            raise TableReadError(f"{source}: the header has {len(header)} cell(s) for rows of {frame.shape[1] + 1} "
                                 "field(s); every row must have as many fields as the header, or one more")
        return Frame(frame.reset_index(drop=True).set_axis(range(frame.shape[1]), axis=1), header, first[1:],
                     row_names=first[1:])
    if len(header) != frame.shape[1]:
        raise TableReadError(f"{source}: the header has {len(header)} cell(s) but rows have {frame.shape[1]}")
    # by position: pandas' own names may be mangled (a repeated name, an empty one)
    return Frame(frame.set_axis(range(frame.shape[1]), axis=1), header, first[1:])


def _raw_names(raw: bytes, args: dict, source: str) -> tuple[list[str], list[str]]:
    """The header row's cells and the first column's cells, as the file spells them (strings, never NA)."""
    text = {**args, "header": None, "dtype": str, "keep_default_na": False, "na_filter": False}
    text.pop("decimal", None)
    try:
        header = pd.read_csv(io.BytesIO(raw), **{**text, "nrows": 1}).iloc[0].tolist()
        first = pd.read_csv(io.BytesIO(raw), **{**text, "usecols": [0]}).iloc[:, 0].tolist()
    except Exception as err:  # as in _read_frame
        raise TableReadError(f"{source}: cannot read its header as text ({type(err).__name__}: {err})") from err
    return [str(v) for v in header], [str(v) for v in first]


def _refuse_repeated(names: list[str], source: str, where: str = "columns") -> None:
    """Refuse names that repeat, naming their positions in the file (``columns`` or ``rows``)."""
    seen: dict[str, int] = {}
    repeated = []
    for j, name in enumerate(names):
        if name in seen:
            repeated.append(f"{name!r} ({where} {seen[name]} and {j})")
        seen.setdefault(name, j)
    if repeated:
        raise TableReadError(f"{source}: duplicate feature name(s): {', '.join(repeated[:5])}. Feature names must "
                             "be unique so selections are unambiguous.")


def _position(frame: Frame, column: str, role: str, source: str) -> int:
    """Where the column named ``column`` is; a clear error naming ``role`` when it is not there."""
    if column not in frame.columns:
        raise TableReadError(f"{source}: no column named {column!r} ({role}); columns start with "
                             f"{frame.columns[:10]}")
    return frame.columns.index(column)


def _from_samples_in_rows(frame: Frame, source: str, label_column: str | None,
                          id_column: str | None) -> FeatureTable:
    _refuse_repeated(frame.columns, source)
    values, keep = frame.values, list(range(len(frame.columns)))
    labels = ids = None
    id_name = None
    if label_column is not None:
        at = _position(frame, label_column, "label_column", source)
        labels = values[at].to_numpy()
        keep.remove(at)
    if id_column is not None:
        at = _position(frame, id_column, "id_column", source)
        ids = frame.first_column if at == 0 and frame.first_column is not None else [str(v) for v in values[at]]
        id_name = id_column
        keep.remove(at)
    elif frame.row_names is not None:  # R's row names, a parquet index: the sample ids
        ids, id_name = frame.row_names, frame.row_names_label or "sample_id"
    names = [frame.columns[j] for j in keep]
    X = values[keep].set_axis(names, axis=1)
    _warn_suspicious(X, names, source, has_ids=ids is not None)
    if ids is not None and len(set(map(str, ids))) == len(ids) >= 10 * max(len(names), 1) \
            and _look_like_sample_ids(names):
        LOGGER.warning("%s: the id column holds %d distinct names and the header %d names like %s: the table looks "
                       "transposed (features in rows, samples in columns). If so, read it with "
                       "orientation=features_in_rows, or its features are the samples.", source, len(ids),
                       len(names), ", ".join(map(str, names[:3])))
    return FeatureTable(X=X, y=labels, feature_names=names, source=source, sample_ids=ids, sample_id_name=id_name)


def _from_features_in_rows(frame: Frame, source: str, label_column: str | None) -> FeatureTable:
    """A genes x samples table: the first column (or R's row names) the feature names, the header the sample ids."""
    if frame.row_names is not None:
        names, samples, values = list(frame.row_names), list(frame.columns), frame.values
    else:
        if frame.first_column is None or len(frame.columns) < 2:
            raise TableReadError(f"{source}: features in rows need a first column of feature names and one column "
                                 "per sample")
        names, samples, values = list(frame.first_column), frame.columns[1:], frame.values.iloc[:, 1:]
        _refuse_numbers_as_names(names, source)
    _refuse_repeated(names, source, "rows")
    labels = None
    if label_column is not None:
        if label_column not in names:
            raise TableReadError(f"{source}: no row named {label_column!r} (label_column; with features in rows, "
                                 f"labels are a row); rows start with {names[:10]}")
        at = names.index(label_column)
        labels = values.iloc[at].to_numpy()
        values = values.drop(index=values.index[at])
        names = names[:at] + names[at + 1:]
    X = values.T.reset_index(drop=True).set_axis(names, axis=1)
    _warn_suspicious(X, names, source, has_ids=True)
    # The header's first cell names the feature column (gene), so the sample ids get a name of their own.
    return FeatureTable(X=X, y=labels, feature_names=names, source=source, sample_ids=list(samples),
                        sample_id_name="sample_id")


def _refuse_numbers_as_names(names: list[str], source: str) -> None:
    """Feature names that are all decimal numbers are a sample's values: the file has samples in rows."""
    numbers = [name for name in names if _is_number(name)]
    if names and len(numbers) == len(names) and any(not _is_integer(name) for name in numbers):
        raise TableReadError(f"{source}: with orientation features_in_rows the first column holds the feature names, "
                             f"but it holds numbers ({', '.join(names[:3])}, ...): the file looks like samples in "
                             "rows. Drop orientation=features_in_rows (samples_in_rows is the default).")


# -- warnings for shapes that are usually a mistake ----------------------------------

def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _warn_suspicious(X: pd.DataFrame, names: list[str], source: str, has_ids: bool) -> None:
    n = len(X)
    if names and all(_is_number(name) for name in names) and not all(_is_integer(name) for name in names):
        LOGGER.warning("%s: every column name is a number (%s, ...). Names such as m/z values are fine; but if the "
                       "file has no header, its first sample became the names: then set load_args: {header: null}.",
                       source, ", ".join(names[:3]))
    empty = [j for j, name in enumerate(names) if not name.strip()]
    index = bool(names) and not names[0].strip() and X.shape[1] > 0 and _is_counter(X.iloc[:, 0])
    if index:
        LOGGER.warning("%s: the first column (no name) counts 0..%d: it looks like a saved pandas index, not a "
                       "feature. Drop it or set load_args: {index_col: 0}.", source, n - 1)
        empty = [j for j in empty if j != 0]
    if empty:
        LOGGER.warning("%s: %d column(s) have an empty name (positions %s). Give every feature a name.",
                       source, len(empty), empty[:10])
    if not has_ids and n >= 10:
        for j in range(1 if index else 0, min(3, X.shape[1])):
            column = X.iloc[:, j]
            if column.dtype.kind in "iu" and column.is_unique and (column.diff().dropna() > 0).all():
                LOGGER.warning("%s: column %r holds %d distinct increasing integers: it looks like a sample id. "
                               "If it is, set id_column: %s so it is kept aside instead of selected.",
                               source, names[j], n, names[j])
                break


def _look_like_sample_ids(names: list[str]) -> bool:
    """Most names one prefix and a number (GSM1201, S3, sample_12): a header of sample ids."""
    parts = [re.fullmatch(r"([A-Za-z_.-]*?)[_.-]?(\d+)", str(name)) for name in names]
    prefixes = [p.group(1) for p in parts if p is not None]
    if len(prefixes) < 0.8 * len(names) or not prefixes:
        return False
    common = max(set(prefixes), key=prefixes.count)
    return prefixes.count(common) >= 0.8 * len(names)


def _is_counter(column: pd.Series) -> bool:
    values = column.to_numpy()
    return values.dtype.kind in "iuf" and np.array_equal(values, np.arange(len(values)))
