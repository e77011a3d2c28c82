"""Every bad input a user can meet, through the dataset and the first node, with its message.

Each case either fails while loading (the dataset) or in ``validate_and_standardize`` (the
first node of every run), so nothing is written. Parameter values are covered
in tests/pipelines/test_pipelines.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.io
from kedro.io import DatasetError

from iclfs.io.datasets import FeatureTableDataset
from iclfs.method._preprocessing import DataValidationError
from iclfs.pipelines.data_processing.nodes import validate_and_standardize


def first_node(table, parameters):
    """The first node of every run, with the sections it reads."""
    return validate_and_standardize(table, *(parameters[s] for s in ("training", "runtime", "laplacian", "selection",
                                                         "members", "baselines")))

RNG = np.random.default_rng(0)


def frame(n=8, d=6, **columns):
    data = {f"g{j}": RNG.normal(size=n) for j in range(d)}
    data.update(columns)
    return pd.DataFrame(data)


def write_csv(df):
    return lambda path: df.to_csv(path / "t.csv", index=False) or path / "t.csv"


def write_mat(content):
    return lambda path: scipy.io.savemat(path / "t.mat", content) or path / "t.mat"


def write_bytes(name, content):
    def make(path):
        (path / name).write_bytes(content)
        return path / name

    return make


CASES = {
    "nan": (write_csv(frame().assign(g2=[1.0, np.nan] * 4)), {}, DataValidationError,
            r"t.csv: found 4 NaN and 0 infinite value\(s\).*first at \(row 1, column 2\)"),
    "inf": (write_mat({"X": np.where(np.eye(8, 6) > 0, np.inf, 1.0)}), {}, DataValidationError,
            r"t.mat: found 0 NaN and 6 infinite value\(s\)"),
    "empty file": (write_bytes("t.csv", b""), {}, DatasetError, r"t.csv: the file is empty"),
    "header only": (write_bytes("t.csv", b"a,b,c\n"), {}, DataValidationError, r"t.csv: the data matrix is empty"),
    "one sample": (write_csv(frame(n=1)), {}, DataValidationError, r"t.csv: 1 sample\(s\).*at least 4"),
    "three samples": (write_csv(frame(n=3)), {}, DataValidationError, r"t.csv: 3 sample\(s\).*at least 4"),
    "one feature": (write_csv(frame(d=1)), {"k_values": [1]}, DataValidationError,
                    r"t.csv: 1 feature\(s\) .*at least 2"),
    "fewer features than k": (write_csv(frame(d=6)), {"k_values": [10, 20]}, DataValidationError,
                              r"t.csv: 6 feature\(s\), but selection.k is 10"),
    "string column": (write_csv(frame(name=list("abcdefgh"))), {}, DataValidationError,
                      r"t.csv: 1 column\(s\) are not numeric: 'name'"),
    "mixed-type column": (write_csv(frame(mixed=[1, 2, "x", 4, 5, 6, 7, 8])), {}, DataValidationError,
                          r"t.csv: 1 column\(s\) are not numeric: 'mixed'"),
    "duplicate names": (write_bytes("t.csv", b"a,b,a\n" + b"".join(b"%d,%d,%d\n" % (i, i * i, 7 - i) for i in range(8))),
                        {"k_values": [1]}, DatasetError, r"t.csv: duplicate feature name\(s\): 'a' \(columns 0 and 2\)"),
    "every feature constant": (write_csv(pd.DataFrame({"a": [1.0] * 8, "b": [2.0] * 8})), {"k_values": [1]},
                               DataValidationError,
                               r"t.csv: every feature is constant over the 8 samples"),
    "single-class labels": (write_csv(frame(label=[1] * 8)), {"label_column": "label"}, DataValidationError,
                            r"t.csv: labels have a single class \(\[1\]\)"),
    "labels of the wrong length": (write_mat({"X": RNG.normal(size=(8, 6)), "Y": np.arange(5)}), {},
                                   DataValidationError, r"t.mat: 5 label\(s\) for 8 sample\(s\)"),
    "missing labels": (write_csv(frame(label=["a", "b", None, "a", "b", "a", "b", "a"])),
                       {"label_column": "label"}, DataValidationError, r"t.csv: 1 label\(s\) are missing .* row 2"),
    "values that overflow": (write_mat({"X": np.hstack([RNG.normal(size=(8, 5)), np.full((8, 1), 1e200)
                                                        * RNG.normal(size=(8, 1))])}),
                             {}, DataValidationError, r"t.mat: 1 column\(s\) overflow when standardized.*\[5\]"),
    "mat without X": (write_mat({"data": np.ones((8, 6))}), {}, DatasetError,
                      r"t.mat: no data matrix under key 'X'; keys found: \['data'\]"),
    "mat with 3-D X": (write_mat({"X": np.ones((8, 6, 2))}), {}, DataValidationError,
                       r"t.mat: the data matrix must be 2-D \(samples x features\), got shape \(8, 6, 2\)"),
    "negative values for dispersion": (write_csv(frame()), {"method": "dispersion"}, DataValidationError,
                                       r"t.csv: dispersion needs nonnegative values .* value\(s\) are negative, the "
                                       r"first for feature 'g\d' in sample number \d+ of \d+: -"),
    "not a mat file": (write_bytes("t.mat", b"hello"), {}, DatasetError, r"t.mat: not a readable MATLAB .mat file"),
    "missing file": (lambda path: path / "absent.mat", {}, DatasetError, r"absent.mat: file not found"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_refused_with_a_message_naming_it(case, tmp_path, fast_parameters):
    make, options, error, message = CASES[case]
    path = make(tmp_path)
    if "k_values" in options:
        fast_parameters["selection"] = {**fast_parameters["selection"], "k_values": options["k_values"],
                                         "k": options["k_values"][0]}
    if "method" in options:
        fast_parameters["selection"] = {**fast_parameters["selection"], "method": options["method"]}
    with pytest.raises(error, match=message):
        table = FeatureTableDataset(filepath=str(path), label_column=options.get("label_column")).load()
        first_node(table, fast_parameters)


def test_huge_but_finite_values_are_standardized_without_overflow(fast_parameters):
    from iclfs.method._preprocessing import FeatureTable

    X = RNG.normal(size=(8, 6)) * 1e30
    fast_parameters["selection"] = {**fast_parameters["selection"], "k_values": [2], "k": 2}
    standardized, *_ = first_node(FeatureTable(X=X), fast_parameters)
    assert standardized.dtype == np.float32 and np.isfinite(standardized).all()
    np.testing.assert_allclose(standardized.std(axis=0), 1.0, rtol=1e-5)
