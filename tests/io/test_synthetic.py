"""The synthetic default dataset."""

from __future__ import annotations

import numpy as np
import pytest

from iclfs.io._synthetic import make_synthetic

SMALL = dict(n_samples=60, n_classes=3, n_informative=8, n_redundant=6, n_noise=40)


def f_statistic(x, y):
    """One-way ANOVA F of column x over the classes y, by loops."""
    classes = sorted(set(y.tolist()))
    n, c = len(x), len(classes)
    grand = sum(x) / n
    between = within = 0.0
    for k in classes:
        members = [x[i] for i in range(n) if y[i] == k]
        m = sum(members) / len(members)
        between += len(members) * (m - grand) ** 2
        within += sum((v - m) ** 2 for v in members)
    return (between / (c - 1)) / (within / (n - c))


def test_deterministic_for_seed():
    a = make_synthetic(**SMALL, seed=3)
    b = make_synthetic(**SMALL, seed=3)
    c = make_synthetic(**SMALL, seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert a.informative_features == b.informative_features
    assert a.metadata == b.metadata
    assert not np.array_equal(a.X, c.X)


def test_shapes_and_fields():
    t = make_synthetic(**SMALL, seed=0)
    d = 8 + 6 + 40
    assert t.X.shape == (60, d)
    assert t.X.dtype == np.float32
    assert np.isfinite(t.X).all()
    assert t.y.shape == (60,)
    assert sorted(set(t.y.tolist())) == [0, 1, 2]
    assert [int((t.y == k).sum()) for k in range(3)] == [20, 20, 20]
    assert len(t.feature_names) == d and len(set(t.feature_names)) == d
    assert t.feature_names[0] == "feature_00" and t.feature_names[-1] == f"feature_{d - 1}"
    inf = t.informative_features
    assert len(inf) == 8 and len(set(inf)) == 8
    assert inf == sorted(inf)
    assert all(0 <= j < d for j in inf)
    red = t.metadata["redundant_features"]
    assert len(red) == 6 and not set(red) & set(inf)
    assert all(0 <= j < d for j in red)
    assert set(t.metadata["redundant_copies_of"]) <= set(inf)
    assert "seed=0" in t.source


def test_informative_columns_separate_classes():
    t = make_synthetic(**SMALL, seed=1)
    d = t.X.shape[1]
    F = [f_statistic(t.X[:, j].astype(float).tolist(), t.y) for j in range(d)]
    inf = set(t.informative_features)
    red = set(t.metadata["redundant_features"])
    noise = [j for j in range(d) if j not in inf and j not in red]
    assert len(noise) == 40
    mean_inf = np.mean([F[j] for j in inf])
    mean_noise = np.mean([F[j] for j in noise])
    assert mean_inf > 5 * mean_noise
    assert np.median([F[j] for j in inf]) > np.max([F[j] for j in noise]) * 0.5


def test_redundant_columns_copy_their_source():
    t = make_synthetic(**SMALL, seed=2)
    for r, s in zip(t.metadata["redundant_features"], t.metadata["redundant_copies_of"]):
        a, b = t.X[:, r].astype(float), t.X[:, s].astype(float)
        corr = np.corrcoef(a, b)[0, 1]
        assert corr > 0.8


def test_columns_are_shuffled():
    t = make_synthetic(**SMALL, seed=0)
    assert t.informative_features != list(range(8))


def test_default_shape():
    t = make_synthetic()
    assert t.X.shape == (200, 800)
    assert len(t.informative_features) == 30


def test_bad_arguments():
    with pytest.raises(ValueError):
        make_synthetic(n_samples=2, n_classes=3)
    with pytest.raises(ValueError):
        make_synthetic(n_informative=0, n_redundant=2)
