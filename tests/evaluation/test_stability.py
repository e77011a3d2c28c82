"""Refresh stability between two ranked selections."""

from __future__ import annotations

import pytest
from scipy.stats import spearmanr

from iclfs.evaluation.stability import compare_selections


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
