"""method.md §7: the Laplacian gate and LGRC, against a naive list-based version."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclfs.method.lgrc import laplacian_gate, lgrc_select, select_features


def naive_quantile(values, q):
    """numpy's default ('linear') quantile, by hand."""
    xs = sorted(values)
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def naive_gate(scores, q=0.75):
    finite = [s for s in scores if math.isfinite(s)]
    return naive_quantile(finite, q) if finite else math.inf


def naive_lgrc(ranking, scores, k, alpha=1.5, q=0.75):
    ranking = [int(f) for f in ranking]
    scores = [float(s) for s in scores]
    position = {f: i for i, f in enumerate(ranking)}
    gamma = naive_gate(scores, q)
    d = len(ranking)
    p = min(d, round(alpha * k))
    pool = ranking[:p]
    reserve = ranking[p:]
    while reserve:
        # largest LS; among equals, the lowest-ranked member (documented tie rule)
        worst = pool[0]
        for f in pool[1:]:
            if scores[f] > scores[worst] or (scores[f] == scores[worst] and position[f] > position[worst]):
                worst = f
        if scores[worst] <= gamma:
            break
        pool.remove(worst)
        pool.append(reserve.pop(0))
    pool.sort(key=lambda f: position[f])
    return pool[:k]


def random_case(seed, d=None, ties=False):
    rng = np.random.default_rng(seed)
    d = d or int(rng.integers(1, 60))
    ranking = rng.permutation(d)
    if ties:
        scores = rng.choice([0.1, 0.4, 0.5, 0.9, 1.3], size=d).astype(float)
    else:
        scores = rng.uniform(0, 2, size=d)
    scores[rng.random(d) < 0.1] = np.inf
    k = int(rng.integers(1, d + 1))
    return ranking, scores, k


# ---------------------------------------------------------------------- gate


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("q", [0.0, 0.3, 0.75, 1.0])
def test_gate_is_linear_quantile_of_finite(seed, q):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=int(rng.integers(1, 30)))
    s_with_inf = np.concatenate([s, [np.inf, np.inf]])
    assert laplacian_gate(s_with_inf, q) == pytest.approx(naive_quantile(s.tolist(), q), rel=1e-12)


def test_gate_examples():
    assert laplacian_gate(np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(3.25)
    assert laplacian_gate(np.array([5.0])) == 5.0
    assert laplacian_gate(np.array([np.inf, np.inf])) == math.inf
    assert laplacian_gate(np.array([])) == math.inf
    with pytest.raises(ValueError):
        laplacian_gate(np.array([1.0]), quantile=1.5)


# ---------------------------------------------------------------------- lgrc


@pytest.mark.parametrize("seed", range(150))
def test_lgrc_matches_naive_random(seed):
    ranking, scores, k = random_case(seed, ties=seed % 3 == 0)
    got = lgrc_select(ranking, scores, k)
    assert got.tolist() == naive_lgrc(ranking, scores, k)
    assert len(got) == k
    assert len(set(got.tolist())) == k


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("alpha,q", [(1.0, 0.75), (2.0, 0.5), (3.7, 0.9)])
def test_lgrc_matches_naive_other_params(seed, alpha, q):
    ranking, scores, k = random_case(1000 + seed)
    got = lgrc_select(ranking, scores, k, alpha=alpha, quantile=q)
    assert got.tolist() == naive_lgrc(ranking, scores, k, alpha, q)


@settings(max_examples=30, deadline=None)
@given(
    data=st.data(),
    d=st.integers(1, 40),
)
def test_lgrc_property_vs_naive(data, d):
    ranking = data.draw(st.permutations(list(range(d))))
    scores = data.draw(
        st.lists(st.sampled_from([0.0, 0.2, 0.5, 0.7, 1.0, 1.5, math.inf]), min_size=d, max_size=d)
    )
    k = data.draw(st.integers(1, d))
    got = lgrc_select(np.array(ranking), np.array(scores), k)
    assert got.tolist() == naive_lgrc(ranking, scores, k)


@pytest.mark.parametrize("seed", range(100))
def test_lgrc_oracle(seed):
    """At least p features with LS <= gamma -> first k of the ranking with LS <= gamma."""
    ranking, scores, k = random_case(5000 + seed)
    d = len(ranking)
    gamma = naive_gate(scores.tolist())
    p = min(d, round(1.5 * k))
    good = [int(f) for f in ranking if scores[f] <= gamma]
    got = lgrc_select(ranking, scores, k).tolist()
    if len(good) >= p:
        assert got == good[:k]
    # always: a subset of the ranking, in ranking order
    pos = {int(f): i for i, f in enumerate(ranking)}
    assert [pos[f] for f in got] == sorted(pos[f] for f in got)


def test_lgrc_oracle_constructed():
    # ranking 0..9; features 1 and 3 are bad (LS above the gate)
    ranking = np.arange(10)
    scores = np.array([0.1, 5.0, 0.2, 6.0, 0.3, 0.1, 0.2, 0.3, 0.1, 0.2])
    assert lgrc_select(ranking, scores, 4).tolist() == [0, 2, 4, 5]


def test_lgrc_all_good_is_plain_top_k():
    ranking = np.array([4, 2, 0, 1, 3])
    scores = np.ones(5)
    assert lgrc_select(ranking, scores, 3).tolist() == [4, 2, 0]


def test_lgrc_k_equals_d_keeps_everything():
    ranking = np.array([3, 0, 2, 1])
    scores = np.array([0.1, 9.0, 0.3, np.inf])
    assert lgrc_select(ranking, scores, 4).tolist() == [3, 0, 2, 1]


def test_lgrc_all_infinite_scores_is_top_k():
    ranking = np.array([5, 4, 3, 2, 1, 0])
    assert lgrc_select(ranking, np.full(6, np.inf), 2).tolist() == [5, 4]


@pytest.mark.parametrize("k", [0, -1, 6])
def test_lgrc_bad_k(k):
    with pytest.raises(ValueError):
        lgrc_select(np.arange(5), np.ones(5), k)


def test_lgrc_bad_alpha():
    with pytest.raises(ValueError):
        lgrc_select(np.arange(5), np.ones(5), 2, alpha=0.9)


def test_select_features_is_lgrc_or_without_it_the_first_k():
    rng = np.random.default_rng(0)
    ranking = rng.permutation(40)
    ls = rng.random(40)
    np.testing.assert_array_equal(select_features(ranking, ls, 10, alpha=2.0, quantile=0.5),
                                  lgrc_select(ranking, ls, 10, alpha=2.0, quantile=0.5))
    np.testing.assert_array_equal(select_features(ranking, ls, 10, use_lgrc=False), ranking[:10])
    assert not np.array_equal(select_features(ranking, ls, 10, alpha=2.0, quantile=0.5), ranking[:10])
