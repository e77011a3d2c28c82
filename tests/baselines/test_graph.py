"""Unsupervised feature-selection baselines: direction, references, determinism, validation."""

from __future__ import annotations

import math
import tracemalloc
import warnings

import numpy as np
import pytest
from scipy import linalg
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lars

from iclfs.baselines._graph import (
    _ndfs_factor,
    _ndfs_residual_op,
    _ndfs_w,
    _spectral_embedding,
    _check_data,
    _descending_order,
    ascending_order,
    knn_affinity,
    mcfs_scores,
    mcfs_selections,
    ndfs_scores,
    spec_scores,
)
from iclfs.method._laplacian import laplacian_scores
from iclfs.baselines._reference import random_orders


# Each method's order of every feature: its scores, best first (what its select_* function cuts at every k).
def laplacian_score_order(X, n_neighbors=3):
    return ascending_order(laplacian_scores(_check_data(X), n_neighbors=n_neighbors))


def spec_order(X, gamma=None):
    return ascending_order(spec_scores(X, gamma))


def mcfs_order(X, n_clusters, n_neighbors=5, n_nonzero=None):
    return _descending_order(mcfs_scores(X, n_clusters, n_neighbors, n_nonzero))


def ndfs_order(X, n_clusters, **options):
    return _descending_order(ndfs_scores(X, n_clusters, **options))


def standardize(X):
    return (X - X.mean(0)) / X.std(0)


def three_clusters(seed=0, n_noise=40, n_informative=10, separation=3.0):
    """90 samples in 3 clusters; informative columns at random positions."""
    rng = np.random.default_rng(seed)
    d = n_noise + n_informative
    groups = np.repeat(np.arange(3), 30)
    informative = np.sort(rng.choice(d, n_informative, replace=False))
    X = rng.normal(size=(len(groups), d))
    # every informative feature puts the three clusters at -s, 0, +s (in some order)
    means = np.stack([rng.permutation([-separation, 0.0, separation]) for _ in informative], axis=1)
    X[:, informative] += means[groups]
    return standardize(X), informative, groups


def hits(ranking, informative, top=10):
    return len(set(ranking[:top].tolist()) & set(informative.tolist()))


METHODS = {
    "laplacian": lambda X: laplacian_score_order(X),
    "spec": lambda X: spec_order(X),
    # 3 clusters span 2 non-trivial eigenvectors; the paper sets the LARS
    # cardinality to the number of features to select (10 here).
    "mcfs": lambda X: mcfs_order(X, n_clusters=2, n_nonzero=10),
    "ndfs": lambda X: ndfs_order(X, n_clusters=3),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_informative_features_rank_first_and_direction_matters(name):
    X, informative, _ = three_clusters()
    ranking = METHODS[name](X)
    assert ranking.dtype == np.int64 and ranking.shape == (X.shape[1],)
    assert np.array_equal(np.sort(ranking), np.arange(X.shape[1]))
    assert hits(ranking, informative) >= 8
    # the reversed order must fail, so the score direction is what is tested
    assert hits(ranking[::-1], informative) < 8


@pytest.mark.parametrize("name", sorted(METHODS))
def test_rankings_are_deterministic(name):
    X, _, _ = three_clusters(seed=1)
    assert np.array_equal(METHODS[name](X), METHODS[name](X))


def test_ndfs_same_random_state_same_scores():
    X, _, _ = three_clusters(seed=2)
    a = ndfs_scores(X, 3, random_state=7, max_iter=10)
    b = ndfs_scores(X, 3, random_state=7, max_iter=10)
    assert np.array_equal(a, b)
    assert np.all(np.isfinite(a)) and np.all(a >= 0)


@pytest.mark.parametrize("ranker", [spec_order, laplacian_score_order])
def test_cluster_id_feature_ranks_first(ranker):
    rng = np.random.default_rng(3)
    groups = np.repeat([0, 1], 30)
    # two clusters carried by 10 noisy features (columns 0..9), 19 noise columns,
    # and column 20 a nearly noise-free cluster id: the best separator of all
    X = rng.normal(size=(60, 30))
    X[:, :10] += np.where(groups == 0, -1.5, 1.5)[:, None]
    X[:, 20] = groups + rng.normal(size=60) * 0.05
    ranking = ranker(standardize(X))
    assert ranking[0] == 20 and ranking[-1] != 20


@pytest.mark.parametrize("ranker", [spec_order, laplacian_score_order])
def test_constant_features_rank_last(ranker):
    X, _, _ = three_clusters(seed=4, n_noise=10, n_informative=4)
    X = X.copy()
    X[:, 3] = 0.0
    X[:, 7] = 1.0  # constant but not zero
    ranking = ranker(X)
    assert ranking[-2:].tolist() == [3, 7]  # ties at +inf, by index


def test_spec_constant_scores_are_inf():
    X, _, _ = three_clusters(seed=5, n_noise=6, n_informative=2)
    X = np.column_stack([X, np.zeros(len(X)), np.full(len(X), -2.5)])
    s = spec_scores(X)
    assert np.all(np.isinf(s[-2:])) and np.all(np.isfinite(s[:-2]))


def spec_reference(X, gamma=None):
    """phi_2 with explicit dense matrices and a loop over features."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    sq = [[sum((X[i, t] - X[j, t]) ** 2 for t in range(d)) for j in range(n)] for i in range(n)]
    if gamma is None:
        mean_sq = sum(sq[i][j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
        gamma = 1.0 / (2.0 * mean_sq)
    W = np.array([[math.exp(-gamma * sq[i][j]) for j in range(n)] for i in range(n)])
    D = np.diag(W.sum(axis=1))
    D_half = np.sqrt(D)
    D_minus_half = np.diag(1.0 / np.sqrt(np.diag(D)))
    L = np.eye(n) - D_minus_half @ W @ D_minus_half
    xi = D_half @ np.ones(n)
    xi = xi / np.linalg.norm(xi)
    scores = []
    for j in range(d):
        f = D_half @ X[:, j]
        f_hat = f / np.linalg.norm(f)
        scores.append((f_hat @ L @ f_hat) / (1.0 - (f_hat @ xi) ** 2))
    return np.array(scores)


@pytest.mark.parametrize("gamma", [None, 0.05, 0.5])
def test_spec_matches_dense_loop_reference(gamma):
    rng = np.random.default_rng(6)
    X = standardize(rng.normal(size=(14, 5)))
    np.testing.assert_allclose(spec_scores(X, gamma), spec_reference(X, gamma), rtol=1e-9, atol=1e-12)


def test_spectral_embedding_solves_generalized_problem_and_skips_trivial():
    rng = np.random.default_rng(7)
    # two disconnected blocks: eigenvalue 0 is repeated, the constant must still go
    W = np.zeros((20, 20))
    for block in (slice(0, 10), slice(10, 20)):
        B = rng.uniform(0.1, 1.0, size=(10, 10))
        W[block, block] = (B + B.T) / 2
    np.fill_diagonal(W, 0.0)
    degree = W.sum(axis=1)
    L, D = np.diag(degree) - W, np.diag(degree)
    Y = _spectral_embedding(W, 3)
    lam = np.einsum("ij,ij->j", Y, L @ Y) / np.einsum("ij,ij->j", Y, D @ Y)
    np.testing.assert_allclose(L @ Y, D @ Y * lam, atol=1e-9)
    np.testing.assert_allclose(degree @ Y, 0.0, atol=1e-9)  # D-orthogonal to the constant
    assert np.all(np.diff(lam) >= -1e-12)
    assert lam[0] == pytest.approx(0.0, abs=1e-9)  # the block indicator, not the constant


def test_mcfs_scores_nonnegative_and_sparse():
    X, _, _ = three_clusters(seed=8)
    s = mcfs_scores(X, n_clusters=2, n_nonzero=5)
    assert s.shape == (X.shape[1],) and np.all(s >= 0)
    assert 1 <= np.count_nonzero(s) <= 2 * 5  # at most n_nonzero per eigenvector


@pytest.mark.parametrize(("n", "d"), [(90, 50), (40, 120)])  # d < n, and d > n where k = 45 > n outlasts the path
def test_mcfs_selections_equal_one_lars_fit_per_k(n, d):
    rng = np.random.default_rng(n)
    X = standardize(rng.normal(size=(n, d)))
    k_values = [3, 10, 25, 45]
    selections = mcfs_selections(X, 3, k_values)
    Y = _spectral_embedding(knn_affinity(X, 5).toarray(), 3)
    for k in k_values:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            coef = Lars(n_nonzero_coefs=k, fit_intercept=False).fit(X, Y).coef_
        expected = np.abs(coef).max(axis=0)
        np.testing.assert_allclose(mcfs_scores(X, 3, n_nonzero=k), expected, rtol=0, atol=1e-12)
        assert selections[k].dtype == np.int64 and np.array_equal(np.sort(selections[k]), np.arange(d))
        top = selections[k][:k]
        assert np.all(expected[top][:-1] >= expected[top][1:])  # best first
        assert expected[top].min() >= np.delete(expected, top).max()


def test_mcfs_selection_at_small_k_is_not_a_prefix_of_the_large_one():
    X, informative, _ = three_clusters(seed=3)
    selections = mcfs_selections(X, 2, [5, 10, 40])
    assert len(set(selections[5][:5]) & set(informative.tolist())) == 5
    assert hits(selections[10], informative) >= 8
    assert [k for k in (5, 10) if not np.array_equal(selections[k][:k], selections[40][:k])]


def test_ndfs_push_through_matches_direct_inverse():
    rng = np.random.default_rng(9)
    n, d, c, beta = 12, 8, 3, 0.7
    X = rng.normal(size=(n, d))
    F = rng.uniform(size=(n, c))
    w_scale = rng.uniform(0.5, 2.0, size=d)
    factor = _ndfs_factor(X, w_scale, beta)
    A = X.T @ X + beta * np.diag(1.0 / w_scale)
    np.testing.assert_allclose(_ndfs_w(X, F, w_scale, factor), linalg.solve(A, X.T @ F), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(
        _ndfs_residual_op(factor, beta), np.eye(n) - X @ linalg.solve(A, X.T), rtol=1e-8, atol=1e-10
    )


def test_ndfs_wide_data_without_d_by_d():
    rng = np.random.default_rng(10)
    n, d = 30, 3000
    X = standardize(rng.normal(size=(n, d)))
    tracemalloc.start()
    try:
        scores = ndfs_scores(X, n_clusters=3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert scores.shape == (d,) and np.all(np.isfinite(scores)) and np.all(scores >= 0)
    assert peak < d * d * 8 / 4  # a (d, d) float64 would be 72 MB
    ranking = ndfs_order(X, n_clusters=3, max_iter=5)
    assert np.array_equal(np.sort(ranking), np.arange(d))


def test_random_orders():
    R = random_orders(20, 5, seed=3)
    assert R.shape == (5, 20) and R.dtype == np.int64
    for row in R:
        assert np.array_equal(np.sort(row), np.arange(20))
    assert np.array_equal(R, random_orders(20, 5, seed=3))
    assert np.array_equal(R[:2], random_orders(20, 2, seed=3))
    assert not np.array_equal(R, random_orders(20, 5, seed=4))
    assert len({tuple(row) for row in R}) == 5


GOOD = np.random.default_rng(11).normal(size=(10, 4))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: spec_order(np.ones(5)), "X must be 2-D"),
        (lambda: laplacian_score_order(np.ones((2, 3, 4))), "X must be 2-D"),
        (lambda: spec_scores(np.where(np.eye(10, 4) > 0, np.nan, GOOD)), "X must be finite"),
        (lambda: mcfs_order(np.where(np.eye(10, 4) > 0, np.inf, GOOD), 2), "X must be finite"),
        (lambda: spec_scores(GOOD, gamma=0.0), "gamma"),
        (lambda: laplacian_score_order(GOOD, n_neighbors=0), "n_neighbors"),
        (lambda: laplacian_score_order(GOOD, n_neighbors=10), "n_neighbors"),
        (lambda: mcfs_order(GOOD, 2, n_neighbors=10), "n_neighbors"),
        (lambda: ndfs_order(GOOD, 2, n_neighbors=0), "n_neighbors"),
        (lambda: mcfs_order(GOOD, 1), "n_clusters"),
        (lambda: mcfs_order(GOOD, 10), "n_clusters"),
        (lambda: ndfs_order(GOOD, 1), "n_clusters"),
        (lambda: ndfs_order(GOOD, 11), "n_clusters"),
        (lambda: mcfs_order(GOOD, 2, n_nonzero=0), "n_nonzero"),
        (lambda: mcfs_order(GOOD, 2, n_nonzero=5), "n_nonzero"),
        (lambda: mcfs_selections(GOOD, 2, []), "at least one"),
        (lambda: mcfs_selections(GOOD, 2, [2, 5]), r"every k in k_values must be an integer in 1\.\.4, got 5"),
        (lambda: mcfs_selections(GOOD, 2, [2.5]), "every k in k_values"),
        (lambda: mcfs_selections(GOOD, 10, [2]), "n_clusters"),
        (lambda: ndfs_order(GOOD, 2, alpha=0.0), "alpha"),
        (lambda: ndfs_order(GOOD, 2, beta=-1.0), "beta"),
        (lambda: ndfs_order(GOOD, 2, max_iter=0), "max_iter"),
        (lambda: random_orders(0, 3), "d must be"),
        (lambda: random_orders(5, 0), "n_seeds"),
    ],
)
def test_validation_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_validation_message_names_value():
    with pytest.raises(ValueError, match=r"n_clusters .* got 10"):
        mcfs_order(GOOD, 10)


def test_a_method_that_will_not_fit_is_refused_before_it_runs_naming_its_size():
    from iclfs.baselines import check_memory
    from iclfs.method._runtime import ResourceLimitError

    check_memory("ndfs", 200, 20_000, 50, available=2**30)  # n x n: small at 200 samples
    with pytest.raises(ResourceLimitError, match=r"NDFS needs about \d+\.\d GiB for 50,000 samples x 100 features"):
        check_memory("ndfs", 50_000, 100, 50, available=8 * 2**30)
    # MCFS's LARS holds d x d Gram matrices: about 10 GB at 20,000 features (measured by benchmarks.speed)
    with pytest.raises(ResourceLimitError, match=r"MCFS needs about 9\.\d GiB .* d x d in its LARS"):
        check_memory("mcfs", 200, 20_000, 50, available=4 * 2**30)
