"""method.md §6: Laplacian score against a dense, loop-based reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclfs.method._laplacian import knn_affinity, laplacian_scores


def dense_reference(X, k=3):
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    rows = X.tolist()
    norms = [math.sqrt(sum(v * v for v in r)) for r in rows]
    dist = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            c = sum(a * b for a, b in zip(rows[i], rows[j])) / (norms[i] * norms[j])
            dist[i][j] = max(0.0, 1.0 - c)
    neighbours = []
    for i in range(n):
        others = sorted((dist[i][j], j) for j in range(n) if j != i)
        neighbours.append(others[:k])
    sigma = max(sum(dv for nb in neighbours for dv, _ in nb) / (n * k), 1e-12)
    W = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for dv, j in neighbours[i]:
            W[i][j] = math.exp(-dv / sigma)
    for i in range(n):
        for j in range(i + 1, n):
            m = max(W[i][j], W[j][i])
            W[i][j] = W[j][i] = m
        W[i][i] = 0.0
    D = [sum(W[i]) for i in range(n)]
    total_D = sum(D)
    scores = []
    for f in range(d):
        col = [rows[i][f] for i in range(n)]
        mu = sum(col[i] * D[i] for i in range(n)) / total_D
        ft = [v - mu for v in col]
        num = sum(ft[i] * D[i] * ft[i] for i in range(n)) - sum(
            ft[i] * W[i][j] * ft[j] for i in range(n) for j in range(n)
        )
        den = sum(ft[i] * D[i] * ft[i] for i in range(n))
        scores.append(math.inf if den <= 1e-12 else num / den)
    return np.array(scores), np.array(W)


def standardized(rng, n, d):
    X = rng.normal(size=(n, d))
    return (X - X.mean(0)) / X.std(0)


@pytest.mark.parametrize("seed,n,d", [(0, 12, 5), (1, 20, 8), (2, 9, 3), (3, 30, 6)])
def test_laplacian_scores_match_dense_reference(seed, n, d):
    rng = np.random.default_rng(seed)
    X = standardized(rng, n, d)
    expected, W_ref = dense_reference(X)
    got = laplacian_scores(X)
    assert got.shape == (d,) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    W = knn_affinity(X).toarray()
    np.testing.assert_allclose(W, W_ref, rtol=1e-9, atol=1e-12)
    assert np.all(np.diag(W) == 0) and np.array_equal(W, W.T)


def test_constant_feature_is_inf_and_others_match():
    rng = np.random.default_rng(4)
    X = standardized(rng, 15, 4)
    X = np.column_stack([X, np.zeros(15)])
    X[:, 1] = 0.0
    expected, _ = dense_reference(X)
    got = laplacian_scores(X)
    assert got[1] == np.inf and got[4] == np.inf
    finite = [0, 2, 3]
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-9)
    assert np.all(np.isfinite(got[finite]))
    assert np.all((got[finite] >= 0) & (got[finite] <= 2.0 + 1e-9))


def test_other_k_values():
    rng = np.random.default_rng(5)
    X = standardized(rng, 14, 5)
    for k in (1, 2, 5):
        expected, _ = dense_reference(X, k)
        np.testing.assert_allclose(laplacian_scores(X, n_neighbors=k), expected, rtol=1e-9)


def test_duplicate_samples_exclude_self():
    rng = np.random.default_rng(6)
    X = standardized(rng, 12, 5)
    X[7] = X[2]  # a duplicated sample: distance 0 to its twin
    expected, W_ref = dense_reference(X)
    np.testing.assert_allclose(knn_affinity(X).toarray(), W_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(laplacian_scores(X), expected, rtol=1e-7)


def test_smooth_feature_scores_lower_than_noise():
    rng = np.random.default_rng(7)
    groups = np.repeat([0, 1, 2], 10)
    centers = rng.normal(size=(3, 6)) * 4
    X = centers[groups] + rng.normal(size=(30, 6)) * 0.3
    X = np.column_stack([X, rng.normal(size=(30, 3))])
    X = (X - X.mean(0)) / X.std(0)
    s = laplacian_scores(X)
    assert np.all(np.isfinite(s))
    # cluster-carrying features are smoother on the sample graph than noise
    assert s[:6].max() < s[6:].min()
    # so is a feature equal to the cluster id
    feature = (groups - groups.mean()) / groups.std()
    s2 = laplacian_scores(np.column_stack([X, feature]))
    assert s2[-1] < s2[6:9].min()


def test_bad_k_raises():
    X = np.random.default_rng(0).normal(size=(4, 3))
    with pytest.raises(ValueError):
        knn_affinity(X, n_neighbors=4)
    with pytest.raises(ValueError):
        knn_affinity(X, n_neighbors=0)
