"""Reading a feature table from file bytes, without Kedro."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest
import scipy.io
from scipy import sparse

from tests.conftest import PROJECT_ROOT
from iclfs.io._tables import TableReadError, parse_feature_table, read_feature_table


def _mat_bytes(content: dict) -> bytes:
    buffer = io.BytesIO()
    scipy.io.savemat(buffer, content)
    return buffer.getvalue()


def test_mat_matrix_and_labels_in_scikit_feature_layout():
    X = np.arange(12, dtype=np.uint8).reshape(4, 3)
    table = parse_feature_table(_mat_bytes({"X": X, "Y": np.array([[1], [2], [1], [2]])}), "t.MAT", "t.mat")
    np.testing.assert_array_equal(table.X, X)
    np.testing.assert_array_equal(table.y, [1, 2, 1, 2])
    assert table.source == "t.mat" and table.feature_names is None


def test_mat_sparse_matrix_other_keys_and_no_labels():
    X = sparse.random(5, 4, density=0.5, format="csc", random_state=0)
    table = parse_feature_table(_mat_bytes({"data": X}), "s.mat", data_key="data", label_key=None)
    assert table.source == "s.mat"  # the name, when no other source is given
    assert sparse.issparse(table.X) and table.X.shape == (5, 4) and table.y is None


@pytest.mark.parametrize(("raw", "suffix", "message"), [
    (b"", ".mat", "t.x: the file is empty"),
    (b"hello", ".mat", "t.x: not a readable MATLAB .mat file"),
    (_mat_bytes({"data": np.ones((3, 2))}), ".mat", r"t.x: no data matrix under key 'X'; keys found: \['data'\]"),
    (b"a,b\n1,2\n", ".parquet", r"t.x: cannot be parsed as .parquet"),
])
def test_unreadable_content_names_the_file_and_the_problem(raw, suffix, message):
    with pytest.raises(TableReadError, match=message):
        parse_feature_table(raw, f"t{suffix}", "t.x")


@pytest.mark.parametrize("name", ["t.xlsx", "t", "t.mat.gz"])
def test_unsupported_format_is_refused_with_the_supported_ones(name):
    # the format is read from the file name; the message names the file by its source (its full path)
    with pytest.raises(TableReadError, match=r"^t\.x: the format .* is not supported; supported: \.csv, \.tsv, "
                                             r"\.tab, \.txt, \.parquet, \.h5ad, \.mat"):
        parse_feature_table(b"a,b\n1,2\n", name, "t.x")


def test_csv_label_and_id_columns_and_the_header_as_written():
    raw = b"id,g,h,label\ns1,1,2,a\ns2,3,4,b\n"
    table = parse_feature_table(raw, "t.csv", label_column="label", id_column="id")
    assert table.feature_names == ["g", "h"]
    assert list(table.y) == ["a", "b"] and table.X.shape == (2, 2)
    with pytest.raises(TableReadError, match=r"t.csv: no column named 'target' \(label_column\)"):
        parse_feature_table(raw, "t.csv", label_column="target")


def test_csv_repeated_feature_names_are_refused_as_written():
    """pandas would rename the second ``g`` to ``g.1``, hiding the duplicate: the header as written is checked."""
    raw = b"id,g,g,label\ns1,1,2,a\ns2,3,4,b\n"
    with pytest.raises(TableReadError, match=r"t.csv: duplicate feature name\(s\): 'g' \(columns 1 and 2\)"):
        parse_feature_table(raw, "t.csv", label_column="label", id_column="id")


def test_read_feature_table_reads_a_local_file_or_names_the_missing_one(tmp_path):
    scipy.io.savemat(tmp_path / "m.mat", {"X": np.ones((3, 2)), "Y": np.array([[0], [1], [0]])})
    assert read_feature_table(tmp_path / "m.mat").X.shape == (3, 2)
    with pytest.raises(TableReadError, match="absent.mat: file not found"):
        read_feature_table(tmp_path / "absent.mat")


@pytest.mark.slow
def test_the_method_and_the_benchmark_commands_import_without_kedro():
    """The speed bench and the grid's cells run on machines that have only the numeric stack (a GPU box)."""
    code = ("import sys; import iclfs.io._tables, iclfs.method._training, benchmarks.speed, benchmarks.grid; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kedro', 'mlflow', 'kedro_datasets')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
