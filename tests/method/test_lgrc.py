"""method.md §7: the Laplacian gate and LGRC, against a naive list-based version."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclfs.method._config import SelectionConfig
from iclfs.method._lgrc import (
    ADMIT,
    HOLD,
    admitted_k,
    gate,
    held_k,
    held_selections,
    hold,
    laplacian_gate,
    lgrc_select,
    most_chosen,
    select_every_k,
    select_features,
)


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


# ---------------------------------------------------------------------- every k, held to the last lists


def test_select_every_k_is_lgrc_at_each_k_or_without_it_the_first_k():
    rng = np.random.default_rng(1)
    order, ls = rng.permutation(40), rng.random(40)
    chosen = select_every_k(order, ls, SelectionConfig(k=5, k_values=(5, 10)), [5, 10])
    assert {k: v.tolist() for k, v in chosen.items()} == {k: lgrc_select(order, ls, k).tolist() for k in (5, 10)}
    plain = select_every_k(order, ls, SelectionConfig(k=5, k_values=(5, 10), use_lgrc=False), [5, 10])
    assert {k: v.tolist() for k, v in plain.items()} == {5: order[:5].tolist(), 10: order[:10].tolist()}


def test_a_held_list_keeps_the_last_lists_features_while_they_stay_in_the_wider_selection():
    names = ["a", "b", "c", "d", "e", "f"]
    wider = np.array([4, 0, 5, 1, 2])  # e a f b c: this run's selection of 5
    # the last list was b, c, d: d left the table's wider selection, b and c stay; e (best of the rest) fills
    held = hold(["b", "c", "d"], wider, names, 3, admit=math.inf)
    assert held.tolist() == [4, 1, 2]  # e, b, c in the wider selection's order
    assert hold(None, wider, names, 3).tolist() == [4, 0, 5]  # no last list: the first k
    assert hold([], wider, names, 3).tolist() == [4, 0, 5]
    # a last list that all stays in: exactly it, whatever this run's first k
    assert sorted(hold(["c", "b", "f"], wider, names, 3, admit=math.inf).tolist()) == [1, 2, 5]
    # by default (ADMIT) the first ceil(3 / 2) = 2, e and a, enter; b, the best held, takes the last place
    assert hold(["b", "c", "d"], wider, names, 3).tolist() == [4, 0, 1]


def test_a_held_list_drops_features_no_longer_in_the_table_and_never_repeats_one():
    names = ["a", "b", "c", "d"]
    held = hold(["gone", "b", "also gone"], np.array([0, 2, 1, 3]), names, 3)
    assert held.tolist() == [0, 2, 1] and len(set(held.tolist())) == 3
    with pytest.raises(ValueError, match="k must be in 1..2"):
        hold(["a"], np.array([0, 1]), names, 3)


def test_the_wider_selection_is_hold_times_k_and_never_beyond_the_table():
    assert held_k(3.0, 50, 1000) == 150
    assert held_k(1.5, 5, 1000) == 8  # round(7.5) to even
    assert held_k(1.0, 50, 1000) == 50
    assert held_k(3.0, 50, 120) == 120
    assert held_k(HOLD, 50, 1000) == 150  # the refresh study's band


def test_held_selections_without_a_hold_or_a_last_list_are_the_plain_selections():
    rng = np.random.default_rng(0)
    order, laplacian = rng.permutation(40), rng.random(40)
    names = [f"f{j}" for j in range(40)]
    plain = select_every_k(order, laplacian, SelectionConfig(), [5, 10])
    for factor, previous in ((1.0, {5: names[:5]}), (3.0, None), (3.0, {})):
        held = held_selections(order, laplacian, SelectionConfig(), [5, 10], previous, names, hold_factor=factor)
        assert {k: v.tolist() for k, v in held.items()} == {k: v.tolist() for k, v in plain.items()}


def test_held_selections_keep_a_last_list_that_is_still_near_the_top():
    names = [f"f{j}" for j in range(40)]
    order = np.arange(40)
    laplacian = np.zeros(40)  # no feature above the gate: LGRC keeps the order
    config = SelectionConfig()
    previous = {5: ["f0", "f1", "f2", "f12", "f30"]}  # f12 within 3 x 5 = 15, f30 not
    held = held_selections(order, laplacian, config, [5], previous, names, hold_factor=3.0, admit=math.inf)
    assert held[5].tolist() == [0, 1, 2, 3, 12]
    assert held_selections(order, laplacian, config, [5], previous, names, hold_factor=2.0,
                           admit=math.inf)[5].tolist() == [0, 1, 2, 3, 4]
    # the defaults (HOLD 3, ADMIT 2: f0, f1 and f2 enter anyway) keep f12 too
    assert held_selections(order, laplacian, config, [5], previous, names)[5].tolist() == [0, 1, 2, 3, 12]


def test_admit_lets_this_runs_first_features_in_and_the_lowest_held_ones_make_way():
    names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    wider = np.arange(9)  # this run ranks a, b, c, ... best first
    last = ["f", "g", "h"]  # all still within the wider selection: the plain hold keeps exactly them
    assert hold(last, wider, names, 3, admit=math.inf).tolist() == [5, 6, 7]
    # admit 3: the first ceil(3 / 3) = 1 enters, and h, the held feature ranked lowest, makes way
    assert hold(last, wider, names, 3, admit=3.0).tolist() == [0, 5, 6]
    # admit 1.5: ceil(2) = 2 enter; admit 1: this run's own first k, the hold undone
    assert hold(last, wider, names, 3, admit=1.5).tolist() == [0, 1, 5]
    assert hold(last, wider, names, 3, admit=1.0).tolist() == [0, 1, 2]
    # the default is ADMIT = 2: ceil(3 / 2) = 2 enter
    assert ADMIT == 2.0 and hold(last, wider, names, 3).tolist() == [0, 1, 5]
    # an admitted feature already on the last list takes no one's place
    assert hold(["a", "g", "h"], wider, names, 3, admit=3.0).tolist() == [0, 6, 7]
    assert admitted_k(math.inf, 50) == 0 and admitted_k(3.0, 50) == 17 and admitted_k(2.0, 50) == 25
    with pytest.raises(ValueError, match="admit must be at least 1"):
        hold(last, wider, names, 3, admit=0.5)


def test_held_selections_pass_admit_on_and_default_to_the_studys_band():
    names = [f"f{j}" for j in range(40)]
    order, laplacian = np.arange(40), np.zeros(40)
    previous = {10: [f"f{j}" for j in range(20, 30)]}  # all within 3 x 10: held without admit
    held = held_selections(order, laplacian, SelectionConfig(), [10], previous, names, admit=math.inf)
    assert held[10].tolist() == list(range(20, 30))
    admitted = held_selections(order, laplacian, SelectionConfig(), [10], previous, names, hold_factor=3.0,
                               admit=2.0)
    assert admitted[10].tolist() == [0, 1, 2, 3, 4, 20, 21, 22, 23, 24]
    assert (HOLD, ADMIT) == (3.0, 2.0)
    assert held_selections(order, laplacian, SelectionConfig(), [10], previous, names)[10].tolist() == \
        admitted[10].tolist()


def test_most_chosen_takes_the_highest_frequency_ties_by_the_order_in_the_orders_order():
    order = np.array([3, 1, 0, 2])
    frequency = np.array([0.5, 1.0, 0.0, 0.5])  # 0 and 3 tie: 3 comes first in the order
    assert most_chosen(order, frequency, 2).tolist() == [3, 1]
    assert most_chosen(order, frequency, 3).tolist() == [3, 1, 0]
    assert most_chosen(order, np.zeros(4), 2).tolist() == [3, 1]  # no frequency: the order's first k


def test_gate_is_lgrc_held_to_the_last_lists_for_iclfs_and_the_most_chosen_for_another_method():
    names = [f"f{j}" for j in range(40)]
    rng = np.random.default_rng(2)
    order, laplacian = rng.permutation(40), rng.random(40)
    frequency = {5: rng.random(40), 10: rng.random(40)}
    iclfs = SelectionConfig(k=5, k_values=(5, 10))
    plain = gate(order, laplacian, frequency, iclfs, [5, 10], names)
    assert {k: v.tolist() for k, v in plain.items()} == \
        {k: v.tolist() for k, v in select_every_k(order, laplacian, iclfs, [5, 10]).items()}
    previous = {5: names[20:25], 10: names[:10]}
    held = gate(order, laplacian, frequency, iclfs, [5, 10], names, previous)
    assert {k: v.tolist() for k, v in held.items()} == \
        {k: v.tolist() for k, v in held_selections(order, laplacian, iclfs, [5, 10], previous, names).items()}
    other = SelectionConfig(k=5, k_values=(5, 10), method="ndfs")
    chosen = gate(order, laplacian, frequency, other, [5, 10], names, previous)  # no LGRC, no hold
    assert {k: v.tolist() for k, v in chosen.items()} == \
        {k: most_chosen(order, frequency[k], k).tolist() for k in (5, 10)}
