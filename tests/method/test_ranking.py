"""The members combined into one order (docs/members.md): a run's own members, the members a data source
keeps (alignment by name, age weights, seeds, caps, merges, starting afresh), the Laplacian fusion, agreement
and k auto."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclfs import chain
from iclfs.io._synthetic import make_synthetic
from iclfs.method._config import (
    MembersConfig,
    ParameterError,
    RuntimeConfig,
    SelectionConfig,
    Settings,
    TrainingConfig,
    ViewConfig,
)
from iclfs.method._k_choice import agreed_k, agreement
from iclfs.method._lgrc import gate
from iclfs.method._members import (
    member_settings,
    network_name,
    plan_members,
    state_dicts,
    total_epochs,
    train_members,
)
from iclfs.method._preprocessing import DataValidationError, invert, prepare
from iclfs.method._ranking import (
    Member,
    MemberHistory,
    age_weights,
    carried_laplacian,
    combine_kept,
    combine_run,
    fuse_laplacian,
    fusion_label,
    member_orders,
    member_seed,
    rank,
    rank_scores,
    start,
    selection_frequency,
    usable_history,
)
from iclfs.method._scores import embed, feature_scores, rank_score
from iclfs.method._stability import jaccard
from iclfs.method._training import train

QUIET = RuntimeConfig(device="cpu", progress=False, num_threads=1)
SMALL = MembersConfig(per_run=3, epochs=2, subsample=0.5)


@pytest.fixture(scope="module")
def A():
    table = make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
    return invert(prepare(table).standardized)


def member(seed, names, scores, fingerprint="t", laplacian=None, method="iclfs") -> Member:
    return Member(seed, tuple(names), np.asarray(scores, dtype=float), 1.0, fingerprint, method,
                  None if laplacian is None else np.asarray(laplacian, dtype=float))


def one_run(history: MemberHistory, names, scores, seed=1, fingerprint="t", kept=64, laplacian=None
            ) -> MemberHistory:
    return history.add_run([member(seed, names, scores, fingerprint, laplacian)], kept)


# -- a run's own members, by hand ---------------------------------------------------


def test_mean_rank_equals_a_hand_computation():
    # three members, four features; ranks (1 = best) per member:
    scores = np.array([[0.9, 0.1, 0.5, 0.3],   # ranks 1 4 2 3
                       [0.2, 0.8, 0.6, 0.4],   # ranks 4 1 2 3
                       [0.7, 0.6, 0.5, 0.9]])  # ranks 2 3 4 1
    mean_rank = np.array([7, 8, 8, 7]) / 3
    expected = 1 - (mean_rank - 1) / 3
    ranking = combine_run(scores, [1, 2])
    np.testing.assert_allclose(ranking.scores, expected)
    assert list(np.argsort(-ranking.scores, kind="stable")) == [0, 3, 1, 2]
    assert ranking.order.tolist() == [0, 3, 1, 2]


def test_one_member_keeps_its_raw_scores():
    scores = np.array([[0.3, 0.9, 0.1]])
    ranking = combine_run(scores, [1])
    np.testing.assert_array_equal(ranking.scores, scores[0])
    assert ranking.order.tolist() == [1, 0, 2] and ranking.member_jaccard[1] is None


def test_reciprocal_rank_fusion_puts_the_heads_of_both_orders_first():
    scores = np.array([0.9, 0.5, 0.1])           # positions 1, 2, 3
    laplacian = np.array([0.8, 0.1, np.inf])     # lower is better: positions 2, 1, 3 (inf last)
    fused = fuse_laplacian(scores, laplacian, 0.25)
    np.testing.assert_allclose(fused, [0.75 / 61 + 0.25 / 62, 0.75 / 62 + 0.25 / 61, 0.75 / 63 + 0.25 / 63])
    # where the heads differ, reciprocal rank's head is a head of one of the orders, not a feature both place in
    # the middle
    d = 201
    own = np.arange(d, 0, -1, dtype=float)  # feature 0 first, feature 200 last
    order = [j for j in range(d - 1, -1, -1) if j != 100]  # the Laplacian's order is the reverse ...
    order.insert(49, 100)  # ... but it puts feature 100, in the middle of the first, 50th
    ls = np.empty(d)
    ls[order] = np.arange(d)  # a lower Laplacian score is better
    head = int(np.argmax(fuse_laplacian(own, ls, 0.5)))
    assert head in (0, d - 1)
    np.testing.assert_array_equal(fuse_laplacian(scores, laplacian, 0.0), scores)  # weight 0: unchanged


def test_rank_score_ties_go_to_the_smaller_index():
    np.testing.assert_allclose(rank_score(np.array([[1.0, 1.0, 0.0]])), [1.0, 0.5, 0.0])


def test_fusion_label_names_the_weight_only_when_it_fuses():
    assert fusion_label(MembersConfig(laplacian_weight=0.0)) == ""
    assert fusion_label(MembersConfig(laplacian_weight=0.5)) == ", Laplacian weight 0.5"


# -- agreement ---------------------------------------------------------------------


def test_frequency_and_jaccard_of_member_top_k():
    orders = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [0, 2, 1, 3]])
    np.testing.assert_allclose(selection_frequency(orders, 2), [1, 2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(selection_frequency(orders, 2, weights=np.array([2.0, 1.0, 1.0])), [1, 3 / 4, 1 / 4, 0])
    # members whose scores give those orders (higher is better)
    scores = np.array([[4.0, 3, 2, 1], [3.0, 4, 1, 2], [4.0, 2, 3, 1]])
    np.testing.assert_array_equal(member_orders(scores), orders)
    ranking = combine_run(scores, [2])
    np.testing.assert_allclose(ranking.selection_frequency[2], [1, 2 / 3, 1 / 3, 0])
    # pairs: {0,1}&{0,1}=1, {0,1}&{0,2}=1/3, {0,1}&{0,2}=1/3
    assert ranking.member_jaccard[2] == pytest.approx((1 + 1 / 3 + 1 / 3) / 3)
    assert combine_run(scores[:1], [2]).member_jaccard[2] is None
    assert jaccard([1, 2], [2, 3]) == pytest.approx(1 / 3) and jaccard([], []) == 1.0


def test_agreement_is_chance_corrected():
    frequency = np.array([1.0, 1.0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0])
    # k = 2 of d = 8: chance is 0.25; the selection {0, 1} is chosen by every member
    assert agreement(frequency, np.array([0, 1]), 2, 8) == pytest.approx(1.0)
    # a selection chosen by half the members: (0.5 - 0.25) / 0.75
    assert agreement(frequency, np.array([2, 3]), 2, 8) == pytest.approx(1 / 3)
    assert agreement(frequency, np.arange(8), 8, 8) == 1.0


def test_the_agreed_k_is_the_largest_and_says_why():
    chosen = agreed_k({50: 0.9, 100: 0.6, 150: 0.4}, 0.5)
    assert chosen.k == 100 and "largest k" in chosen.reason and "k = 150: 0.40" in chosen.reason
    fallback = agreed_k({50: 0.2, 100: 0.1}, 0.5)
    assert fallback.k == 50 and "members disagree" in fallback.reason


# -- training the members ------------------------------------------------------------------


def test_one_member_is_the_runs_own_seed_on_every_sample():
    (plan,) = plan_members(40, MembersConfig(per_run=1), seed=42)
    assert plan.seed == 42 and plan.samples is None
    training, epochs = member_settings(40, TrainingConfig(epochs=7), MembersConfig(per_run=1))
    assert epochs == 7 and training == TrainingConfig(epochs=7)


def test_members_have_their_own_seeds_and_samples_and_keep_the_data_regime():
    plans = plan_members(1200, MembersConfig(per_run=4, subsample=0.5), seed=42)
    assert len({p.seed for p in plans}) == 4
    assert all(len(p.samples) == 600 and np.all(np.diff(p.samples) > 0) for p in plans)
    assert not np.array_equal(plans[0].samples, plans[1].samples)
    assert [p.seed for p in plan_members(1200, MembersConfig(per_run=4, subsample=0.5), 42)] == \
        [p.seed for p in plans]
    training, epochs = member_settings(1200, TrainingConfig(), MembersConfig(per_run=4, epochs=3))
    assert training.regime == "large" and epochs == 3  # 600 samples each, the regime of all 1200


def test_members_differ_and_the_same_seed_gives_the_same_ranking(A):
    first = train_members(A, TrainingConfig(), ViewConfig(), QUIET, SMALL, seed=5)
    again = train_members(A, TrainingConfig(), ViewConfig(), QUIET, SMALL, seed=5)
    other = train_members(A, TrainingConfig(), ViewConfig(), QUIET, SMALL, seed=6)
    scores = np.array([m.scores["z_norm"] for m in first])
    assert len(first) == 3 and all(len(m.results[0].history) == 2 for m in first)
    orders = member_orders(scores)
    assert not np.array_equal(orders[0], orders[1]) and not np.array_equal(orders[1], orders[2])
    np.testing.assert_array_equal(scores, np.array([m.scores["z_norm"] for m in again]))
    assert not np.array_equal(scores, np.array([m.scores["z_norm"] for m in other]))


def test_the_chain_orders_by_the_mean_rank_of_the_members():
    table = make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
    settings = Settings(runtime=QUIET, members=SMALL).with_overrides("selection.k=5,selection.k_values=[5,10]")
    result = chain.run(table, settings)
    scores = np.array([m.scores for m in result.trained.members])
    np.testing.assert_array_equal(scores, np.array([t.scores["z_norm"] for t in result.trained.trainings]))
    # a run's own members are never fused with the Laplacian rank
    np.testing.assert_allclose(result.ranking.scores, rank_score(scores))
    assert set(result.ranking.selection_frequency) == {5, 10} and result.k == 5
    assert result.selected.shape == (5,)
    again = chain.run(table, settings)
    np.testing.assert_array_equal(result.selected, again.selected)


def test_k_auto_picks_a_k_of_the_grid_and_explains_it():
    table = make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
    settings = Settings(runtime=QUIET, members=SMALL).with_overrides("selection.k=auto,selection.k_values=[5,10,40]")
    result = chain.run(table, settings)
    assert result.k in (5, 10) and result.k_reason  # 40 = d is never chosen
    assert "k = 40" not in result.k_reason


def test_one_member_is_the_papers_run_whatever_the_laplacian_weight(tiny_table):
    """The Laplacian fusion belongs to combining kept members: a single run keeps its raw score, and so does a
    carrying run's first (a history of its one member)."""
    single = "members.per_run=1,training.epochs=2,selection.k=5,selection.k_values=[5]"
    fused = chain.run(tiny_table, Settings(runtime=QUIET).with_overrides(single + ",members.laplacian_weight=0.5"))
    plain = chain.run(tiny_table, Settings(runtime=QUIET).with_overrides(single + ",members.laplacian_weight=0"))
    np.testing.assert_array_equal(fused.ranking.scores, fused.trained.members[0].scores)
    np.testing.assert_array_equal(fused.ranking.scores, fused.trained.trainings[0].scores["z_norm"])
    np.testing.assert_array_equal(fused.ranking.order, plain.ranking.order)
    first = chain.run(tiny_table, Settings(runtime=QUIET).with_overrides(single + ",members.laplacian_weight=0.5"),
                      history=MemberHistory())
    np.testing.assert_array_equal(first.ranking.order, plain.ranking.order)
    np.testing.assert_array_equal(first.selected, plain.selected)
    assert len(first.history.members) == 1 and not first.continuation.holds


# -- feature blocks ----------------------------------------------------------------------------

BLOCKS = MembersConfig(per_run=2, epochs=2, subsample=0.5, feature_blocks=3)


def test_each_member_deals_every_feature_into_exactly_one_block():
    plans = plan_members(40, BLOCKS, seed=42, n_features=25)
    for plan in plans:
        assert len(plan.blocks) == 3 and sorted(len(b) for b in plan.blocks) == [8, 8, 9]
        np.testing.assert_array_equal(np.sort(np.concatenate(plan.blocks)), np.arange(25))
        assert all(np.all(np.diff(b) > 0) for b in plan.blocks) and len(set(plan.block_seeds)) == 3
    assert not np.array_equal(plans[0].blocks[0], plans[1].blocks[0])  # members deal apart
    again = plan_members(40, BLOCKS, seed=42, n_features=25)
    assert all(np.array_equal(a, b) for p, q in zip(plans, again) for a, b in zip(p.blocks, q.blocks))
    # the blocks draw from a stream of their own: the members' seeds and samples are those without blocks
    plain = plan_members(40, MembersConfig(per_run=2, subsample=0.5), seed=42)
    assert [p.seed for p in plans] == [p.seed for p in plain]
    assert all(np.array_equal(p.samples, q.samples) for p, q in zip(plans, plain))


def test_blocks_need_the_number_of_features():
    with pytest.raises(ValueError, match="number of features"):
        plan_members(40, BLOCKS, seed=42)


def test_a_member_scores_each_feature_by_its_rank_within_its_block(A):
    (trained,) = train_members(A, TrainingConfig(), ViewConfig(), QUIET, BLOCKS.replace(per_run=1), seed=7)
    assert len(trained.results) == 3 and total_epochs([trained]) == 3 * 100
    for block, seed in trained.plan.networks():
        # one network, trained apart on the block's rows alone, gives the same scores
        result = train(np.ascontiguousarray(A[block]), TrainingConfig(epochs=100), ViewConfig(), QUIET, seed)
        expected = rank_score(feature_scores(*embed(result.model, np.ascontiguousarray(A[block])))["z_norm"])
        np.testing.assert_allclose(trained.scores["z_norm"][block], expected)
        assert sorted(trained.scores["z_norm"][block]) == pytest.approx(np.linspace(0, 1, len(block)))
    assert list(state_dicts([trained])) == [f"member_0_block_{b}" for b in range(3)]
    assert network_name(trained, 2) == "member_0_block_2"


def test_members_of_feature_blocks_through_the_chain(tiny_table):
    settings = Settings(runtime=QUIET, members=BLOCKS).with_overrides("selection.k=5,selection.k_values=[5,10]")
    result = chain.run(tiny_table, settings)
    scores = np.array([m.scores for m in result.trained.members])
    assert scores.shape == (2, 40) and np.all(np.isfinite(scores))
    np.testing.assert_allclose(result.ranking.scores, rank_score(scores))
    assert [len(t.results) for t in result.trained.trainings] == [3, 3]
    assert all(r.history and len(r.history) == 2 for t in result.trained.trainings for r in t.results)
    np.testing.assert_array_equal(result.selected, chain.run(tiny_table, settings).selected)


def test_too_few_features_for_the_blocks_is_refused_before_training(tiny_table):
    settings = Settings(runtime=QUIET).with_overrides("members.feature_blocks=6,selection.k=5,selection.k_values=[5]")
    with pytest.raises(DataValidationError, match=r"40 feature\(s\) cannot be dealt into members.feature_blocks = 6.*"
                                                  r"at most 5"):
        chain.prepare_checked(tiny_table, settings)


def test_the_published_stream_refuses_feature_blocks():
    with pytest.raises(ParameterError, match="feature_blocks 1"):
        Settings().with_overrides("views.stream=published,members.feature_blocks=2")


# -- kept members: rank scores, seeds, alignment by name ------------------------------------------------


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


def test_a_kept_member_holds_rank_scores_its_number_and_its_run():
    history = one_run(MemberHistory(), ["a", "b", "c"], [0.3, 0.9, 0.1], seed=7)
    (kept,) = history.members
    np.testing.assert_allclose(kept.scores, [0.5, 1.0, 0.0])
    assert (kept.seed, kept.run, kept.index, kept.fingerprint) == (7, 0, 0, "t")
    with pytest.raises(ValueError, match="members.kept must be >= 1"):
        history.add_run([member(8, ["a"], [1.0])], 0)
    with pytest.raises(ValueError, match="2 feature names but 3 scores"):
        member(1, ["a", "b"], [1.0, 2.0, 3.0])


def test_members_are_aligned_by_name_a_dropped_feature_goes_a_new_one_is_ranked_by_who_saw_it():
    history = one_run(MemberHistory(), ["a", "b", "c", "d"], [4, 3, 2, 1], seed=1)  # a first
    history = one_run(history, ["e", "d", "c", "b"], [4, 3, 2, 1], seed=2)  # a dropped, e new and first
    combined = combine_kept(history, ["e", "d", "c", "b"], half_life=math.inf, k_values=[1, 2])
    # member 1 re-ranked among the shared b, c, d: b 1, c 0.5, d 0; member 2: e 1, d 2/3, c 1/3, b 0
    np.testing.assert_allclose(combined.scores, [1.0, 1 / 3, (0.5 + 1 / 3) / 2, 0.5])
    assert combined.order.tolist() == [0, 3, 2, 1]  # e, b, c, d
    assert combined.seen.tolist() == [1, 2, 2, 2]
    np.testing.assert_allclose(combined.selection_frequency[1], [1.0, 0.0, 0.0, 0.5])  # e by its one member; b by one of two
    assert [o.tolist() for o in combined.member_orders] == [[3, 2, 1], [0, 1, 2, 3]]


def test_the_ranking_step_aligns_kept_members_by_name():
    config = MembersConfig(laplacian_weight=0.0)
    laplacian = np.zeros(4)
    first, history = rank([member(1, ["a", "b", "c", "d"], [4, 3, 2, 1])], ["a", "b", "c", "d"], laplacian, config,
                          [1, 2], MemberHistory())
    assert first.order.tolist() == [0, 1, 2, 3]
    second, history = rank([member(2, ["e", "d", "c", "b"], [4, 3, 2, 1])], ["e", "d", "c", "b"], laplacian, config,
                           [1, 2], history)
    np.testing.assert_allclose(second.scores, [1.0, 1 / 3, (0.5 + 1 / 3) / 2, 0.5])
    assert second.order.tolist() == [0, 3, 2, 1] and second.seen.tolist() == [1, 2, 2, 2]
    assert [m.index for m in history.members] == [0, 1] and history.runs == 2


def test_a_member_sharing_nothing_with_the_table_is_left_out():
    history = one_run(MemberHistory(), ["x", "y"], [1, 2], seed=1)
    history = one_run(history, ["a", "b"], [1, 2], seed=2)
    combined = combine_kept(history, ["a", "b"], half_life=8, k_values=[1])
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
    assert combine_kept(both, ["a", "b"], half_life=1, k_values=[1]).order.tolist() == [1, 0]
    np.testing.assert_allclose(combine_kept(both, ["a", "b"], half_life=1, k_values=[1]).selection_frequency[1],
                               [1 / 3, 2 / 3])


def test_the_cap_keeps_the_newest_members_and_numbers_keep_counting():
    history = MemberHistory()
    for seed in range(5):
        history = one_run(history, ["a", "b"], [1, 2], seed=seed, kept=2)
    assert [m.index for m in history.members] == [3, 4]
    assert history.next_index == 5 and history.runs == 5 and history.kept == 2


def test_a_member_already_kept_is_not_added_twice():
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
    # the rank scores of rank scores are the same values: a merge changes no kept member's scores
    np.testing.assert_array_equal(merged.members[-1].scores, second.members[-1].scores)


# -- where a run starts ------------------------------------------------------------------------


def test_a_run_starts_afresh_on_reset_on_an_unusable_or_unrelated_history():
    stored = one_run(MemberHistory(data_source="t"), ["a", "b"], [1, 2], seed=5)
    assert usable_history(stored, ["a", "b"]) == (stored, None)
    for history, names, reset, method, why in (
            (stored, ["a", "b"], True, "iclfs", "members.reset"),
            (MemberHistory(problem="the member history x cannot be read"), ["a"], False, "iclfs", "cannot be read"),
            (stored, ["p", "q"], False, "iclfs", "shares no feature name"),
            (stored, ["a", "b"], False, "ndfs", "holds members of iclfs")):
        fresh, note = usable_history(history, names, reset, method)
        assert fresh.members == () and fresh.afresh and why in note and "starts the member history afresh" in note
    afresh = start(stored, ["p", "q"], seed=42, config=MembersConfig())
    assert afresh.seed == 42 and afresh.note is not None  # afresh: the run's own seed, as its first run
    assert afresh.history.members == () and not afresh.holds
    reset = start(stored, ["a", "b"], 42, MembersConfig(reset=True))
    assert reset.seed == 42 and "members.reset" in reset.note and reset.history.afresh


def test_continuing_gives_the_seed_of_the_next_member_number_and_not_carrying_the_runs_own():
    stored = MemberHistory()
    for seed in range(3):
        stored = one_run(stored, ["a", "b"], [1, 2], seed=seed)
    carried = start(stored, ["a", "b"], 42, MembersConfig())
    assert carried.seed == member_seed(42, 3) and carried.history == stored and carried.note is None
    assert carried.holds
    alone = start(stored, ["a", "b"], 42, MembersConfig(carry=False))
    assert alone.seed == 42 and alone.history is None and not alone.holds
    assert start(None, ["a", "b"], 42, MembersConfig()) == alone  # nothing stored: one run at the run's seed
    first = start(MemberHistory(), ["a", "b"], 42, MembersConfig())
    assert first.seed == 42 and first.history is not None and not first.holds


def test_replaying_the_same_runs_gives_the_same_orders():
    rng = np.random.default_rng(0)
    runs = [rng.normal(size=10) for _ in range(6)]
    laplacians = [rng.random(10) for _ in range(6)]  # each run's table's, fused in with the default weight
    names = [f"f{j}" for j in range(10)]
    config = MembersConfig(half_life=2.0, kept=4)

    def replay():
        history, orders = MemberHistory(), []
        for scores, laplacian in zip(runs, laplacians, strict=True):
            continuation = start(history, names, 42, config)
            ranking, history = rank([Member(continuation.seed, names, scores)], names, laplacian, config, [3],
                                    continuation.history, fingerprint="t")
            orders.append(ranking.order.tolist())
        return orders, history

    orders, history = replay()
    assert orders == replay()[0]
    assert [m.seed for m in history.members] == [member_seed(42, i) for i in range(2, 6)]  # the 4 newest kept


# -- the ranking step: kept members and the Laplacian fusion ---------------------------------------


def test_a_history_of_this_run_alone_hands_on_exactly_this_runs_order():
    names = ["a", "b", "c", "d"]
    scores = np.array([[4.0, 1, 3, 2], [1.0, 4, 3, 2], [4.0, 3, 1, 2]])
    laplacian = np.array([0.9, 0.1, 0.5, np.inf])
    own = combine_run(scores, [1, 2])
    for history in (None, MemberHistory()):
        ranking, kept = rank([member(s, names, row) for s, row in enumerate(scores)], names, laplacian,
                             MembersConfig(laplacian_weight=0.9), [1, 2], history)
        np.testing.assert_array_equal(ranking.scores, own.scores)
        assert ranking.order.tolist() == own.order.tolist()
        assert (kept is None) == (history is None)
    assert [m.index for m in kept.members] == [0, 1, 2] and {m.run for m in kept.members} == {0}
    np.testing.assert_array_equal(ranking.gate, laplacian)  # a history of this run alone gates by its own scores


def test_the_ranking_step_mixes_in_the_laplacian_rank_of_kept_members():
    names = ["a", "b", "c"]
    plain_config = MembersConfig(laplacian_weight=0.0)
    laplacian = np.array([9.0, 5.0, 0.1])  # c has the best (lowest) Laplacian score
    _, history = rank([member(1, names, [3.0, 2, 1])], names, laplacian, plain_config, [1], MemberHistory())
    plain, kept = rank([member(2, names, [3.0, 2, 1])], names, laplacian, plain_config, [1], history)
    fusing = MembersConfig(laplacian_weight=0.9)
    fused, _ = rank([member(2, names, [3.0, 2, 1])], names, laplacian, fusing, [1], history)
    assert plain.order.tolist() == [0, 1, 2] and fused.order[0] == 2
    np.testing.assert_allclose(plain.scores, combine_kept(kept, names, math.inf, [1]).scores)
    np.testing.assert_array_equal(fused.gate, laplacian)  # every member saw the same table
    np.testing.assert_allclose(fused.scores, fuse_laplacian(plain.scores, laplacian, 0.9))
    # the first run has one member: nothing to fuse, it hands on its own order whatever the weight
    alone, _ = rank([member(1, names, [3.0, 2, 1])], names, laplacian, fusing, [1], MemberHistory())
    assert alone.order.tolist() == [0, 1, 2]
    # another method's members are not fused: their order is theirs alone, and the gate is this run's own scores
    _, other = rank([member(1, names, [3.0, 2, 1], method="ndfs")], names, laplacian, fusing, [1], MemberHistory())
    alone, _ = rank([member(2, names, [3.0, 2, 1], method="ndfs")], names, laplacian, fusing, [1], other)
    assert alone.order.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(alone.gate, laplacian)


def test_the_kept_order_fuses_the_laplacian_scores_the_gate_uses():
    names = ["a", "b", "c"]
    scores = np.array([2.0, 3.0, 1.0])  # every member ranks b first
    before = np.array([0.1, 5.0, 9.0])  # the earlier tables: a has the best Laplacian score
    now = np.array([9.0, 5.0, 0.2])  # this run's table: c has
    config = MembersConfig(laplacian_weight=0.9)
    history = MemberHistory()
    for seed in (1, 2):
        _, history = rank([member(seed, names, scores)], names, before, config, [1], history)
    ranking, history = rank([member(3, names, scores)], names, now, config, [1], history)
    gate = carried_laplacian(history, names, config.half_life)
    np.testing.assert_allclose(gate, [(0.1 + 0.1 + 9) / 3, 5.0, (9 + 9 + 0.2) / 3])
    np.testing.assert_allclose(ranking.gate, gate)
    np.testing.assert_allclose(ranking.scores, fuse_laplacian(
        combine_kept(history, names, config.half_life, [1]).scores, gate, 0.9))
    # the carried mean puts a first, ahead of the members' b; this run's table alone would have put c
    assert ranking.order[0] == 0
    with pytest.raises(ParameterError, match="members.laplacian_weight"):
        MembersConfig(laplacian_weight=1.5)


def test_the_kept_order_fuses_by_reciprocal_rank():
    names = ["a", "b", "c", "d"]
    config = MembersConfig(laplacian_weight=0.5)
    laplacian = np.array([9.0, 5.0, 0.1, 7.0])
    _, history = rank([member(1, names, [4.0, 3, 2, 1])], names, laplacian, config, [1], MemberHistory())
    fused, history = rank([member(2, names, [4.0, 3, 2, 1])], names, laplacian, config, [1], history)
    members = combine_kept(history, names, config.half_life, [1]).scores
    np.testing.assert_allclose(fused.scores, fuse_laplacian(members, laplacian, 0.5))
    # the members' positions a 1, b 2, c 3, d 4; the Laplacian's a 4, b 2, c 1, d 3
    np.testing.assert_allclose(fused.scores, [0.5 / 61 + 0.5 / 64, 0.5 / 62 + 0.5 / 62, 0.5 / 63 + 0.5 / 61,
                                              0.5 / 64 + 0.5 / 63])
    assert fused.order.tolist() == [2, 1, 0, 3]


def test_members_settings_are_checked():
    with pytest.raises(ParameterError, match="members.half_life"):
        MembersConfig(half_life=0)
    with pytest.raises(ParameterError, match="members.kept"):
        MembersConfig(kept=0)
    assert math.isinf(MembersConfig(half_life=math.inf).half_life)


def test_another_methods_own_selection_is_what_a_run_of_it_alone_counts():
    names = ["a", "b", "c", "d"]
    new = [member(1, names, np.zeros(4), method="mcfs")]
    ranking, _ = rank(new, names, np.zeros(4), MembersConfig(), [1, 2], selections={1: np.array([2]),
                                                                                  2: np.array([2, 0])})
    np.testing.assert_array_equal(ranking.selection_frequency[1], [0, 0, 1, 0])
    np.testing.assert_array_equal(ranking.selection_frequency[2], [1, 0, 1, 0])


# -- the carried Laplacian scores ---------------------------------------------------------


def test_carried_laplacian_scores_are_the_weighted_mean_over_the_members_that_saw_each_feature():
    history = MemberHistory().add_run([member(1, ["a", "b", "c"], [3.0, 2, 1], "t", [0.2, 0.4, np.nan])], 64)
    history = history.add_run([member(2, ["b", "a", "d"], [3.0, 2, 1], "u", [0.8, 0.4, 0.5])], 64)
    names = ["a", "b", "c", "d", "e"]
    np.testing.assert_allclose(carried_laplacian(history, names, math.inf), [0.3, 0.6, np.inf, 0.5, np.inf])
    # half-life 1: the older member weighs 1/2
    np.testing.assert_allclose(carried_laplacian(history, names, 1.0)[:2],
                               [(0.5 * 0.2 + 0.4) / 1.5, (0.5 * 0.4 + 0.8) / 1.5])


def test_a_member_without_laplacian_scores_is_left_out_of_the_carried_ones():
    history = one_run(MemberHistory(), ["a", "b"], [1, 2], seed=1)  # recorded without them
    assert history.members[0].laplacian is None
    history = history.add_run([member(2, ["a", "b"], [1.0, 2], laplacian=[0.1, 0.7])], 64)
    np.testing.assert_allclose(carried_laplacian(history, ["a", "b"], math.inf), [0.1, 0.7])
    with pytest.raises(ValueError, match="2 feature names but 3 Laplacian scores"):
        member(3, ["a", "b"], [1.0, 2], laplacian=np.zeros(3))


def test_a_feature_without_variance_on_this_runs_graph_is_gated_last_whatever_the_members_said():
    names = ["a", "b", "c", "d"]
    config = MembersConfig()
    _, history = rank([member(1, names, [4.0, 3, 2, 1])], names, np.array([0.1, 0.2, 0.3, 0.4]), config, [2],
                      MemberHistory())
    now = np.array([np.inf, 0.2, 0.3, 0.4])  # "a" is constant on this run's table
    ranking, history = rank([member(2, names, [4.0, 3, 2, 1])], names, now, config, [2], history)
    assert ranking.gate[0] == np.inf and carried_laplacian(history, names, math.inf)[0] == pytest.approx(0.1)
    selection = SelectionConfig(k=2, k_values=(2,), quantile=0.5)
    chosen = gate(np.arange(4), ranking.gate, ranking.selection_frequency, selection, [2], names)
    assert 0 not in chosen[2].tolist()  # the members' mean (0.1) would have kept it


def test_the_ranking_hands_on_the_gate_it_fused_by():
    names = ["a", "b", "c", "d", "e", "f"]
    rng = np.random.default_rng(3)
    config = MembersConfig()
    history = MemberHistory()
    for seed in range(3):
        laplacian = rng.random(6)
        laplacian[seed] = np.inf  # this run's table has no variance in one feature
        ranking, history = rank([member(seed, names, rng.normal(size=6))], names, laplacian, config, [2, 4],
                                history)
    expected = np.where(np.isfinite(laplacian), carried_laplacian(history, names, config.half_life), np.inf)
    np.testing.assert_array_equal(ranking.gate, expected)
    np.testing.assert_allclose(ranking.scores, fuse_laplacian(
        combine_kept(history, names, config.half_life, [2, 4]).scores, ranking.gate, config.laplacian_weight))
    # another method's members keep no mean: the gate is this run's own scores
    other, _ = rank([member(1, names, rng.normal(size=6), method="ndfs")], names, laplacian, config, [2],
                    MemberHistory())
    np.testing.assert_array_equal(other.gate, laplacian)
