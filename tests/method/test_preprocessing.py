"""method.md §1: validation, standardization, inversion, labels and names."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iclfs.method._preprocessing import (
    DataValidationError,
    FeatureTable,
    check_finite,
    encode_labels,
    invert,
    prepare,
    resolve_feature_names,
    standardize,
)


def naive_zscore(X):
    """Column z-scores with population std, constant columns -> 0, plain loops."""
    n, d = len(X), len(X[0])
    out = [[0.0] * d for _ in range(n)]
    for j in range(d):
        col = [float(X[i][j]) for i in range(n)]
        mean = sum(col) / n
        var = sum((v - mean) ** 2 for v in col) / n
        std = math.sqrt(var)
        for i in range(n):
            out[i][j] = 0.0 if std == 0.0 else (col[i] - mean) / std
    return np.array(out)


# ---------------------------------------------------------------- standardize


def test_standardize_matches_naive_zscores():
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 5.0, size=(9, 6)) * rng.lognormal(size=6)
    X[:, 2] = 7.0  # constant column
    Z = standardize(X)
    assert Z.dtype == np.float32
    assert Z.shape == X.shape
    np.testing.assert_allclose(Z, naive_zscore(X.tolist()), rtol=1e-5, atol=1e-5)
    # population (ddof=0) variance is exactly 1 for non-constant columns
    for j in range(6):
        if j == 2:
            continue
        col = Z[:, j].astype(np.float64)
        assert abs(sum(col) / len(col)) < 1e-5
        assert abs(sum(v * v for v in col) / len(col) - 1.0) < 1e-4


def test_standardize_integer_input():
    X = np.array([[1, 10], [2, 10], [3, 10], [6, 10]], dtype=np.uint8)
    Z = standardize(X)
    assert Z.dtype == np.float32
    np.testing.assert_allclose(Z, naive_zscore(X.tolist()), atol=1e-6)


@pytest.mark.parametrize("value", [0.0, 0.1, -3.3, 1e6 + 0.1, 123456.789])
def test_constant_column_becomes_exact_zeros_never_nan(value):
    X = np.column_stack([np.full(13, value), np.arange(13.0)])
    Z = standardize(X)
    assert not np.isnan(Z).any()
    assert np.all(Z[:, 0] == 0.0)
    np.testing.assert_allclose(Z[:, 1], naive_zscore(X.tolist())[:, 1], atol=1e-6)


def test_standardize_all_constant_is_all_zero():
    Z = standardize(np.ones((5, 3)))
    assert Z.dtype == np.float32 and np.all(Z == 0) and not np.isnan(Z).any()


# ---------------------------------------------------------------------- invert


def test_invert_is_contiguous_float32_transpose():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 8)).astype(np.float32)
    A = invert(X)
    assert A.shape == (8, 5)
    assert A.dtype == np.float32
    assert A.flags["C_CONTIGUOUS"]
    for i in range(5):
        for j in range(8):
            assert A[j, i] == X[i, j]


def test_invert_of_fortran_view_is_contiguous():
    X = np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    A = invert(X)
    assert A.flags["C_CONTIGUOUS"] and A.dtype == np.float32
    assert A.tolist() == [[X[i, j] for i in range(3)] for j in range(4)]


# -------------------------------------------------------------- encode_labels


def naive_factorize(y):
    classes = sorted(set(y))
    lookup = {c: i for i, c in enumerate(classes)}
    return [lookup[v] for v in y], classes


@pytest.mark.parametrize(
    "y",
    [
        [-1, 1, 1, -1, 1],
        [3, 7, 3, 5, 7],
        ["b", "a", "c", "a", "b"],
        [2.5, -1.0, 2.5, 2.5, -1.0],
    ],
)
def test_encode_labels_any_coding(y):
    codes, classes = encode_labels(np.array(y), len(y))
    expected_codes, expected_classes = naive_factorize(y)
    assert codes.dtype == np.int64
    assert codes.tolist() == expected_codes
    assert list(classes) == expected_classes
    assert set(codes.tolist()) == set(range(len(expected_classes)))


def test_encode_labels_column_vector():
    y = np.array([[1], [2], [1], [2]])
    codes, classes = encode_labels(y, 4)
    assert codes.tolist() == [0, 1, 0, 1] and classes == [1, 2]


def test_encode_labels_single_class_raises():
    with pytest.raises(DataValidationError, match="single class"):
        encode_labels(np.array([4, 4, 4, 4]), 4)


def test_encode_labels_length_mismatch_raises():
    with pytest.raises(DataValidationError, match=r"3 label\(s\) for 5 sample"):
        encode_labels(np.array([0, 1, 0]), 5)


def test_encode_labels_nan_raises():
    with pytest.raises(DataValidationError, match="NaN"):
        encode_labels(np.array([0.0, 1.0, np.nan, 1.0]), 4)


# ------------------------------------------------------------ finite checks


def test_check_finite_names_counts_and_first_position():
    X = np.zeros((4, 5))
    X[1, 2] = np.nan
    X[3, 0] = np.inf
    X[3, 4] = -np.inf
    with pytest.raises(DataValidationError) as info:
        check_finite(X, source="mysrc")
    msg = str(info.value)
    assert "mysrc" in msg
    assert "1 NaN" in msg
    assert "2 infinite" in msg
    assert "(row 1, column 2)" in msg


def test_check_finite_accepts_finite():
    check_finite(np.ones((3, 3)))  # no exception


def test_check_finite_truncates_long_position_lists():
    X = np.full((3, 4), np.nan)
    with pytest.raises(DataValidationError, match=r"12 NaN and 0 infinite.*and 7 more"):
        check_finite(X)


def test_prepare_rejects_nan_with_position():
    X = np.ones((5, 3))
    X[4, 1] = np.nan
    with pytest.raises(DataValidationError, match=r"1 NaN.*\(row 4, column 1\)"):
        prepare(FeatureTable(X=X, source="t"))


def test_prepare_names_non_numeric_pandas_columns():
    df = pd.DataFrame(
        {"a": [1.0, 2.0, 3.0, 4.0], "name": ["w", "x", "y", "z"], "c": [1, 2, 3, 4],
         "when": pd.to_datetime(["2020-01-01"] * 4)}
    )
    with pytest.raises(DataValidationError) as info:
        prepare(FeatureTable(X=df, source="frame"))
    msg = str(info.value)
    assert "2 column(s) are not numeric" in msg
    assert "'name'" in msg and "'when'" in msg
    assert "'a'" not in msg and "'c'" not in msg


def test_prepare_accepts_numeric_pandas():
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1, 0, 1, 5]})
    out = prepare(FeatureTable(X=df, feature_names=list(df.columns)))
    np.testing.assert_allclose(out.standardized, naive_zscore(df.to_numpy().tolist()), atol=1e-6)
    assert out.feature_names == ["a", "b"]


def test_prepare_rejects_string_array():
    with pytest.raises(DataValidationError, match="dtype"):
        prepare(FeatureTable(X=np.array([["a", "b"]] * 5)))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_prepare_rejects_fewer_than_four_samples(n):
    with pytest.raises(DataValidationError, match=rf"{n} sample\(s\).*at least 4"):
        prepare(FeatureTable(X=np.random.default_rng(0).normal(size=(n, 6))))


def test_prepare_accepts_exactly_four_samples():
    out = prepare(FeatureTable(X=np.arange(8.0).reshape(4, 2)))
    assert out.standardized.shape == (4, 2)


def test_prepare_rejects_fewer_features_than_smallest_k():
    X = np.random.default_rng(0).normal(size=(10, 5))
    with pytest.raises(DataValidationError, match=r"5 feature\(s\).*smallest requested k is 6"):
        prepare(FeatureTable(X=X), min_features=6)
    assert prepare(FeatureTable(X=X), min_features=5).standardized.shape == (10, 5)


def test_prepare_rejects_duplicate_feature_names():
    X = np.random.default_rng(0).normal(size=(6, 4))
    with pytest.raises(DataValidationError, match=r"duplicate.*'b' \(columns 1 and 3\)"):
        prepare(FeatureTable(X=X, feature_names=["a", "b", "c", "b"]))


def test_prepare_rejects_wrong_number_of_names():
    X = np.random.default_rng(0).normal(size=(6, 4))
    with pytest.raises(DataValidationError, match=r"3 feature name\(s\) for 4 column"):
        prepare(FeatureTable(X=X, feature_names=["a", "b", "c"]))


def test_prepare_full_path_with_labels():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(8, 3)).astype(np.float64)
    y = np.array(["x", "y"] * 4)
    out = prepare(FeatureTable(X=X, y=y, informative_features=[2, 0]))
    np.testing.assert_allclose(out.standardized, naive_zscore(X.tolist()), atol=1e-5)
    assert out.labels.tolist() == [0, 1] * 4
    assert out.classes == ["x", "y"]
    assert out.informative_features == [0, 2]
    assert out.feature_names == ["feature_0", "feature_1", "feature_2"]


def test_prepare_rejects_out_of_range_informative():
    X = np.random.default_rng(0).normal(size=(6, 4))
    with pytest.raises(DataValidationError, match="informative"):
        prepare(FeatureTable(X=X, informative_features=[1, 4]))


# -------------------------------------------------------------- feature names


@pytest.mark.parametrize("d", [1, 5, 10, 11, 100, 101, 1234])
def test_default_feature_names(d):
    names = resolve_feature_names(None, d)
    digits = len(str(d - 1))
    expected = []
    for j in range(d):
        s = str(j)
        expected.append("feature_" + "0" * (digits - len(s)) + s)
    assert names == expected
    assert len(set(names)) == d


def test_given_feature_names_are_strings_kept_exactly_as_given():
    assert resolve_feature_names([" a ", 2, "c", ""], 4) == [" a ", "2", "c", ""]


# ------------------------------------------------- pandas frames and missing labels


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"a": [True, False, True, True, False], "b": [1.0, 2.0, 3.0, 5.0, 8.0]}),
        pd.DataFrame({"a": pd.array([1, 2, 3, 4, 9], dtype="Int64"), "b": [1.0, 2.0, 3.0, 5.0, 8.0]}),
    ],
    ids=["bool+float", "Int64+float"],
)
def test_prepare_accepts_bool_and_nullable_numeric_columns(frame):
    expected = naive_zscore([[float(v) for v in row] for row in frame.astype("float64").to_numpy()])
    out = prepare(FeatureTable(X=frame))
    np.testing.assert_allclose(out.standardized, expected, atol=1e-6)


def test_prepare_reports_missing_in_nullable_column_as_nan():
    frame = pd.DataFrame({"a": pd.array([1, None, 3, 4], dtype="Int64"), "b": [1.0, 2.0, 3.0, 5.0]})
    with pytest.raises(DataValidationError, match=r"1 NaN.*\(row 1, column 0\)"):
        prepare(FeatureTable(X=frame))


@pytest.mark.parametrize("missing", [None, np.nan])
def test_encode_labels_missing_string_label_raises_validation_error(missing):
    with pytest.raises(DataValidationError, match=r"t.csv: 1 label\(s\) are missing .* first at row 2"):
        encode_labels(pd.Series(["a", "b", missing, "a"]), 4, source="t.csv")
