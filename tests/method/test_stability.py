"""Refresh stability between two ranked selections."""

from __future__ import annotations

import pytest
from scipy.stats import spearmanr

import numpy as np

from iclfs.method._stability import compare_selections, jaccard, mean_pairwise_jaccard, nogueira, nogueira_of


def test_identical_selections():
    result = compare_selections(list("abcd"), list("abcd"))
    assert result == {"jaccard": 1.0, "overlap": 4, "rank_correlation": 1.0, "entered": [], "left": []}


def test_swaps_entries_and_exits():
    result = compare_selections(["a", "b", "c", "d"], ["d", "x", "b", "a"])
    assert result["overlap"] == 3 and result["jaccard"] == pytest.approx(3 / 5)
    assert result["entered"] == ["x"] and result["left"] == ["c"]
    # shared a, b, d: previous ranks 0, 1, 3; current ranks 3, 2, 0
    expected = spearmanr([0, 1, 3], [3, 2, 0]).statistic
    assert result["rank_correlation"] == pytest.approx(expected) == pytest.approx(-1.0)


def test_too_few_shared_features_has_no_rank_correlation():
    assert compare_selections(["a", "b"], ["a", "c"])["rank_correlation"] is None
    assert compare_selections(["a"], ["b"])["jaccard"] == 0.0


# -- Nogueira, Sechidis and Brown's estimator -------------------------------------


def test_identical_selections_are_perfectly_stable():
    result = nogueira_of([["a", "b"], ["b", "a"], ["a", "b"]], list("abcdef"))
    assert result.phi == pytest.approx(1.0) and result.variance == pytest.approx(0.0)
    assert result.lower == pytest.approx(1.0) and result.upper == pytest.approx(1.0) and result.selections == 3


def test_phi_by_hand_for_two_selections():
    # d = 4, M = 2: {0, 1} and {0, 2}. p = (1, 1/2, 1/2, 0); k = 2, k/d = 1/2.
    # mean_f p(1 - p) = (0 + 1/4 + 1/4 + 0) / 4 = 1/8; times M / (M - 1) = 2: 1/4;
    # divided by (1/2)(1/2) = 1/4: 1, so Phi = 1 - 1 = 0 (as much overlap as chance gives).
    assert nogueira(np.array([[1, 1, 0, 0], [1, 0, 1, 0]])).phi == pytest.approx(0.0)
    # {0, 1} and {2, 3}: nothing shared, below chance: p = 1/2 everywhere, 2 * (1/4) / (1/4) = 2, Phi = -1
    assert nogueira(np.array([[1, 1, 0, 0], [0, 0, 1, 1]])).phi == pytest.approx(-1.0)


@pytest.mark.parametrize("Z", [[[1, 1, 0, 0], [1, 0, 1, 0]], [[1, 1, 0, 0], [0, 0, 1, 1]],
                               [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]]])
def test_two_selections_have_no_interval(Z):
    # With M = 2, p is 1 on the shared features and 1/2 on the others, so Z_i @ p = (k_i + shared) / 2 and each
    # selection's term of Theorem 9 differs by its size alone: the variance would be 0 for equal sizes.
    result = nogueira(np.array(Z))
    assert np.isfinite(result.phi)
    assert np.isnan(result.variance) and np.isnan(result.lower) and np.isnan(result.upper)
    assert result.as_dict() == {"phi": pytest.approx(result.phi), "lower": None, "upper": None, "level": 0.95,
                                "selections": 2}


def test_phi_and_its_variance_by_hand_for_three_selections():
    # d = 5, M = 3: {0, 1}, {0, 1}, {0, 2}; p = (1, 2/3, 1/3, 0, 0), k = 2, k/d = 0.4.
    Z = np.array([[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0]])
    p = np.array([1, 2 / 3, 1 / 3, 0, 0])
    phi = 1 - (3 / 2) * np.mean(p * (1 - p)) / (0.4 * 0.6)
    # Theorem 9, each selection's term by hand
    terms = []
    for row in Z:
        agreement = 1 - 2 / 5 - 0.4 + (2 / 5) * float(row @ p)
        expected = (1 - phi) * (0.4 * 2 / 5 + 0.6 * (1 - 2 / 5))
        terms.append((agreement - expected) / (2 * 0.4 * 0.6))
    variance = 4 / 9 * sum((t - np.mean(terms)) ** 2 for t in terms)
    result = nogueira(Z)
    assert result.phi == pytest.approx(phi) and result.variance == pytest.approx(variance)
    half = 1.959963984540054 * np.sqrt(variance)
    assert (result.lower, result.upper) == (pytest.approx(phi - half), pytest.approx(phi + half))


def test_random_selections_are_about_zero_and_the_interval_holds_it():
    rng = np.random.default_rng(0)
    d, k, M = 200, 20, 50
    Z = np.zeros((M, d), dtype=bool)
    for row in Z:
        row[rng.choice(d, size=k, replace=False)] = True
    result = nogueira(Z)
    assert abs(result.phi) < 0.05 and result.lower < 0 < result.upper


def test_the_estimate_refuses_what_it_cannot_measure():
    with pytest.raises(ValueError, match="M >= 2"):
        nogueira(np.ones((1, 4)))
    with pytest.raises(ValueError, match="not among the 3 features, e.g. 'z'"):
        nogueira_of([["a"], ["z"]], ["a", "b", "c"])
    assert np.isnan(nogueira(np.zeros((3, 4))).phi)  # nothing selected: no spread to compare with


def test_jaccard_of_names_and_of_empty_selections():
    assert jaccard(["1", "01"], ["01", "1.0"]) == pytest.approx(1 / 3) and jaccard([], []) == 1.0
    assert mean_pairwise_jaccard([[1, 2], [2, 3], [1, 2]]) == pytest.approx((1 / 3 + 1 + 1 / 3) / 3)
    assert mean_pairwise_jaccard([[1]]) is None
