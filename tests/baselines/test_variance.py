"""The variance baselines: hand-computed scores, unstandardized input, refusals, ties, and scanpy's seurat flavour."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from iclfs.baselines._variance import (
    DispersionOptions,
    VarianceOptions,
    dispersion_memory,
    dispersion_order,
    dispersion_scores,
    select_dispersion,
    select_variance,
    variance_memory,
    variance_order,
    variance_scores,
)
from iclfs.baselines._result import BaselineResult
from iclfs.method._config import ParameterError
from iclfs.method._preprocessing import DataValidationError

LN2 = math.log(2.0)


# ------------------------------------------------------------------ variance


def test_variance_by_hand():
    X = np.array([[0.0, 1.0, 5.0, 0.0],
                  [2.0, 1.0, 1.0, 0.0],
                  [4.0, 1.0, 3.0, 3.0]])
    # means 2, 1, 3, 1; squared deviations 8, 0, 8, 6 over n - 1 = 2
    np.testing.assert_allclose(variance_scores(X), [4.0, 0.0, 4.0, 3.0], rtol=1e-15)
    # 0 and 2 tie at 4: the smaller index first; the constant feature last
    assert variance_order(X).tolist() == [0, 2, 3, 1]


def test_variance_reads_unstandardized_values():
    small = np.array([0.0, 1.0, 2.0, 3.0])
    X = np.column_stack([small, 10.0 * small])  # the same standardized column twice
    standardized = (X - X.mean(0)) / X.std(0)
    np.testing.assert_array_equal(standardized[:, 0], standardized[:, 1])
    np.testing.assert_allclose(variance_scores(X), [5.0 / 3.0, 500.0 / 3.0])
    assert variance_order(X).tolist() == [1, 0]  # against the index tie-break: the larger variance wins


def test_variance_accepts_negative_values():
    X = np.array([[-3.0, 1.0], [-1.0, 1.5], [-2.0, 2.0]])
    np.testing.assert_allclose(variance_scores(X), [1.0, 0.25])


def test_constant_features_rank_last_by_index_whatever_the_rounding():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 6))
    X[:, 1] = 0.1  # the mean of seven 0.1 is not exactly 0.1 in float64
    X[:, 4] = 1e6 / 3.0
    scores = variance_scores(X)
    assert scores[1] == 0.0 and scores[4] == 0.0
    assert variance_order(X)[-2:].tolist() == [1, 4]


def test_ties_broken_by_index_and_results_deterministic():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(9, 3))
    X = base[:, [2, 0, 1, 0, 2, 1]]  # every column twice
    order = variance_order(X)
    for first, second in ([1, 3], [2, 5], [0, 4]):
        assert order.tolist().index(first) + 1 == order.tolist().index(second)
    copy = X.copy()
    assert np.array_equal(variance_order(X), order) and np.array_equal(X, copy)
    assert np.array_equal(dispersion_order(np.abs(X)), dispersion_order(np.abs(X)))


# ---------------------------------------------------------------- dispersion


def test_dispersion_by_hand_one_bin():
    # Two samples: mean (a + b) / 2, variance (ddof=1) (a - b)^2 / 2.
    X = np.array([[1.0, 0.0, 0.0, 5.0, 0.0],
                  [3.0, 2.0, 4.0, 5.0, 0.0]])
    # dispersions var / mean: 2 / 2 = 1, 2 / 1 = 2, 8 / 2 = 4; log: 0, ln 2, 2 ln 2 -> mean ln 2, std ln 2
    scores = dispersion_scores(X, n_bins=1)
    np.testing.assert_allclose(scores[:3], [-1.0, 0.0, 1.0], atol=1e-12)
    assert scores[3] == -np.inf and scores[4] == -np.inf  # constant, all zeros
    assert dispersion_order(X, n_bins=1).tolist() == [2, 1, 0, 3, 4]


def test_dispersion_by_hand_bins_and_a_lonely_feature():
    X = np.array([[1.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0],
                  [3.0, 4.0, 4.0, 3.0, 0.2, 2.0, 0.0]])
    # features 0-3 (and the constant 5) have mean 2, ln(1 + 2) = 1.0986; feature 4 mean 0.1, ln 1.1 = 0.0953;
    # feature 6 mean 0, ln 1 = 0. With 2 bins over [0, 1.0986] (edge 0.549) feature 4 is the only variable
    # feature of the first bin: it scores 1. The second: log dispersions 0, 2 ln 2, 2 ln 2, 0 -> mean ln 2,
    # std sqrt(4 (ln 2)^2 / 3) = 2 ln 2 / sqrt 3, so z = -+sqrt(3) / 2.
    half_root3 = math.sqrt(3.0) / 2.0
    expected = [-half_root3, half_root3, half_root3, -half_root3, 1.0, -np.inf, -np.inf]
    for n_bins in (2, 20):  # with 20 bins (width 0.055) feature 4 is alone in the second bin
        scores = dispersion_scores(X, n_bins=n_bins)
        np.testing.assert_allclose(scores, expected, rtol=1e-12)
        assert scores[4] == 1.0
        assert dispersion_order(X, n_bins=n_bins).tolist() == [4, 1, 2, 0, 3, 5, 6]


def test_dispersion_equal_log_dispersions_in_a_bin_score_zero():
    X = np.array([[1.0, 2.0, 0.0],
                  [3.0, 6.0, 0.0]])  # dispersions 1 and 2: means 2 and 4 in one bin
    np.testing.assert_allclose(dispersion_scores(X, n_bins=1)[:2], [-1 / math.sqrt(2), 1 / math.sqrt(2)])
    X = np.array([[1.0, 1.0, 4.0], [3.0, 3.0, 4.0]])  # the same column twice, then a constant
    np.testing.assert_array_equal(dispersion_scores(X, n_bins=1), [0.0, 0.0, -np.inf])


def test_all_zero_feature_ranks_last_even_below_negative_scores():
    X = np.array([[0.0, 1.0, 0.0, 0.0],
                  [0.0, 3.0, 2.0, 4.0]])
    scores = dispersion_scores(X, n_bins=1)
    assert scores[0] == -np.inf and np.all(np.isfinite(scores[1:])) and scores[1] < 0
    assert dispersion_order(X, n_bins=1).tolist() == [3, 2, 1, 0]
    assert not np.isnan(scores).any()


def test_dispersion_of_a_single_bin_or_equal_means():
    X = np.array([[1.0, 0.0], [3.0, 4.0]])  # both means 2: one bin whatever n_bins
    np.testing.assert_allclose(dispersion_scores(X), [-1 / math.sqrt(2), 1 / math.sqrt(2)])


def test_dispersion_refuses_negative_values_naming_count_and_position():
    X = np.abs(np.random.default_rng(2).normal(size=(5, 4)))
    X[1, 2], X[3, 0], X[4, 3] = -0.5, -1.0, -2.0
    with pytest.raises(DataValidationError,
                       match=r"dispersion: found 3 negative value\(s\).*first at \(row 1, column 2\) = -0\.5"):
        dispersion_scores(X)


@pytest.mark.parametrize("score", [variance_scores, dispersion_scores])
def test_nan_and_inf_refused_naming_them(score):
    X = np.ones((4, 3))
    X[2, 1] = np.nan
    X[3, 0] = np.inf
    with pytest.raises(DataValidationError, match=r"found 1 NaN and 1 infinite value\(s\).*\(row 2, column 1\)"):
        score(X)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: variance_scores(np.ones(5)), "must be 2-D"),
        (lambda: dispersion_scores(np.ones((1, 4))), ">= 2 samples"),
        (lambda: dispersion_scores(np.ones((3, 2)), n_bins=0), "n_bins must be an integer >= 1, got 0"),
        (lambda: dispersion_scores(np.ones((3, 2)), n_bins=2.5), "n_bins"),
        (lambda: variance_scores(np.array([[1e300, 0.0], [-1e300, 0.0]])), "overflows float64, first column 0"),
    ],
)
def test_validation_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ----------------------------------------------------------- the registry's entries


def test_options_sections():
    assert VarianceOptions().to_dict() == {}
    assert DispersionOptions().n_bins == 20
    assert DispersionOptions.from_dict({"n_bins": 5}).n_bins == 5
    with pytest.raises(ParameterError, match=r"baselines\.dispersion\.n_bins = 0 is invalid: expected an integer >= 1"):
        DispersionOptions(n_bins=0)
    with pytest.raises(ParameterError, match=r"unknown parameter\(s\) baselines\.dispersion\.bins"):
        DispersionOptions.from_dict({"bins": 5})
    with pytest.raises(ParameterError, match=r"unknown parameter\(s\) baselines\.variance\.ddof"):
        VarianceOptions.from_dict({"ddof": 0})


def test_select_returns_the_first_k_best_first():
    X = np.array([[1.0, 0.0, 0.0, 5.0, 0.0],
                  [3.0, 2.0, 4.0, 5.0, 0.0]])
    result = select_dispersion(X, [1, 3], options=DispersionOptions(n_bins=1), n_clusters=None, seed=0)
    assert isinstance(result, BaselineResult)
    assert {k: v.tolist() for k, v in result.selections.items()} == {1: [2], 3: [2, 1, 0]}
    np.testing.assert_array_equal(result.scores, dispersion_scores(X, n_bins=1))
    result = select_variance(X, [2, 5], options=VarianceOptions(), seed=0)
    # variances 2, 2, 8, 0, 0
    assert {k: v.tolist() for k, v in result.selections.items()} == {2: [2, 0], 5: [2, 0, 1, 3, 4]}
    np.testing.assert_allclose(result.scores, [2.0, 2.0, 8.0, 0.0, 0.0])
    assert result.selections[2].dtype == np.int64


@pytest.mark.parametrize("score,memory", [(variance_scores, variance_memory), (dispersion_scores, dispersion_memory)])
def test_memory_estimate_covers_the_peak(score, memory):
    n, d = 40, 2000
    X = np.random.default_rng(3).poisson(2.0, size=(n, d)).astype(np.float64)
    tracemalloc.start()
    try:
        score(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert X.nbytes + peak <= memory(n, d, 50) <= 3 * X.nbytes


# ------------------------------------------------------- scanpy's seurat flavour


def test_dispersion_matches_scanpy_seurat_flavour():
    sc = pytest.importorskip("scanpy")
    anndata = pytest.importorskip("anndata")
    rng = np.random.default_rng(4)
    rates = rng.gamma(0.5, 4.0, size=200)
    size_factors = rng.gamma(4.0, 0.25, size=50)
    counts = rng.poisson(size_factors[:, None] * rates[None, :]).astype(np.float64)  # 50 cells x 200 genes
    counts[:, 7] = 0.0
    normalized = counts / counts.sum(axis=1, keepdims=True) * 1e4  # sc.pp.normalize_total(target_sum=1e4)
    logged = np.log1p(normalized)  # sc.pp.log1p: what scanpy's seurat flavour expects

    n_top = 20
    table = sc.pp.highly_variable_genes(anndata.AnnData(logged.copy()), flavor="seurat", n_top_genes=n_top,
                                        inplace=False)
    theirs = table["dispersions_norm"].to_numpy()
    ours = dispersion_scores(normalized)  # the linear scale: scanpy takes expm1 of the log1p table first

    finite = np.isfinite(theirs)
    assert np.array_equal(np.isfinite(ours), finite)  # scanpy's NaN (zero or constant genes) is our -inf
    assert ours[7] == -np.inf and 7 in dispersion_order(normalized)[finite.sum():]  # the all-zero gene: last
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-9, atol=1e-9)
    assert np.any(ours == 1.0)  # scanpy's rule for a gene alone in its bin was exercised
    top = dispersion_order(normalized)[:n_top]
    assert set(top.tolist()) == set(np.flatnonzero(table["highly_variable"].to_numpy()).tolist())
    np.testing.assert_allclose(dispersion_scores(np.expm1(logged)), ours, rtol=1e-9, atol=1e-9)


# ------------------------------------------------- through the chain, the selector and the first stages


def equal_when_standardized(n=30, seed=0):
    """Six nonnegative features; 0 and 1 are the same column once standardized, 1 with ten times the spread."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    X = np.column_stack([base + 5.0, 10.0 * (base + 5.0), *(rng.uniform(4.0, 6.0, size=(4, n)))])
    standardized = (X - X.mean(0)) / X.std(0)
    np.testing.assert_allclose(standardized[:, 0], standardized[:, 1], atol=1e-12)
    return X


@pytest.mark.parametrize("method, options", [("variance", None), ("dispersion", {"n_bins": 1})])
def test_both_methods_read_the_table_before_standardization_in_every_entry_point(method, options):
    from iclfs import BaselineSelector, chain
    from iclfs.method._config import Settings
    from iclfs.method._preprocessing import FeatureTable
    from iclfs.pipelines.data_processing.nodes import validate_and_standardize
    from iclfs.pipelines.training.nodes import train_members

    X = equal_when_standardized()
    # 1 varies ten times as much as 0 (variance), and its variance / mean is ten times 0's (dispersion)
    selector = BaselineSelector(method, 1, options=options).fit(X)
    assert selector.selected_features_.tolist() == [1]
    assert selector.scores_[1] > selector.scores_[0]
    settings = Settings.from_parameters({"selection": {"method": method, "k": 1, "k_values": [1, 2]}})
    result = chain.run(FeatureTable(X=X), settings, options=options)
    assert result.selected.tolist() == [1]
    np.testing.assert_array_equal(result.ranking.scores, selector.scores_)
    # the Kedro stages: the first hands the table as measured to the training stage, which selects from it
    parameters = {"training": {}, "runtime": {}, "laplacian": {}, "selection": {"method": method, "k": 1,
                                                                              "k_values": [1, 2]},
                  "members": {}, "baselines": {method: options or {}}}
    standardized, measured, *_ = validate_and_standardize(FeatureTable(X=X), *parameters.values())
    np.testing.assert_array_equal(measured, X)
    names = [f"f{j}" for j in range(X.shape[1])]
    _, _, scores = train_members(np.ascontiguousarray(standardized.T), names, {"k_values": [1, 2]}, {}, {}, {}, {},
                                 {}, {"seed": 42}, parameters["selection"], parameters["baselines"], measured)
    np.testing.assert_array_equal(scores[method][0], selector.scores_)
    assert scores["selected_1"].tolist() == [1]


def test_another_method_holds_no_copy_of_the_table_as_measured():
    from iclfs.pipelines.data_processing.nodes import validate_and_standardize
    from iclfs.method._preprocessing import FeatureTable

    X = equal_when_standardized()
    for method in ("iclfs", "ls"):
        out = validate_and_standardize(FeatureTable(X=X), {}, {}, {}, {"method": method, "k": 1, "k_values": [1]},
                                       {}, {})
        assert out[1].shape == (X.shape[0], 0)
    out = validate_and_standardize(FeatureTable(X=X), {}, {}, {}, {"method": "ls", "k": 1, "k_values": [1]}, {}, {},
                                   keep_measured=True)  # the benchmark's, whose baselines include variance
    np.testing.assert_array_equal(out[1], X)


def test_the_registry_runs_them_deterministically_without_clusters_and_refuses_them_no_measured_table():
    from iclfs import baselines

    X = equal_when_standardized()
    for key in ("variance", "dispersion"):
        entry = baselines.REGISTRY[key]
        assert entry.reads_measured and not entry.needs_clusters and not entry.seeded and key in baselines.METHODS
        standardized = (X - X.mean(0)) / X.std(0)
        first = baselines.run(key, standardized, [1, 3], measured=X, seed=1)
        again = baselines.run(key, standardized, [1, 3], measured=X, seed=2)
        assert {k: v.tolist() for k, v in first.selections.items()} == {k: v.tolist() for k, v in
                                                                         again.selections.items()}
        with pytest.raises(ValueError, match=rf"{entry.name} reads the table before standardization.*measured="):
            baselines.run(key, standardized, [1])
        with pytest.raises(ValueError, match=r"measured has shape \(30, 5\), the standardized table \(30, 6\)"):
            baselines.run(key, standardized, [1], measured=X[:, :5])


def test_dispersion_refuses_negative_values_before_anything_runs_naming_the_feature_and_sample():
    from iclfs import BaselineSelector

    X = equal_when_standardized()
    X[4, 3] = -0.5
    frame = __import__("pandas").DataFrame(X, columns=[f"gene{j}" for j in range(X.shape[1])])
    with pytest.raises(DataValidationError, match=r"dispersion needs nonnegative values .* 1 value\(s\) are negative, "
                                                  r"the first for feature 'gene3' in sample number 5 of 30: -0.5"):
        BaselineSelector("dispersion", 2).fit(frame)
    assert BaselineSelector("variance", 2).fit(frame).selected_features_[0] == 1  # variance takes any values


@pytest.mark.parametrize("method", ["variance", "dispersion"])
def test_constant_features_are_never_chosen_before_varying_ones_and_nan_is_refused(method):
    from iclfs import BaselineSelector

    X = equal_when_standardized()
    X[:, 2] = 7.0  # constant
    chosen = BaselineSelector(method, 5).fit(X).selected_features_
    assert 2 not in chosen.tolist()
    X[3, 4] = np.nan
    with pytest.raises(DataValidationError, match=r"found 1 NaN and 0 infinite value\(s\).*row 3, column 4"):
        BaselineSelector(method, 2).fit(X)


@pytest.mark.parametrize("method, options", [("variance", None), ("dispersion", {"n_bins": 1})])
def test_the_selector_in_a_scikit_learn_pipeline(method, options):
    import pandas as pd
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from iclfs import BaselineSelector

    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 20)
    X = rng.poisson(3.0, size=(40, 12)).astype(np.float64)
    X[:, 5] += 30.0 * y  # the one feature that varies with the class varies most
    frame = pd.DataFrame(X, columns=[f"gene{j}" for j in range(12)])
    # the selector first: a scaler before it would hand it equal variances
    model = make_pipeline(BaselineSelector(method, 3, options=options), StandardScaler(), LogisticRegression()).fit(frame, y)
    assert "gene5" in model[:-2].get_feature_names_out().tolist()
    assert model.score(frame, y) == 1.0
    assert model.predict(frame.iloc[:4]).shape == (4,)


def test_the_benchmark_skips_dispersion_on_a_table_with_negative_values_saying_so(caplog):
    from iclfs.evaluation._benchmark import baseline_selections

    X = equal_when_standardized()
    X[0, 0] = -1.0
    standardized = (X - X.mean(0)) / X.std(0)
    with caplog.at_level("WARNING"):
        out = baseline_selections(standardized, np.repeat([0, 1], 15), ["variance", "dispersion"], {}, [1, 2], 0,
                                  measured=X)
    assert list(out) == ["variance", "dispersion"] and out["dispersion"] == ({}, 0.0)  # an empty cell
    assert "dispersion skipped: it needs nonnegative values and the table has 1 negative one(s)" in caplog.text
