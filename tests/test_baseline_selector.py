"""BaselineSelector: every other method of the library as a scikit-learn selector (tiny data, few epochs)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from iclfs import baselines
from iclfs.io.synthetic import make_synthetic
from iclfs.method.config import RuntimeConfig
from iclfs.method.preprocessing import FeatureTable, prepare
from iclfs.selectors import BaselineSelector

QUICK = {"cae": {"epochs": 2}, "lscae": {"epochs": 2}}
METHODS = [m for m in baselines.METHODS if m != "iclfs"]


@pytest.fixture(scope="module")
def table():
    return make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)


def selector(method: str, k=5, **kwargs) -> BaselineSelector:
    return BaselineSelector(method, k, n_clusters=2, options=QUICK.get(method), device="cpu", num_threads=1,
                            **kwargs)


@pytest.mark.parametrize("method", METHODS)
def test_each_method_selects_exactly_k_the_registry_s_selection_and_repeats_it(table, method):
    fitted = selector(method).fit(table.X)
    assert len(set(fitted.selected_features_.tolist())) == 5 == fitted.support_.sum()
    assert set(np.flatnonzero(fitted.ranking_ == 1)) == set(fitted.selected_features_.tolist())
    assert sorted(fitted.ranking_[fitted.ranking_ > 1].tolist()) == list(range(2, 41 - 5 + 1))
    X = prepare(FeatureTable(X=table.X)).standardized  # the same code as the benchmark and select
    # the selector's thread count: CAE and LS-CAE are bit-repeatable only at the same one
    direct = baselines.run(method, X, [5], n_clusters=2, seed=42, options=QUICK.get(method),
                           runtime=RuntimeConfig(device="cpu", num_threads=1, progress=False))
    np.testing.assert_array_equal(fitted.selected_features_, direct.selections[5])
    again = selector(method).fit(table.X)
    np.testing.assert_array_equal(fitted.selected_features_, again.selected_features_)
    assert fitted.transform(table.X).shape == (40, 5)


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "iclfs"}, "ICLFS is ICLFSSelector"),
    ({"method": "ndsf"}, "method must be one of ls, spec, mcfs, ndfs, cae, lscae"),
    ({"method": "mcfs", "n_clusters": None}, "needs the number of clusters"),
    ({"method": "cae", "options": {"epoch": 3}}, "baselines.cae.epoch"),
    ({"method": "ls", "n_features_to_select": 41}, "larger than the number of features"),
])
def test_bad_parameters_are_refused_by_name(table, kwargs, message):
    params = {"method": "ls", "n_features_to_select": 5, "n_clusters": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        BaselineSelector(**params).fit(table.X)


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
