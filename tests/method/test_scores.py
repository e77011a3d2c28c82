"""method.md §5: feature scores and the order they give."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclfs.method import _config as config
from iclfs.method._scores import SCORE_NAMES, feature_order, feature_scores, rank_positions


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
    got = feature_scores(h.astype(np.float32), z.astype(np.float32))
    assert set(got) == set(SCORE_NAMES)
    hn, zn = naive_norms(h), naive_norms(z)
    ht, zt = naive_minmax(hn), naive_minmax(zn)
    expected = {
        "z_norm": zn,
        "h_norm": hn,
        "weighted_sum": [0.35 * a + 0.65 * b for a, b in zip(ht, zt)],
        "harmonic": [2 * a * b / (a + b + 1e-12) for a, b in zip(ht, zt)],
    }
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


def test_feature_order_ties_by_index():
    scores = np.array([0.5, 2.0, 0.5, 2.0, -1.0, 0.5])
    assert feature_order(scores).tolist() == [1, 3, 0, 2, 5, 4]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([-2.0, 0.0, 0.5, 1.0, 3.25, 1e9]), min_size=1, max_size=40))
def test_feature_order_property(values):
    assert feature_order(np.array(values)).tolist() == naive_rank(values)


def test_feature_order_random_continuous():
    rng = np.random.default_rng(0)
    s = rng.normal(size=200)
    assert feature_order(s).tolist() == naive_rank(s.tolist())


def test_rank_nan_last():
    assert feature_order(np.array([np.nan, 1.0, 2.0])).tolist() == [2, 1, 0]


def test_score_names_are_the_configs():
    assert SCORE_NAMES is config.SCORE_NAMES


def test_rank_positions_inverts_an_order():
    order = np.array([2, 0, 3, 1])
    # feature 2 is first, feature 0 second, ...: 1 = best
    assert rank_positions(order).tolist() == [2, 4, 1, 3]


@settings(max_examples=30, deadline=None)
@given(st.permutations(list(range(12))))
def test_rank_positions_property(order):
    positions = rank_positions(np.array(order))
    assert sorted(positions.tolist()) == list(range(1, len(order) + 1))
    for rank, feature in enumerate(order, start=1):
        assert positions[feature] == rank
