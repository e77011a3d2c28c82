"""The member history's core: alignment by name, age weights, seeds, caps, merges, starting afresh."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from iclfs.method.chain import carried_selections, held_selections, select
from iclfs.method.config import HistoryConfig, ParameterError, SelectionConfig
from iclfs.method.consensus import fuse_laplacian
from iclfs.method.history import (
    MemberHistory,
    admitted_k,
    age_weights,
    carried_laplacian,
    carry,
    combine_history,
    continue_history,
    gate_laplacian,
    held_k,
    hold,
    member_seed,
    rank_scores,
    usable_history,
)


def one_run(history: MemberHistory, names, scores, seed=1, fingerprint="t", cap=64) -> MemberHistory:
    return history.add_run([(seed, names, np.asarray(scores, dtype=float), 1.0, fingerprint)], cap)


def test_rank_scores_are_one_for_the_best_and_zero_for_the_worst():
    np.testing.assert_allclose(rank_scores([0.3, 0.9, 0.1]), [0.5, 1.0, 0.0])
    np.testing.assert_allclose(rank_scores([2.0, 2.0]), [1.0, 0.0])  # ties by index


def test_member_seeds_start_at_the_runs_seed_and_are_independent_draws():
    assert member_seed(42, 0) == 42
    seeds = [member_seed(42, i) for i in range(50)]
    assert len(set(seeds)) == 50
    assert seeds == [member_seed(42, i) for i in range(50)]  # the same history replays the same seeds
    assert member_seed(43, 1) != member_seed(42, 1)
    with pytest.raises(ValueError, match="index"):
        member_seed(42, -1)


def test_members_are_aligned_by_name_a_dropped_feature_goes_a_new_one_is_ranked_by_who_saw_it():
    history = one_run(MemberHistory(), ["a", "b", "c", "d"], [4, 3, 2, 1], seed=1)  # a first
    history = one_run(history, ["e", "d", "c", "b"], [4, 3, 2, 1], seed=2)  # a dropped, e new and first
    combined = combine_history(history, ["e", "d", "c", "b"], half_life=math.inf, k_values=[1, 2])
    # member 1 re-ranked among the shared b, c, d: b 1, c 0.5, d 0; member 2: e 1, d 2/3, c 1/3, b 0
    np.testing.assert_allclose(combined.scores, [1.0, 1 / 3, (0.5 + 1 / 3) / 2, 0.5])
    assert combined.order.tolist() == [0, 3, 2, 1]  # e, b, c, d
    assert combined.seen.tolist() == [1, 2, 2, 2]
    np.testing.assert_allclose(combined.frequency[1], [1.0, 0.0, 0.0, 0.5])  # e by its one member; b by one of two
    assert [o.tolist() for o in combined.member_orders] == [[3, 2, 1], [0, 1, 2, 3]]


def test_a_member_sharing_nothing_with_the_table_is_left_out():
    history = one_run(MemberHistory(), ["x", "y"], [1, 2], seed=1)
    history = one_run(history, ["a", "b"], [1, 2], seed=2)
    combined = combine_history(history, ["a", "b"], half_life=8, k_values=[1])
    assert combined.order.tolist() == [1, 0] and combined.seen.tolist() == [1, 1]
    assert combined.member_orders[0].size == 0


def test_age_weights_halve_every_half_life_and_the_current_run_weighs_one():
    history = MemberHistory()
    for seed in range(3):
        history = one_run(history, ["a", "b"], [1, 2], seed=seed)
    np.testing.assert_allclose(age_weights(history.members, history.runs - 1, 1.0), [0.25, 0.5, 1.0])
    np.testing.assert_allclose(age_weights(history.members, history.runs - 1, math.inf), [1, 1, 1])


def test_older_members_weigh_less():
    old = one_run(MemberHistory(), ["a", "b"], [2, 1], seed=1)  # a first
    both = one_run(old, ["a", "b"], [1, 2], seed=2)  # b first, newer
    assert combine_history(both, ["a", "b"], half_life=1, k_values=[1]).order.tolist() == [1, 0]
    np.testing.assert_allclose(combine_history(both, ["a", "b"], half_life=1, k_values=[1]).frequency[1],
                               [1 / 3, 2 / 3])


def test_the_frequency_rule_orders_by_weighted_first_k_share_ties_by_mean_rank():
    history = MemberHistory()
    for seed, scores in enumerate(([3, 2, 1, 0], [3, 1, 2, 0], [1, 2, 3, 0])):
        history = one_run(history, ["a", "b", "c", "d"], scores, seed=seed)
    combined = combine_history(history, ["a", "b", "c", "d"], half_life=math.inf, k_values=[2, 3], rule="frequency")
    # first two: {a, b}, {a, c}, {c, b}: a, b and c each 2/3; mean rank a 7/9 > c 6/9 > b 5/9... a, c, b, d
    np.testing.assert_allclose(combined.scores, [2 / 3, 2 / 3, 2 / 3, 0.0])
    assert combined.order.tolist() == [0, 2, 1, 3]
    with pytest.raises(ValueError, match="unknown history rule"):
        combine_history(history, ["a"], 1.0, [1], rule="vote")


def test_the_cap_keeps_the_newest_members_and_numbers_keep_counting():
    history = MemberHistory()
    for seed in range(5):
        history = one_run(history, ["a", "b"], [1, 2], seed=seed, cap=2)
    assert [m.index for m in history.members] == [3, 4]
    assert history.next_index == 5 and history.runs == 5


def test_a_member_already_carried_is_not_added_twice():
    history = one_run(MemberHistory(), ["a", "b"], [1, 2], seed=7, fingerprint="t")
    again = one_run(history, ["a", "b"], [1, 2], seed=7, fingerprint="t")  # a ranking stage run on the same member
    assert again.members == history.members and again.runs == history.runs
    other_table = one_run(history, ["a", "b"], [1, 2], seed=7, fingerprint="u")
    assert len(other_table.members) == 2


def test_two_runs_from_one_history_merge_without_losing_a_member():
    base = one_run(MemberHistory(), ["a", "b", "c"], [3, 2, 1], seed=1)
    base = MemberHistory(members=base.members, runs=base.runs, next_index=base.next_index, version="v1",
                         read_runs=base.runs)
    first = one_run(base, ["a", "b", "c"], [1, 2, 3], seed=2, fingerprint="t1")
    second = one_run(base, ["a", "b", "c"], [2, 3, 1], seed=3, fingerprint="t2")
    stored = MemberHistory(members=first.members, runs=first.runs, next_index=first.next_index, version="v2",
                           read_runs=first.runs)
    merged = second.merged_onto(stored)
    assert [(m.seed, m.index, m.run) for m in merged.members] == [(1, 0, 0), (2, 1, 1), (3, 2, 2)]
    assert merged.runs == 3 and merged.next_index == 3
    assert [m.seed for m in merged.own] == [3]


def test_a_run_starts_afresh_on_reset_on_an_unusable_or_unrelated_history():
    stored = one_run(MemberHistory(data_source="t"), ["a", "b"], [1, 2], seed=5)
    assert usable_history(stored, ["a", "b"]) == (stored, None)
    for history, names, reset, why in (
            (stored, ["a", "b"], True, "history.reset"),
            (MemberHistory(problem="the member history x cannot be read"), ["a"], False, "cannot be read"),
            (stored, ["p", "q"], False, "shares no feature name")):
        fresh, note = usable_history(history, names, reset)
        assert fresh.members == () and fresh.afresh and why in note and "starts the member history afresh" in note
    start = continue_history(stored, ["p", "q"], seed=42)
    assert start.seed == 42 and start.note is not None  # afresh: the run's own seed, as its first run


def test_continuing_gives_the_seed_of_the_next_member_number_and_not_carrying_the_runs_own():
    stored = MemberHistory()
    for seed in range(3):
        stored = one_run(stored, ["a", "b"], [1, 2], seed=seed)
    assert continue_history(stored, ["a", "b"], 42).seed == member_seed(42, 3)
    assert continue_history(stored, ["a", "b"], 42, carry=False).seed == 42
    assert continue_history(stored, ["a", "b"], 42, carry=False).history.members == ()


def test_replaying_the_same_runs_gives_the_same_orders():
    rng = np.random.default_rng(0)
    runs = [rng.normal(size=10) for _ in range(6)]
    laplacians = [rng.random(10) for _ in range(6)]  # each run's table's, fused in with the default weight
    names = [f"f{j}" for j in range(10)]
    config = HistoryConfig(carry=True, half_life=2.0, max_members=4)

    def replay():
        history, orders = MemberHistory(), []
        for scores, laplacian in zip(runs, laplacians, strict=True):
            history, combined = carry(history, [(member_seed(42, history.next_index), names, scores, 0.0, "t")],
                                      names, config, [3], laplacian)
            orders.append(combined.order.tolist())
        return orders

    assert replay() == replay()


def test_carry_mixes_in_the_laplacian_rank_like_one_runs_consensus():
    names = ["a", "b", "c"]
    config = HistoryConfig(carry=True, laplacian="run", laplacian_weight=0.0, laplacian_fusion="rank_mean")
    history, _ = carry(MemberHistory(), [(1, names, np.array([3.0, 2, 1]), 0.0, "t")], names, config, [1])
    laplacian = np.array([9.0, 5.0, 0.1])  # c has the best (lowest) Laplacian score
    _, plain = carry(history, [(2, names, np.array([3.0, 2, 1]), 0.0, "t")], names, config, [1], laplacian)
    fusing = replace(config, laplacian_weight=0.9)
    _, fused = carry(history, [(2, names, np.array([3.0, 2, 1]), 0.0, "t")], names, fusing, [1], laplacian)
    assert plain.order.tolist() == [0, 1, 2] and fused.order[0] == 2
    expected = fuse_laplacian(plain.scores, laplacian, 0.9)
    np.testing.assert_allclose(fused.scores, expected)
    # the first run has one member: nothing to fuse, it hands on its own order whatever the weight
    _, alone = carry(MemberHistory(), [(1, names, np.array([3.0, 2, 1]), 0.0, "t")], names, fusing, [1], laplacian)
    assert alone.order.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="history.laplacian_weight > 0 needs the Laplacian scores"):
        carry(history, [(2, names, np.array([3.0, 2, 1]), 0.0, "t")], names, fusing, [1])
    # another method's members are selected without LGRC: their order is theirs alone
    other, _ = carry(MemberHistory(), [(1, names, np.array([3.0, 2, 1]), 0.0, "t")], names, fusing, [1],
                     laplacian, method="ndfs")
    _, alone = carry(other, [(2, names, np.array([3.0, 2, 1]), 0.0, "t")], names, fusing, [1], laplacian,
                     method="ndfs")
    assert alone.order.tolist() == [0, 1, 2]


def test_the_carried_order_fuses_the_laplacian_scores_the_gate_uses():
    names = ["a", "b", "c"]
    scores = np.array([2.0, 3.0, 1.0])  # every member ranks b first
    before = np.array([0.1, 5.0, 9.0])  # the earlier tables: a has the best Laplacian score
    now = np.array([9.0, 5.0, 0.2])  # this run's table: c has
    orders = {}
    for laplacian in ("run", "carried"):
        config = HistoryConfig(carry=True, laplacian=laplacian, laplacian_weight=0.9, laplacian_fusion="rank_mean")
        history = MemberHistory()
        for seed in (1, 2):
            history, _ = carry(history, [(seed, names, scores, 0.0, "t")], names, config, [1], before)
        history, combined = carry(history, [(3, names, scores, 0.0, "t")], names, config, [1], now)
        gate = gate_laplacian(history, now, names, config)
        np.testing.assert_allclose(combined.scores, fuse_laplacian(
            combine_history(history, names, config.half_life, [1]).scores, gate, 0.9))
        orders[laplacian] = combined.order.tolist()
    # the carried mean is a: (0.1 + 0.1 + 9) / 3 against c's (9 + 9 + 0.2) / 3; this run's alone is c
    assert orders["run"][0] == 2 and orders["carried"][0] == 0
    with pytest.raises(ParameterError, match="history.laplacian_weight"):
        HistoryConfig(laplacian_weight=1.5)


def test_the_carried_order_fuses_by_reciprocal_rank_when_told():
    names = ["a", "b", "c", "d"]
    config = HistoryConfig(carry=True, laplacian="run", laplacian_weight=0.5, laplacian_fusion="reciprocal_rank")
    laplacian = np.array([9.0, 5.0, 0.1, 7.0])
    history, _ = carry(MemberHistory(), [(1, names, np.array([4.0, 3, 2, 1]), 0.0, "t")], names, config, [1],
                       laplacian)
    history, fused = carry(history, [(2, names, np.array([4.0, 3, 2, 1]), 0.0, "t")], names, config, [1], laplacian)
    members = combine_history(history, names, config.half_life, [1]).scores
    np.testing.assert_allclose(fused.scores, fuse_laplacian(members, laplacian, 0.5, "reciprocal_rank"))
    _, mean = carry(history, [(2, names, np.array([4.0, 3, 2, 1]), 0.0, "t")], names,
                    replace(config, laplacian_fusion="rank_mean"), [1], laplacian)
    np.testing.assert_allclose(mean.scores, fuse_laplacian(members, laplacian, 0.5))
    with pytest.raises(ParameterError, match="history.laplacian_fusion"):
        HistoryConfig(laplacian_fusion="borda")


def test_history_settings_are_checked():
    with pytest.raises(ParameterError, match="history.half_life"):
        HistoryConfig(half_life=0)
    with pytest.raises(ParameterError, match="history.rule"):
        HistoryConfig(rule="vote")
    assert math.isinf(HistoryConfig(half_life=math.inf).half_life)


# -- the hold and the carried Laplacian scores ---------------------------------------------------------


def test_a_held_list_keeps_the_last_lists_features_while_they_stay_in_the_wider_selection():
    names = ["a", "b", "c", "d", "e", "f"]
    wider = np.array([4, 0, 5, 1, 2])  # e a f b c: this run's selection of 5
    # the last list was b, c, d: d left the table's wider selection, b and c stay; e (best of the rest) fills
    held = hold(["b", "c", "d"], wider, names, 3)
    assert held.tolist() == [4, 1, 2]  # e, b, c in the wider selection's order
    assert hold(None, wider, names, 3).tolist() == [4, 0, 5]  # no last list: the first k
    assert hold([], wider, names, 3).tolist() == [4, 0, 5]
    # a last list that all stays in: exactly it, whatever this run's first k
    assert sorted(hold(["c", "b", "f"], wider, names, 3).tolist()) == [1, 2, 5]


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


def test_held_selections_without_a_hold_or_a_last_list_are_the_plain_selections():
    rng = np.random.default_rng(0)
    order, laplacian = rng.permutation(40), rng.random(40)
    names = [f"f{j}" for j in range(40)]
    plain = select(order, laplacian, SelectionConfig(), [5, 10])
    for factor, previous in ((1.0, {5: names[:5]}), (3.0, None), (3.0, {})):
        held = held_selections(order, laplacian, SelectionConfig(), [5, 10], factor, previous, names)
        assert {k: v.tolist() for k, v in held.items()} == {k: v.tolist() for k, v in plain.items()}


def test_held_selections_keep_a_last_list_that_is_still_near_the_top():
    names = [f"f{j}" for j in range(40)]
    order = np.arange(40)
    laplacian = np.zeros(40)  # no feature above the gate: LGRC keeps the order
    config = SelectionConfig()
    previous = {5: ["f0", "f1", "f2", "f12", "f30"]}  # f12 within 3 x 5 = 15, f30 not
    held = held_selections(order, laplacian, config, [5], 3.0, previous, names)
    assert held[5].tolist() == [0, 1, 2, 3, 12]
    assert held_selections(order, laplacian, config, [5], 2.0, previous, names)[5].tolist() == [0, 1, 2, 3, 4]


def test_admit_lets_this_runs_first_features_in_and_the_lowest_held_ones_make_way():
    names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    wider = np.arange(9)  # this run ranks a, b, c, ... best first
    last = ["f", "g", "h"]  # all still within the wider selection: the plain hold keeps exactly them
    assert hold(last, wider, names, 3).tolist() == [5, 6, 7]
    assert hold(last, wider, names, 3, admit=math.inf).tolist() == [5, 6, 7]
    # admit 3: the first ceil(3 / 3) = 1 enters, and h, the held feature ranked lowest, makes way
    assert hold(last, wider, names, 3, admit=3.0).tolist() == [0, 5, 6]
    # admit 1.5: ceil(2) = 2 enter; admit 1: this run's own first k, the hold undone
    assert hold(last, wider, names, 3, admit=1.5).tolist() == [0, 1, 5]
    assert hold(last, wider, names, 3, admit=1.0).tolist() == [0, 1, 2]
    # an admitted feature already on the last list takes no one's place
    assert hold(["a", "g", "h"], wider, names, 3, admit=3.0).tolist() == [0, 6, 7]
    assert admitted_k(math.inf, 50) == 0 and admitted_k(3.0, 50) == 17 and admitted_k(2.0, 50) == 25
    with pytest.raises(ValueError, match="admit must be at least 1"):
        hold(last, wider, names, 3, admit=0.5)


def test_held_selections_pass_admit_on_and_the_setting_is_checked():
    names = [f"f{j}" for j in range(40)]
    order, laplacian = np.arange(40), np.zeros(40)
    previous = {10: [f"f{j}" for j in range(20, 30)]}  # all within 3 x 10: held without admit
    held = held_selections(order, laplacian, SelectionConfig(), [10], 3.0, previous, names)
    assert held[10].tolist() == list(range(20, 30))
    admitted = held_selections(order, laplacian, SelectionConfig(), [10], 3.0, previous, names, admit=2.0)
    assert admitted[10].tolist() == [0, 1, 2, 3, 4, 20, 21, 22, 23, 24]
    with pytest.raises(ParameterError, match="history.admit"):
        HistoryConfig(admit=0.9)


def test_carried_laplacian_scores_are_the_weighted_mean_over_the_members_that_saw_each_feature():
    history = MemberHistory().add_run([(1, ["a", "b", "c"], np.array([3.0, 2, 1]), 1.0, "t")], 64,
                                      laplacian=np.array([0.2, 0.4, np.nan]))
    history = history.add_run([(2, ["b", "a", "d"], np.array([3.0, 2, 1]), 1.0, "u")], 64,
                              laplacian=np.array([0.8, 0.4, 0.5]))
    names = ["a", "b", "c", "d", "e"]
    np.testing.assert_allclose(carried_laplacian(history, names, math.inf), [0.3, 0.6, np.inf, 0.5, np.inf])
    # half-life 1: the older member weighs 1/2
    np.testing.assert_allclose(carried_laplacian(history, names, 1.0)[:2],
                               [(0.5 * 0.2 + 0.4) / 1.5, (0.5 * 0.4 + 0.8) / 1.5])


def test_a_member_without_laplacian_scores_is_left_out_of_the_carried_ones():
    history = one_run(MemberHistory(), ["a", "b"], [1, 2], seed=1)  # recorded without them
    assert history.members[0].laplacian is None
    history = history.add_run([(2, ["a", "b"], np.array([1.0, 2]), 1.0, "t")], 64, laplacian=np.array([0.1, 0.7]))
    np.testing.assert_allclose(carried_laplacian(history, ["a", "b"], math.inf), [0.1, 0.7])
    with pytest.raises(ValueError, match="2 feature names but 3 Laplacian scores"):
        MemberHistory().add_run([(3, ["a", "b"], np.array([1.0, 2]), 1.0, "t")], 64, laplacian=np.zeros(3))


def test_a_feature_without_variance_on_this_runs_graph_is_gated_last_whatever_the_members_said():
    names = ["a", "b", "c", "d"]
    history = MemberHistory().add_run([(1, names, np.array([4.0, 3, 2, 1]), 1.0, "t")], 64,
                                      laplacian=np.array([0.1, 0.2, 0.3, 0.4]))
    now = np.array([np.inf, 0.2, 0.3, 0.4])  # "a" is constant on this run's table
    history = history.add_run([(2, names, np.array([4.0, 3, 2, 1]), 1.0, "u")], 64, laplacian=now)
    config = HistoryConfig(hold=1.0, laplacian="carried")
    selection = SelectionConfig(k=2, k_values=(2,), quantile=0.5)
    chosen, _ = carried_selections(history, np.arange(4), now, selection, config, [2], names)
    assert 0 not in chosen[2].tolist()  # the members' mean (0.1) would have kept it


def test_carry_hands_the_lists_the_gate_it_fused_by_so_it_is_computed_once():
    names = ["a", "b", "c", "d", "e", "f"]
    rng = np.random.default_rng(3)
    config = HistoryConfig(carry=True, hold=1.0)
    selection = SelectionConfig(k=2, k_values=(2, 4), quantile=0.5)
    history = MemberHistory()
    for seed in range(3):
        laplacian = rng.random(6)
        history, combined = carry(history, [(seed, names, rng.normal(size=6), 0.0, "t")], names, config, [2, 4],
                                  laplacian)
    np.testing.assert_array_equal(combined.gate, gate_laplacian(history, laplacian, names, config))
    given, _ = carried_selections(history, combined.order, laplacian, selection, config, [2, 4], names, combined.gate)
    computed, _ = carried_selections(history, combined.order, laplacian, selection, config, [2, 4], names)
    assert {k: v.tolist() for k, v in given.items()} == {k: v.tolist() for k, v in computed.items()}
    # another method's members are selected without LGRC: no gate
    _, other = carry(MemberHistory(), [(1, names, rng.normal(size=6), 0.0, "t")], names, config, [2], laplacian,
                     method="ndfs")
    assert other.gate is None
