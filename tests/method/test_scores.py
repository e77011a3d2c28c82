"""method.md §5: feature scores and the ranking."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclfs.method import config
from iclfs.method.scores import (
    SCORE_NAMES,
    correlated_features,
    feature_scores,
    rank_features,
    rank_positions,
    rank_score,
    smooth_over_correlated,
)


def naive_norms(M):
    return [math.sqrt(sum(v * v for v in row)) for row in M.tolist()]


def naive_minmax(v):
    lo, hi = min(v), max(v)
    return [0.0 if hi == lo else (x - lo) / (hi - lo) for x in v]


@pytest.mark.parametrize("seed", range(4))
def test_feature_scores_match_naive(seed):
    rng = np.random.default_rng(seed)
    d = 15
    h = rng.normal(size=(d, 9)) * rng.lognormal(size=(d, 1))
    z = rng.normal(size=(d, 4)) * rng.lognormal(size=(d, 1))
    loss = rng.normal(size=d)
    got = feature_scores(h.astype(np.float32), z.astype(np.float32), loss)
    assert set(got) == set(SCORE_NAMES)
    hn, zn = naive_norms(h), naive_norms(z)
    ht, zt = naive_minmax(hn), naive_minmax(zn)
    expected = {
        "z_norm": zn,
        "h_norm": hn,
        "weighted_sum": [0.35 * a + 0.65 * b for a, b in zip(ht, zt)],
        "harmonic": [2 * a * b / (a + b + 1e-12) for a, b in zip(ht, zt)],
        "contrastive": [-v for v in loss.tolist()],
    }
    assert set(feature_scores(h, z)) == set(SCORE_NAMES) - {"contrastive"}
    for name in SCORE_NAMES:
        assert got[name].shape == (d,)
        assert got[name].dtype == np.float64
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert got["weighted_sum"].min() >= 0 and got["weighted_sum"].max() <= 1


def test_scores_constant_norms_give_zero_scaled_scores():
    h = np.ones((4, 3))
    z = np.ones((4, 2)) * 2
    got = feature_scores(h, z)
    np.testing.assert_allclose(got["z_norm"], [math.sqrt(8)] * 4)
    assert np.all(got["weighted_sum"] == 0) and np.all(got["harmonic"] == 0)


def test_harmonic_zero_when_either_scaled_is_zero():
    h = np.array([[1.0], [2.0], [3.0]])
    z = np.array([[3.0], [2.0], [1.0]])
    got = feature_scores(h, z)
    # h~ = [0, .5, 1], z~ = [1, .5, 0]
    np.testing.assert_allclose(got["harmonic"], [0.0, 2 * 0.25 / (1.0 + 1e-12), 0.0])


def naive_rank(scores):
    idx = list(range(len(scores)))
    # selection sort: highest score first, ties -> smaller index
    out = []
    while idx:
        best = idx[0]
        for j in idx[1:]:
            if scores[j] > scores[best]:
                best = j
        out.append(best)
        idx.remove(best)
    return out


def test_rank_features_ties_by_index():
    scores = np.array([0.5, 2.0, 0.5, 2.0, -1.0, 0.5])
    assert rank_features(scores).tolist() == [1, 3, 0, 2, 5, 4]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([-2.0, 0.0, 0.5, 1.0, 3.25, 1e9]), min_size=1, max_size=40))
def test_rank_features_property(values):
    assert rank_features(np.array(values)).tolist() == naive_rank(values)


def test_rank_features_random_continuous():
    rng = np.random.default_rng(0)
    s = rng.normal(size=200)
    assert rank_features(s).tolist() == naive_rank(s.tolist())


def test_rank_nan_last():
    assert rank_features(np.array([np.nan, 1.0, 2.0])).tolist() == [2, 1, 0]


def test_score_names_are_the_configs():
    assert SCORE_NAMES is config.SCORE_NAMES


def test_rank_positions_inverts_a_ranking():
    ranking = np.array([2, 0, 3, 1])
    # feature 2 is first, feature 0 second, ...: 1 = best
    assert rank_positions(ranking).tolist() == [2, 4, 1, 3]


@settings(max_examples=30, deadline=None)
@given(st.permutations(list(range(12))))
def test_rank_positions_property(ranking):
    positions = rank_positions(np.array(ranking))
    assert sorted(positions.tolist()) == list(range(1, len(ranking) + 1))
    for rank, feature in enumerate(ranking, start=1):
        assert positions[feature] == rank


# -- averaging over correlated features (a variant beyond the paper) --------


def naive_neighbors(X, m):
    """Feature j first, then the m others of largest |Pearson correlation|, ties by the smaller index."""
    d = X.shape[1]
    rows = []
    for j in range(d):
        def corr(i):
            a, b = X[:, j], X[:, i]
            na, nb = math.sqrt(sum(v * v for v in a)), math.sqrt(sum(v * v for v in b))
            return 0.0 if na == 0 or nb == 0 else abs(sum(u * v for u, v in zip(a, b, strict=True))) / (na * nb)
        others = sorted((i for i in range(d) if i != j), key=lambda i: (-round(corr(i), 12), i))
        rows.append([j, *others[:m]])
    return rows


def test_correlated_features_by_hand():
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(3, 30))
    # 1 and 2 near-copies of 0 (2 negated), 3 unrelated, 4 flat: |correlation| orders them
    X = np.column_stack([a, a + 0.1 * b, -a + 0.05 * c, c, np.zeros(30)])
    X -= X.mean(axis=0)
    neighbors = correlated_features(X, 2)
    assert neighbors[:, 0].tolist() == [0, 1, 2, 3, 4]  # every feature first in its own row
    assert neighbors[0].tolist() == [0, 2, 1]  # the negated copy is the nearer: the sign does not count
    assert neighbors[1].tolist() == [1, 0, 2]
    assert neighbors[4].tolist() == [4, 0, 1]  # a flat feature correlates with nothing: ties by index
    assert neighbors.tolist() == naive_neighbors(X, 2)


@pytest.mark.parametrize("block_rows", [1, 3, 64])
def test_correlated_features_do_not_depend_on_the_block_size(block_rows):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 9)) @ rng.normal(size=(9, 17))  # correlated columns
    X -= X.mean(axis=0)
    np.testing.assert_array_equal(correlated_features(X, 4, block_rows=block_rows), naive_neighbors(X, 4))


@pytest.mark.parametrize("m", [-1, 5])
def test_correlated_features_refuse_too_many_neighbors(m):
    with pytest.raises(ValueError, match=r"n_neighbors must be in \[0, 4\] for 5 features"):
        correlated_features(np.ones((3, 5)), m)


def test_zero_neighbors_leave_the_ranking_as_it_was():
    scores = np.array([0.3, 2.0, -1.0, 0.7])
    neighbors = correlated_features(np.random.default_rng(2).normal(size=(6, 4)), 0)
    assert rank_features(smooth_over_correlated(scores, neighbors)).tolist() == rank_features(scores).tolist()


def test_smoothing_averages_the_rank_scores_by_hand():
    scores = np.array([4.0, 1.0, 3.0, 2.0])  # ranks 1, 4, 2, 3: rank scores 1, 0, 2/3, 1/3
    neighbors = np.array([[0, 1], [1, 3], [2, 0], [3, 2]])
    np.testing.assert_allclose(rank_score(scores), [1, 0, 2 / 3, 1 / 3])
    np.testing.assert_allclose(smooth_over_correlated(scores, neighbors), [0.5, 1 / 6, 5 / 6, 0.5])


@pytest.mark.parametrize("m", [1, 3, 9])
def test_correlated_features_break_ties_by_the_smaller_index(m):
    rng = np.random.default_rng(3)
    base = rng.normal(size=(12, 4))
    # exact copies tie with their original; flat columns tie with everything at 0
    X = np.column_stack([base, base[:, [1, 1, 2]], np.zeros((12, 3))])
    X -= X.mean(axis=0)
    np.testing.assert_array_equal(correlated_features(X, m, block_rows=4), naive_neighbors(X, m))
