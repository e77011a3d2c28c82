"""BaselineSelector: every other method of the library as a scikit-learn selector (tiny data, few epochs)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from iclfs import baselines, chain
from iclfs.io._synthetic import make_synthetic
from iclfs.method._config import RuntimeConfig, SelectionConfig, Settings
from iclfs.method._preprocessing import FeatureTable, prepare
from iclfs.method._scores import feature_order
from iclfs._selectors import BaselineSelector

QUICK = {"cae": {"epochs": 2}, "lscae": {"epochs": 2}}
METHODS = [m for m in baselines.METHODS if m != "iclfs"]


@pytest.fixture(scope="module")
def table():
    return make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)


def data_for(method: str, table) -> np.ndarray:
    """The table, moved to nonnegative values for a method that needs them (dispersion)."""
    X = np.asarray(table.X, dtype=np.float64)
    return X - X.min() if baselines.REGISTRY[method].nonnegative else X


def selector(method: str, k=5, **kwargs) -> BaselineSelector:
    return BaselineSelector(method, k, n_clusters=2, options=QUICK.get(method), device="cpu", num_threads=1,
                            **kwargs)


@pytest.mark.parametrize("method", METHODS)
def test_each_method_selects_exactly_k_the_registry_s_selection_and_repeats_it(table, method):
    data = data_for(method, table)
    fitted = selector(method).fit(data)
    assert len(set(fitted.selected_features_.tolist())) == 5 == fitted.support_.sum()
    assert set(np.flatnonzero(fitted.ranking_ == 1)) == set(fitted.selected_features_.tolist())
    assert sorted(fitted.ranking_[fitted.ranking_ > 1].tolist()) == list(range(2, 41 - 5 + 1))
    # feature_order_ as ICLFSSelector's: every feature once, best first by scores_, and ranking_ follows it
    np.testing.assert_array_equal(fitted.feature_order_, feature_order(fitted.scores_))
    rest = [j for j in fitted.feature_order_ if not fitted.support_[j]]
    assert fitted.ranking_[rest].tolist() == list(range(2, 41 - 5 + 1))
    prepared = prepare(FeatureTable(X=data), keep_measured=True)  # the same code as the benchmark and select
    # the selector's thread count: CAE and LS-CAE are bit-repeatable only at the same one
    direct = baselines.run(method, prepared.standardized, [5], n_clusters=2, seed=42, options=QUICK.get(method),
                           runtime=RuntimeConfig(device="cpu", num_threads=1, progress=False),
                           measured=prepared.measured)
    np.testing.assert_array_equal(fitted.selected_features_, direct.selections[5])
    again = selector(method).fit(data)
    np.testing.assert_array_equal(fitted.selected_features_, again.selected_features_)
    assert fitted.transform(data).shape == (40, 5)


@pytest.mark.parametrize("method", METHODS)
def test_each_method_s_selection_equals_the_chain_run_with_the_same_settings(table, method):
    """BaselineSelector is iclfs.chain.run with selection.method, k and n_clusters, and the runtime it is given."""
    data = data_for(method, table)
    fitted = selector(method, random_state=3).fit(data)
    n_clusters = 2 if baselines.REGISTRY[method].needs_clusters else None
    settings = Settings(seed=3, runtime=RuntimeConfig(device="cpu", num_threads=1, progress=False),
                        selection=SelectionConfig(k=5, k_values=(5,), method=method, n_clusters=n_clusters))
    result = chain.run(FeatureTable(X=data), settings, options=QUICK.get(method))
    np.testing.assert_array_equal(fitted.selected_features_, result.selected)
    np.testing.assert_array_equal(fitted.scores_, result.ranking.scores)
    assert fitted.seed_ == result.continuation.seed == 3
    assert fitted.training_log_ == result.trained.log
    assert not hasattr(fitted, "training_history_")
    if baselines.REGISTRY[method].neural:
        assert fitted.training_log_ and {"epoch", "loss"} <= set(fitted.training_log_[0])
    else:
        assert fitted.training_log_ == []


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "iclfs"}, r"ICLFS is ICLFSSelector\), got 'iclfs'$"),
    ({"method": "ndsf"}, r"method must be one of ls, spec, mcfs, ndfs, cae, lscae, variance, dispersion .*got 'ndsf' "
                         r"\(did you mean 'ndfs'\?\)"),
    ({"method": "lss"}, r"\(did you mean 'ls'\?\)"),
    ({"method": "mcfs", "n_clusters": None}, "needs the number of clusters"),
    ({"method": "ndfs", "n_clusters": 1}, r"n_clusters must be an int in 2..40 \(the samples\), got 1"),
    ({"method": "mcfs", "n_clusters": 41}, r"n_clusters must be an int in 2..40 \(the samples\), got 41"),
    ({"method": "ndfs", "n_clusters": 2.0}, r"n_clusters must be an int in 2..40"),
    ({"method": "cae", "options": {"epoch": 3}}, "baselines.cae.epoch"),
    ({"method": "ls", "n_features_to_select": 41}, "larger than the number of features"),
], ids=["iclfs", "did-you-mean-ndfs", "did-you-mean-ls", "no-clusters", "one-cluster", "more-clusters-than-samples",
        "float-clusters", "unknown-option", "k-too-large"])
def test_bad_parameters_are_refused_by_name(table, kwargs, message):
    params = {"method": "ls", "n_features_to_select": 5, "n_clusters": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        BaselineSelector(**params).fit(table.X)


@pytest.mark.parametrize("method", METHODS)
def test_auto_is_refused_naming_n_features_to_select_and_the_fix(table, method):
    with pytest.raises(ValueError, match=rf"n_features_to_select='auto' .*BaselineSelector\('{method}'\) needs an "
                                         rf"int or a fraction: e.g. BaselineSelector\('{method}', 50\)"):
        BaselineSelector(method, "auto", n_clusters=2).fit(table.X)


@pytest.mark.parametrize("method", ["ndfs", "mcfs"])
def test_a_method_that_needs_clusters_says_the_selector_s_fix(table, method):
    with pytest.raises(ValueError, match=rf"needs the number of clusters: BaselineSelector\('{method}', "
                                         r"n_clusters=4\)") as err:
        BaselineSelector(method, 5).fit(table.X)
    assert "--params" not in str(err.value) and "selection.n_clusters" not in str(err.value)


@pytest.mark.parametrize("method", ["ls", "spec"])
def test_methods_without_clusters_ignore_n_clusters(table, method):
    """scikit-learn's checks set n_clusters=1 on any estimator that has it: the methods that do not use it
    select as without it."""
    with_one = BaselineSelector(method, 5, n_clusters=1).fit(table.X)
    without = BaselineSelector(method, 5).fit(table.X)
    np.testing.assert_array_equal(with_one.selected_features_, without.selected_features_)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape, message", [((1, 10), r"1 sample\(s\)"), ((10, 1), r"1 feature\(s\)")],
                         ids=["1-sample", "1-feature"])
def test_too_small_data_is_refused_before_the_parameters(method, shape, message):
    """The data's shape is said first, whatever n_clusters is (scikit-learn's fit2d checks set it to 1)."""
    with pytest.raises(ValueError, match=message):
        BaselineSelector(method, 1, n_clusters=1).fit(np.random.default_rng(0).random(shape))


def expected_failures(estimator: BaselineSelector) -> dict[str, str]:
    """Three of scikit-learn's checks set ``n_clusters=1``, which NDFS refuses (it needs two clusters or more)."""
    if estimator.method != "ndfs":
        return {}
    reason = "the check sets n_clusters=1; NDFS refuses fewer than 2 clusters with a clear ValueError"
    return {name: reason for name in ("check_dont_overwrite_parameters", "check_methods_subset_invariance",
                                      "check_fit2d_predict1d")}


@parametrize_with_checks(
    [BaselineSelector("ls", 1), BaselineSelector("spec", 1), BaselineSelector("ndfs", 1, n_clusters=2),
     BaselineSelector("lscae", 1, options={"epochs": 1}, device="cpu", num_threads=1)],
    expected_failed_checks=expected_failures,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
