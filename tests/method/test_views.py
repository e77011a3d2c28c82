"""method.md §2: the five views of the inverted map."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclfs.method._config import ViewConfig
from iclfs.method._views import RANDOM_KEEP, apply_masks, generate_masks, generate_views


def spec_keep(n, ratio):
    return max(1, round(ratio * n))


def spec_pair(n):
    keep = round(0.5 * n)
    keep = max(1, min(n, keep))
    return keep, round(0.1 * keep)


def make_A(d, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    # strictly non-zero, distinct values so "kept" <=> "value equals A"
    return torch.rand((d, n), generator=g) + 1.0 + torch.arange(d * n, dtype=torch.float32).reshape(d, n) * 1e-3


def draw(d, n, seed=123):
    g = torch.Generator().manual_seed(seed)
    return generate_masks(d, n, ViewConfig(), g, "cpu")


def row_counts(mask):
    return [int(sum(bool(v) for v in row)) for row in mask.tolist()]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 10, 12, 13, 20, 33])
def test_light_heavy_keep_counts_exact(n):
    d = 17
    m = draw(d, n)
    assert m.light.shape == (d, n) and m.heavy.shape == (d, n)
    assert row_counts(m.light) == [spec_keep(n, 0.9)] * d
    assert row_counts(m.heavy) == [spec_keep(n, 0.6)] * d


def check_pair(pair_a, pair_b, n):
    keep, overlap = spec_pair(n)
    a_rows, b_rows = pair_a.tolist(), pair_b.tolist()
    for ra, rb in zip(a_rows, b_rows):
        ka = sum(ra)
        kb = sum(rb)
        shared = sum(1 for x, y in zip(ra, rb) if x and y)
        union = sum(1 for x, y in zip(ra, rb) if x or y)
        assert ka == keep and kb == keep
        if 2 * keep - overlap <= n:
            assert shared == overlap
            assert union == 2 * keep - overlap
        else:
            # ran out of unused positions: m4 takes every position m3 left free
            assert union == n
            assert shared == 2 * keep - n


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 20, 21, 31, 40])
def test_complementary_pair(n):
    d = 25
    m = draw(d, n, seed=n)
    assert m.pair_a.shape == (d, n) and m.pair_b.shape == (d, n)
    check_pair(m.pair_a, m.pair_b, n)


def test_pair_runs_out_for_n7():
    keep, overlap = spec_pair(7)
    assert (keep, overlap) == (4, 0)
    assert 2 * keep - overlap > 7
    m = draw(30, 7)
    assert row_counts(m.pair_a) == [4] * 30
    assert row_counts(m.pair_b) == [4] * 30


def test_pair_overlap_nonzero_case():
    # n = 40: keep 20, overlap 2
    m = draw(30, 40)
    for ra, rb in zip(m.pair_a.tolist(), m.pair_b.tolist()):
        assert sum(ra) == 20 and sum(rb) == 20
        assert sum(1 for x, y in zip(ra, rb) if x and y) == 2


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 60), d=st.integers(1, 12), seed=st.integers(0, 2**31 - 1))
def test_keep_counts_property(n, d, seed):
    m = draw(d, n, seed)
    assert row_counts(m.light) == [spec_keep(n, 0.9)] * d
    assert row_counts(m.heavy) == [spec_keep(n, 0.6)] * d
    check_pair(m.pair_a, m.pair_b, n)
    for row in m.negative_order.tolist():
        assert sorted(row) == list(range(n))


def test_views_values_shapes_and_negative_permutation():
    d, n = 11, 9
    A = make_A(d, n)
    g = torch.Generator().manual_seed(5)
    masks = generate_masks(d, n, ViewConfig(), g, "cpu")
    views = apply_masks(A, masks)
    A_l = A.tolist()
    for name in ("light", "heavy", "pair_a", "pair_b"):
        V = getattr(views, name)
        M = getattr(masks, name)
        assert V.shape == (d, n) and V.dtype == A.dtype
        for j in range(d):
            for i in range(n):
                expected = A_l[j][i] if bool(M[j, i]) else 0.0
                assert float(V[j, i]) == expected
    neg = views.negative
    assert neg.shape == (d, n)
    for j in range(d):
        assert sorted(neg[j].tolist()) == sorted(A_l[j])
        for i in range(n):
            assert float(neg[j, i]) == A_l[j][int(masks.negative_order[j, i])]


def test_generate_views_from_generator_state():
    d, n = 20, 10
    A = make_A(d, n)
    v1 = generate_views(A, ViewConfig(), torch.Generator().manual_seed(7))
    v2 = generate_views(A, ViewConfig(), torch.Generator().manual_seed(7))
    v3 = generate_views(A, ViewConfig(), torch.Generator().manual_seed(8))
    for key in v1.as_dict():
        assert torch.equal(v1.as_dict()[key], v2.as_dict()[key])
    assert any(not torch.equal(v1.as_dict()[k], v3.as_dict()[k]) for k in v1.as_dict())
    # masked views zero exactly the dropped positions; kept values equal A
    A_l = A.tolist()
    for key in ("light", "heavy", "pair_a", "pair_b"):
        V = v1.as_dict()[key].tolist()
        kept = [[V[j][i] == A_l[j][i] for i in range(n)] for j in range(d)]
        dropped = [[V[j][i] == 0.0 for i in range(n)] for j in range(d)]
        for j in range(d):
            for i in range(n):
                assert kept[j][i] != dropped[j][i]
        ratio = {"light": 0.9, "heavy": 0.6}.get(key)
        expected = spec_keep(n, ratio) if ratio else spec_pair(n)[0]
        assert [sum(r) for r in kept] == [expected] * d
    for j in range(d):
        assert sorted(v1.negative[j].tolist()) == sorted(A_l[j])


def test_consecutive_draws_differ():
    d, n = 20, 10
    A = make_A(d, n)
    g = torch.Generator().manual_seed(1)
    a = generate_views(A, ViewConfig(), g)
    b = generate_views(A, ViewConfig(), g)
    assert not torch.equal(a.light, b.light)


def test_rows_get_different_masks():
    d, n = 40, 20
    m = draw(d, n, seed=3)
    for name in ("light", "heavy", "pair_a", "pair_b", "negative_order"):
        rows = {tuple(r) for r in getattr(m, name).tolist()}
        assert len(rows) > d // 2, name


def test_negative_is_not_identity_everywhere():
    d, n = 30, 15
    m = draw(d, n, seed=9)
    identity = list(range(n))
    assert sum(row == identity for row in m.negative_order.tolist()) == 0


def test_view_config_validation():
    with pytest.raises(ValueError):
        ViewConfig(light_keep=0.0)
    with pytest.raises(ValueError):
        ViewConfig(heavy_keep=1.5)
    with pytest.raises(ValueError):
        ViewConfig(pair_overlap=-0.1)


def test_random_positive_view_replaces_the_four_structured_ones():
    A = torch.randn(30, 20, generator=torch.Generator().manual_seed(0))
    config = ViewConfig(positives="random")
    views = generate_views(A, config, torch.Generator().manual_seed(1))
    assert len(views.positives) == 1 and views.light is None and views.pair_b is None
    kept = (views.random != 0).sum(dim=1)
    assert RANDOM_KEEP == 0.5 and bool((kept == 10).all())  # round(0.5 * 20), no zero entries in A
    masked = views.random != 0
    torch.testing.assert_close(views.random[masked], A[masked])
    assert set(views.as_dict()) == {"negative", "random"}
    # Rows get different masks, as the structured views do.
    assert len({tuple(row.tolist()) for row in masked}) > 1


def test_structured_views_have_four_positives():
    A = torch.randn(6, 10, generator=torch.Generator().manual_seed(0))
    views = generate_views(A, ViewConfig(), torch.Generator().manual_seed(1))
    assert len(views.positives) == 4 and views.random is None
    assert "random" not in views.as_dict()


def test_positives_must_be_known():
    with pytest.raises(ValueError, match="views.positives"):
        ViewConfig(positives="shuffled")
    with pytest.raises(TypeError, match="random_keep"):  # a fixed value now (RANDOM_KEEP), not a setting
        ViewConfig(random_keep=0.5)
