"""Consensus ICLFS (docs/consensus.md): members, the combined order, agreement and k auto."""

from __future__ import annotations

import numpy as np
import pytest

from iclfs.io.synthetic import make_synthetic
from iclfs.method import chain
from iclfs.method.config import ConsensusConfig, RuntimeConfig, Settings, TrainingConfig, ViewConfig
from iclfs.method.config import ParameterError
from iclfs.method.consensus import combine, fuse_laplacian, member_jaccard, member_orders, top_k_frequency
from iclfs.method.k_choice import agreed_k, agreement
from iclfs.method.members import (
    member_settings,
    network_name,
    plan_members,
    state_dicts,
    total_epochs,
    train_members,
)
from iclfs.method.preprocessing import DataValidationError, invert, prepare
from iclfs.method.scores import embed, feature_scores, rank_score
from iclfs.method.stability import jaccard
from iclfs.method.training import train

QUIET = RuntimeConfig(device="cpu", progress=False, num_threads=1)
SMALL = ConsensusConfig(members=3, member_epochs=2, subsample=0.5)


@pytest.fixture(scope="module")
def A():
    table = make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
    return invert(prepare(table).standardized)


# -- combination, by hand ------------------------------------------------------


def test_mean_rank_equals_a_hand_computation():
    # three members, four features; ranks (1 = best) per member:
    scores = np.array([[0.9, 0.1, 0.5, 0.3],   # ranks 1 4 2 3
                       [0.2, 0.8, 0.6, 0.4],   # ranks 4 1 2 3
                       [0.7, 0.6, 0.5, 0.9]])  # ranks 2 3 4 1
    mean_rank = np.array([7, 8, 8, 7]) / 3
    expected = 1 - (mean_rank - 1) / 3
    np.testing.assert_allclose(combine(scores, "mean_rank"), expected)
    assert list(np.argsort(-combine(scores, "mean_rank"), kind="stable")) == [0, 3, 1, 2]


def test_mean_score_is_the_mean_of_min_max_scaled_scores():
    scores = np.array([[1.0, 3.0, 2.0], [10.0, 0.0, 5.0]])
    np.testing.assert_allclose(combine(scores, "mean_score"), [(0 + 1) / 2, (1 + 0) / 2, (0.5 + 0.5) / 2])


def test_one_member_keeps_its_raw_scores():
    scores = np.array([[0.3, 0.9, 0.1]])
    np.testing.assert_array_equal(combine(scores, "mean_rank"), scores[0])


def test_laplacian_fusion_mixes_the_two_rank_scores():
    scores = np.array([0.9, 0.5, 0.1])           # rank scores 1, 0.5, 0
    laplacian = np.array([0.8, 0.1, np.inf])     # lower is better: rank scores 0.5, 1, 0 (inf last)
    np.testing.assert_allclose(fuse_laplacian(scores, laplacian, 0.5), [0.75, 0.75, 0.0])
    np.testing.assert_array_equal(fuse_laplacian(scores, laplacian, 0.0), scores)


def test_reciprocal_rank_fusion_puts_the_heads_of_both_orders_first():
    scores = np.array([0.9, 0.5, 0.1])           # positions 1, 2, 3
    laplacian = np.array([0.8, 0.1, np.inf])     # lower is better: positions 2, 1, 3 (inf last)
    fused = fuse_laplacian(scores, laplacian, 0.25, "reciprocal_rank")
    np.testing.assert_allclose(fused, [0.75 / 61 + 0.25 / 62, 0.75 / 62 + 0.25 / 61, 0.75 / 63 + 0.25 / 63])
    # where the heads differ, the rank mean's head is the feature both place in the middle; reciprocal rank's
    # head is a head of one of the orders
    d = 201
    own = np.arange(d, 0, -1, dtype=float)  # feature 0 first, feature 200 last
    order = [j for j in range(d - 1, -1, -1) if j != 100]  # the Laplacian's order is the reverse ...
    order.insert(49, 100)  # ... but it puts feature 100, in the middle of the first, 50th
    ls = np.empty(d)
    ls[order] = np.arange(d)  # a lower Laplacian score is better
    middle = int(np.argmax(fuse_laplacian(own, ls, 0.5)))
    head = int(np.argmax(fuse_laplacian(own, ls, 0.5, "reciprocal_rank")))
    assert middle == 100 and head in (0, d - 1)
    np.testing.assert_array_equal(fuse_laplacian(scores, laplacian, 0.0, "reciprocal_rank"), scores)
    with pytest.raises(ValueError, match="unknown Laplacian fusion 'borda'"):
        fuse_laplacian(scores, laplacian, 0.5, "borda")


def test_rank_score_ties_go_to_the_smaller_index():
    np.testing.assert_allclose(rank_score(np.array([[1.0, 1.0, 0.0]])), [1.0, 0.5, 0.0])


# -- agreement ---------------------------------------------------------------------


def test_frequency_and_jaccard_of_member_top_k():
    orders = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [0, 2, 1, 3]])
    np.testing.assert_allclose(top_k_frequency(orders, 2), [1, 2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(top_k_frequency(orders, 2, weights=np.array([2.0, 1.0, 1.0])), [1, 3 / 4, 1 / 4, 0])
    # pairs: {0,1}&{0,1}=1, {0,1}&{0,2}=1/3, {0,1}&{0,2}=1/3
    assert member_jaccard(orders, 2) == pytest.approx((1 + 1 / 3 + 1 / 3) / 3)
    assert member_jaccard(orders[:1], 2) is None
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


# -- members ---------------------------------------------------------------------------


def test_one_member_is_the_runs_own_seed_on_every_sample():
    (plan,) = plan_members(40, ConsensusConfig(members=1), seed=42)
    assert plan.seed == 42 and plan.samples is None
    training, epochs = member_settings(40, TrainingConfig(epochs=7), ConsensusConfig(members=1))
    assert epochs == 7 and training == TrainingConfig(epochs=7)


def test_members_have_their_own_seeds_and_samples_and_keep_the_data_regime():
    plans = plan_members(1200, ConsensusConfig(members=4, subsample=0.5), seed=42)
    assert len({p.seed for p in plans}) == 4
    assert all(len(p.samples) == 600 and np.all(np.diff(p.samples) > 0) for p in plans)
    assert not np.array_equal(plans[0].samples, plans[1].samples)
    assert [p.seed for p in plan_members(1200, ConsensusConfig(members=4, subsample=0.5), 42)] == [p.seed for p in plans]
    training, epochs = member_settings(1200, TrainingConfig(), ConsensusConfig(members=4, member_epochs=3))
    assert training.regime == "large" and epochs == 3  # 600 samples each, the regime of all 1200


def test_members_differ_and_the_same_seed_gives_the_same_consensus(A):
    first = train_members(A, TrainingConfig(), ViewConfig(), QUIET, SMALL, seed=5)
    again = train_members(A, TrainingConfig(), ViewConfig(), QUIET, SMALL, seed=5)
    other = train_members(A, TrainingConfig(), ViewConfig(), QUIET, SMALL, seed=6)
    scores = np.array([m.scores["z_norm"] for m in first])
    assert len(first) == 3 and all(len(m.results[0].history) == 2 for m in first)
    orders = member_orders(scores)
    assert not np.array_equal(orders[0], orders[1]) and not np.array_equal(orders[1], orders[2])
    np.testing.assert_array_equal(scores, np.array([m.scores["z_norm"] for m in again]))
    assert not np.array_equal(scores, np.array([m.scores["z_norm"] for m in other]))


def test_the_chain_orders_by_the_consensus_of_the_members(A):
    table = make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
    settings = Settings(runtime=QUIET, consensus=SMALL).with_overrides("selection.k=5,selection.k_values=[5,10]")
    result = chain.run(table, settings)
    scores = np.array([m.scores["z_norm"] for m in result.members])
    expected = fuse_laplacian(combine(scores, "mean_rank"), result.laplacian_scores, SMALL.laplacian_weight)
    np.testing.assert_allclose(result.consensus.scores, expected)
    assert set(result.consensus.frequency) == {5, 10} and result.k == 5
    assert result.selected.shape == (5,)
    again = chain.run(table, settings)
    np.testing.assert_array_equal(result.selected, again.selected)


def test_k_auto_picks_a_k_of_the_grid_and_explains_it():
    table = make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
    settings = Settings(runtime=QUIET, consensus=SMALL).with_overrides("selection.k=auto,selection.k_values=[5,10,40]")
    result = chain.run(table, settings)
    assert result.k in (5, 10) and result.k_reason  # 40 = d is never chosen
    assert "k = 40" not in result.k_reason


def test_one_member_is_the_papers_run_whatever_the_laplacian_weight():
    """The Laplacian fusion belongs to combining members: a single run keeps its raw score."""
    table = make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
    single = "consensus.members=1,training.epochs=2,selection.k=5,selection.k_values=[5]"
    fused = chain.run(table, Settings(runtime=QUIET).with_overrides(single + ",consensus.laplacian_weight=0.5"))
    plain = chain.run(table, Settings(runtime=QUIET).with_overrides(single + ",consensus.laplacian_weight=0"))
    np.testing.assert_array_equal(fused.consensus.scores, fused.members[0].scores["z_norm"])
    np.testing.assert_array_equal(fused.consensus.order, plain.consensus.order)


# -- feature blocks ----------------------------------------------------------------------------

BLOCKS = ConsensusConfig(members=2, member_epochs=2, subsample=0.5, feature_blocks=3)


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
    plain = plan_members(40, ConsensusConfig(members=2, subsample=0.5), seed=42)
    assert [p.seed for p in plans] == [p.seed for p in plain]
    assert all(np.array_equal(p.samples, q.samples) for p, q in zip(plans, plain))


def test_blocks_need_the_number_of_features():
    with pytest.raises(ValueError, match="number of features"):
        plan_members(40, BLOCKS, seed=42)


def test_a_member_scores_each_feature_by_its_rank_within_its_block(A):
    (member,) = train_members(A, TrainingConfig(), ViewConfig(), QUIET, BLOCKS.replace(members=1), seed=7)
    assert len(member.results) == 3 and total_epochs([member]) == 3 * 100
    for block, seed in member.plan.networks():
        # one network, trained apart on the block's rows alone, gives the same scores
        result = train(np.ascontiguousarray(A[block]), TrainingConfig(epochs=100), ViewConfig(), QUIET, seed)
        expected = rank_score(feature_scores(*embed(result.model, np.ascontiguousarray(A[block])))["z_norm"])
        np.testing.assert_allclose(member.scores["z_norm"][block], expected)
        assert sorted(member.scores["z_norm"][block]) == pytest.approx(np.linspace(0, 1, len(block)))
    assert list(state_dicts([member])) == [f"member_0_block_{b}" for b in range(3)]
    assert network_name(member, 2) == "member_0_block_2"


def test_a_consensus_of_feature_blocks_through_the_chain(tiny_table):
    settings = Settings(runtime=QUIET, consensus=BLOCKS).with_overrides("selection.k=5,selection.k_values=[5,10]")
    result = chain.run(tiny_table, settings)
    scores = np.array([m.scores["z_norm"] for m in result.members])
    assert scores.shape == (2, 40) and np.all(np.isfinite(scores))
    np.testing.assert_allclose(result.consensus.scores, combine(scores, "mean_rank"))
    assert [len(m.results) for m in result.members] == [3, 3]
    assert all(r.history and len(r.history) == 2 for m in result.members for r in m.results)
    np.testing.assert_array_equal(result.selected, chain.run(tiny_table, settings).selected)


def test_too_few_features_for_the_blocks_is_refused_before_training(tiny_table):
    settings = Settings(runtime=QUIET).with_overrides("consensus.feature_blocks=6,selection.k=5,selection.k_values=[5]")
    with pytest.raises(DataValidationError, match=r"40 feature\(s\) cannot be dealt into consensus.feature_blocks = 6.*"
                                                  r"at most 5"):
        chain.prepare_checked(tiny_table, settings)


def test_the_published_stream_refuses_feature_blocks():
    with pytest.raises(ParameterError, match="feature_blocks 1"):
        Settings().with_overrides("views.stream=published,consensus.feature_blocks=2")
