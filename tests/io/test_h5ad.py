""".h5ad read by anndata: names exactly as written, dense and sparse X, labels; a file anndata would misread is
refused naming what it lacks."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from iclfs.io._tables import TableReadError, parse_feature_table

anndata = pytest.importorskip("anndata")
h5py = pytest.importorskip("h5py")

NAMES = ["042", "104.20", "NA", "null", "", "ü"]
SAMPLES = [f"c{i}" for i in range(5)]


def written_by_anndata(X, labels=None) -> bytes:
    """The bytes of ``X`` as anndata writes it, with ``NAMES`` for var and ``SAMPLES`` for obs."""
    # anndata's writer cannot write pandas 3's default string arrays (see the test below): plain objects it can
    obs = pd.DataFrame(index=pd.Index(SAMPLES, dtype=object))
    if labels is not None:
        kinds = pd.Index(sorted({label for label in labels if label is not None}), dtype=object)
        obs["label"] = pd.Categorical(labels, categories=kinds)
        obs["age"] = np.arange(len(SAMPLES), dtype=float)
    with tempfile.TemporaryDirectory() as folder:  # anndata writes to a path only
        path = Path(folder) / "t.h5ad"
        anndata.AnnData(X=X, obs=obs, var=pd.DataFrame(index=pd.Index(NAMES, dtype=object))).write_h5ad(path)
        return path.read_bytes()


def without_encoding_metadata(X) -> bytes:
    """A file laid out like AnnData's, but with no encoding metadata: what a hand-written h5py script makes."""
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        handle["X"] = X
        for group, index in (("obs", SAMPLES), ("var", NAMES)):
            handle.create_group(group).attrs["_index"] = "_index"
            handle[group].create_dataset("_index", data=index, dtype=h5py.string_dtype())
    return buffer.getvalue()


VALUES = np.random.default_rng(0).normal(size=(len(SAMPLES), len(NAMES)))


@pytest.mark.parametrize("X", [VALUES, sparse.csr_matrix(VALUES), sparse.csc_matrix(VALUES)],
                         ids=["dense", "csr", "csc"])
def test_names_values_and_labels_read_exactly_as_written(X):
    table = parse_feature_table(written_by_anndata(X, ["a", "a", "b", None, "c"]), "t.h5ad", "data/t.h5ad",
                                label_column="label")
    assert table.feature_names == NAMES  # never numbers or missing values
    assert table.sample_ids == SAMPLES and table.sample_id_name == "obs_names"
    np.testing.assert_array_equal(table.X.toarray() if sparse.issparse(table.X) else table.X, VALUES)
    assert sparse.issparse(table.X) == sparse.issparse(X)
    assert list(table.y) == ["a", "a", "b", None, "c"]


def test_a_numeric_obs_column_is_read_as_numbers():
    table = parse_feature_table(written_by_anndata(VALUES, list("aabbc")), "t.h5ad", label_column="age")
    np.testing.assert_array_equal(table.y, np.arange(5, dtype=float))


def test_anndata_reads_a_file_without_encoding_metadata_with_other_names():
    """Why the reader checks the layout first: anndata names such rows '0', '1', ... silently."""
    adata = anndata.read_h5ad(io.BytesIO(without_encoding_metadata(VALUES)))
    assert list(adata.var_names) == [str(i) for i in range(len(NAMES))] != NAMES


def test_anndatas_writer_fails_on_pandas_default_strings(tmp_path):
    """Why the files above are written with plain object strings (the reader is not concerned)."""
    names = pd.Index(NAMES)
    if names.dtype == object:
        pytest.skip("this pandas does not make string arrays by default")
    with pytest.raises(Exception, match="StringArray"):
        anndata.AnnData(X=VALUES, var=pd.DataFrame(index=names)).write_h5ad(tmp_path / "t.h5ad")


def _with(raw: bytes, change) -> bytes:
    buffer = io.BytesIO(raw)
    with h5py.File(buffer, "r+") as handle:
        change(handle)
    return buffer.getvalue()


@pytest.mark.parametrize(("raw", "message"), [
    (lambda: b"not hdf5", r"^t\.x: not a readable AnnData \.h5ad file"),
    (lambda: without_encoding_metadata(VALUES),
     r"^t\.x: obs and var lack AnnData's encoding metadata \(encoding-type 'dataframe'\), so their names cannot be "
     r"read; write the file with anndata"),
    (lambda: _with(written_by_anndata(VALUES), lambda h: h.__delitem__("var")),
     r"^t\.x: not an AnnData \.h5ad file: no var \(found \['X', "),
    (lambda: _with(written_by_anndata(sparse.csr_matrix(VALUES)), lambda h: h["X"].attrs.__setitem__(
        "encoding-type", "awkward-array")), r"^t\.x: X is stored as 'awkward-array'; expected a dense array"),
    (lambda: written_by_anndata(VALUES, list("aabbc")), r"^t\.x: obs has no column 'kind'; obs columns: "
                                                          r"\['label', 'age'\]"),
])
def test_bad_input_is_refused_naming_the_file_and_the_problem(raw, message):
    with pytest.raises(TableReadError, match=message):
        parse_feature_table(raw(), "t.h5ad", "t.x", label_column="kind")


def test_load_args_go_to_anndata_and_a_wrong_one_is_named():
    table = parse_feature_table(written_by_anndata(VALUES), "t.h5ad", load_args={"as_sparse": ["X"]})
    assert sparse.issparse(table.X) and table.feature_names == NAMES
    with pytest.raises(TableReadError, match=r"^t\.h5ad: load_args \['sheet'\] are not all options of "
                                             r"anndata\.read_h5ad"):
        parse_feature_table(written_by_anndata(VALUES), "t.h5ad", load_args={"sheet": 1})
    with pytest.raises(TableReadError, match="backed is not an option here"):
        parse_feature_table(written_by_anndata(VALUES), "t.h5ad", load_args={"backed": "r"})
