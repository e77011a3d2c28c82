"""ICLFSSelector: the scikit-learn face of the core (tiny data, 1-2 epochs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from iclfs.method.laplacian import laplacian_scores
from iclfs.method.lgrc import lgrc_select
from iclfs.method.preprocessing import FeatureTable, invert, prepare
from iclfs.method.scores import feature_scores, rank_features
from iclfs.io.synthetic import make_synthetic
from iclfs.method.training import TrainingConfig, embed, train
from iclfs.method.views import ViewConfig
from iclfs.apps.selector import EXPECTED_FAILED_CHECKS, ICLFSSelector

K = 5
FAST = {"epochs": 2, "device": "cpu"}


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Tiny tensors: one thread is fastest and avoids OpenMP spin contention."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def table():
    return make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)


@pytest.fixture(scope="module")
def frame(table):
    return pd.DataFrame(table.X, columns=table.feature_names)


@pytest.fixture(scope="module")
def fitted(table):
    return ICLFSSelector(K, **FAST).fit(table.X)


def core_chain(X, k, *, epochs=2, seed=42, score="z_norm", use_lgrc=True, alpha=1.5, quantile=0.75,
               n_neighbors=3):
    """The selection computed by calling the core functions directly."""
    prepared = prepare(FeatureTable(X=X))
    A = invert(prepared.standardized)
    result = train(A, TrainingConfig(epochs=epochs, device="cpu", progress=False), ViewConfig(), seed=seed)
    h, z = embed(result.model, A)
    scores = feature_scores(h, z)[score]
    ranking = rank_features(scores)
    ls = laplacian_scores(prepared.standardized, n_neighbors=n_neighbors)
    selected = lgrc_select(ranking, ls, k, alpha=alpha, quantile=quantile) if use_lgrc else ranking[:k]
    return scores, ranking, ls, selected


# -- shapes, attributes, mask ------------------------------------------------


def test_fit_transform_shapes_and_attributes(fitted, table):
    n, d = table.X.shape
    assert fitted.transform(table.X).shape == (n, K)
    assert fitted.n_features_in_ == d
    assert fitted.n_features_to_select_ == K
    assert fitted.feature_scores_.shape == (d,)
    assert fitted.laplacian_scores_.shape == (d,)
    assert sorted(fitted.ranking_.tolist()) == list(range(d))
    assert fitted.selected_features_.shape == (K,)
    assert len(fitted.training_history_) == 2 and {"epoch", "loss"} <= set(fitted.training_history_[0])
    assert next(fitted.model_.parameters()).device.type == "cpu"
    assert not hasattr(fitted, "feature_names_in_")
    # fit_transform equals fit + transform; the selected columns, best first in selected_features_.
    np.testing.assert_array_equal(
        clone(fitted).fit_transform(table.X), table.X[:, np.sort(fitted.selected_features_)]
    )


def test_support_mask_matches_selected_features(fitted):
    mask = fitted.get_support()
    assert mask.dtype == bool and mask.sum() == K
    np.testing.assert_array_equal(mask, fitted.support_)
    np.testing.assert_array_equal(np.flatnonzero(mask), np.sort(fitted.selected_features_))
    np.testing.assert_array_equal(fitted.get_support(indices=True), np.sort(fitted.selected_features_))


def test_feature_names_out(fitted, frame):
    on_frame = ICLFSSelector(K, **FAST).fit(frame)
    np.testing.assert_array_equal(on_frame.feature_names_in_, frame.columns.to_numpy())
    chosen = np.sort(on_frame.selected_features_)
    np.testing.assert_array_equal(on_frame.get_feature_names_out(), frame.columns[chosen].to_numpy())
    # numpy input: sklearn's x0, x1, ... names
    np.testing.assert_array_equal(
        fitted.get_feature_names_out(), [f"x{j}" for j in np.sort(fitted.selected_features_)]
    )
    # same data and seed, same choice whether it came as a frame or an array
    np.testing.assert_array_equal(on_frame.selected_features_, fitted.selected_features_)


def test_set_output_pandas(frame, table):
    selector = ICLFSSelector(K, **FAST).set_output(transform="pandas")
    out = selector.fit_transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(selector.get_feature_names_out())
    pd.testing.assert_frame_equal(out, frame[out.columns])
    out_np = ICLFSSelector(K, **FAST).set_output(transform="pandas").fit(table.X).transform(table.X)
    assert isinstance(out_np, pd.DataFrame) and out_np.columns[0].startswith("x")


@pytest.mark.parametrize("final", [LogisticRegression(), KMeans(n_clusters=2, n_init=1, random_state=0)],
                         ids=["logistic", "kmeans"])
def test_inside_pipeline(frame, table, final):
    pipe = make_pipeline(StandardScaler(), ICLFSSelector(K, **FAST), final).set_output(transform="pandas")
    pipe.fit(frame, table.y)
    assert pipe.predict(frame).shape == (len(frame),)
    names = pipe[:-1].get_feature_names_out()
    assert len(names) == K and set(names) <= set(frame.columns)


# -- reproducibility and agreement with the core ------------------------------


def test_same_random_state_same_selection(table):
    a = ICLFSSelector(K, random_state=7, **FAST).fit(table.X)
    b = ICLFSSelector(K, random_state=7, **FAST).fit(table.X, y=table.y)  # y is ignored
    np.testing.assert_array_equal(a.selected_features_, b.selected_features_)
    np.testing.assert_array_equal(a.ranking_, b.ranking_)
    np.testing.assert_array_equal(a.feature_scores_, b.feature_scores_)
    assert a.seed_ == b.seed_ == 7


@pytest.mark.parametrize("settings", [{}, {"ranking_score": "harmonic", "alpha": 2.0, "quantile": 0.5}],
                         ids=["defaults", "harmonic"])
def test_selection_equals_core_chain(table, settings):
    selector = ICLFSSelector(K, random_state=11, **FAST, **settings).fit(table.X)
    core = {"score": settings.get("ranking_score", "z_norm"),
            **{k: v for k, v in settings.items() if k != "ranking_score"}}
    scores, ranking, ls, selected = core_chain(table.X, K, seed=11, **core)
    np.testing.assert_allclose(selector.feature_scores_, scores)
    np.testing.assert_array_equal(selector.ranking_, ranking)
    np.testing.assert_array_equal(selector.laplacian_scores_, ls)
    np.testing.assert_array_equal(selector.selected_features_, selected)


def test_fit_leaves_torch_global_state_alone(table):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ICLFSSelector(K, training_options={"num_threads": 2}, **FAST).fit(table.X)
    np.testing.assert_array_equal(torch.rand(3), expected)
    assert torch.get_num_threads() == 1


def test_random_state_none_draws_a_seed_from_numpy(table):
    np.random.seed(0)
    a = ICLFSSelector(K, random_state=None, **FAST).fit(table.X)
    np.random.seed(0)
    b = ICLFSSelector(K, random_state=None, **FAST).fit(table.X)
    assert a.seed_ == b.seed_
    np.testing.assert_array_equal(a.selected_features_, b.selected_features_)


# -- options ------------------------------------------------------------------


def test_without_lgrc_selects_first_k_of_ranking(table):
    selector = ICLFSSelector(K, use_lgrc=False, **FAST).fit(table.X)
    np.testing.assert_array_equal(selector.selected_features_, selector.ranking_[:K])
    assert np.array_equal(selector.ranking_, core_chain(table.X, K, use_lgrc=False)[1])


@pytest.mark.parametrize("fraction, k", [(0.25, 10), (1.0, 40), (0.01, 1)])
def test_float_n_features_to_select_is_a_fraction(table, fraction, k):
    selector = ICLFSSelector(fraction, use_lgrc=False, **FAST).fit(table.X)
    assert selector.n_features_to_select_ == k
    assert selector.transform(table.X).shape == (40, k)


# -- bad input ----------------------------------------------------------------


def test_nan_is_refused_with_its_position(table):
    X = table.X.copy()
    X[3, 7] = np.nan
    with pytest.raises(ValueError, match=r"1 NaN .*row 3, column 7"):
        ICLFSSelector(K, **FAST).fit(X)


def test_k_larger_than_n_features_is_refused(table):
    with pytest.raises(ValueError, match=r"n_features_to_select=41 is larger than the number of features in X \(40\)"):
        ICLFSSelector(41, **FAST).fit(table.X)


def test_non_numeric_column_is_named(frame):
    bad = frame.assign(colour=["red", "blue"] * 20)
    with pytest.raises(ValueError, match=r"not numeric: 'colour'"):
        ICLFSSelector(K, **FAST).fit(bad)


@pytest.mark.parametrize(
    "params, X, message",
    [
        ({"n_features_to_select": 0}, None, "n_features_to_select must be >= 1"),
        ({"n_features_to_select": 1.5}, None, r"must be\s+in \(0, 1\]"),
        ({"n_features_to_select": K, "ranking_score": "norm"}, None, "ranking_score must be one of"),
        ({"n_features_to_select": K, "alpha": 0.5}, None, "alpha must be a number >= 1"),
        ({"n_features_to_select": K, "training_options": {"lr": 1}}, None, r"unknown key\(s\) training_options.lr"),
        ({"n_features_to_select": K, "training_options": {"epochs": 5}}, None, r"must not set epochs: use the ICLFSSelector parameter"),
        ({"n_features_to_select": 1}, np.ones((3, 5)), r"3 sample\(s\).*at least 4"),
        ({"n_features_to_select": 1}, np.ones((10, 1)), r"1 feature\(s\).*at least 2"),
        ({"n_features_to_select": 1, "n_neighbors": 6}, np.random.default_rng(0).random((6, 4)),
         "n_neighbors=6 needs more samples"),
    ],
    ids=["k0", "fraction>1", "score", "alpha", "unknown-option", "duplicate-option", "3-samples",
         "1-feature", "n_neighbors"],
)
def test_bad_parameters_and_shapes_are_refused(table, params, X, message):
    with pytest.raises(ValueError, match=message):
        ICLFSSelector(**{**FAST, **params}).fit(table.X if X is None else X)


# -- scikit-learn's estimator checks -------------------------------------------


@parametrize_with_checks(
    [ICLFSSelector(n_features_to_select=1, epochs=1)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
