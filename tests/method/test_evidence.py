"""The evidence of a list: selection probabilities, the stable set, its bound, and complementary members."""

import math

import numpy as np
import pytest

from iclfs.method._config import MembersConfig, ParameterError
from iclfs.method._evidence import (
    COMPLEMENTARY,
    MB_MIN_MEMBERS,
    MEINSHAUSEN_BUHLMANN,
    STABLE_MIN,
    complementary_pairs_bound,
    evidence,
    list_evidence,
    meinshausen_buhlmann_bound,
    run_evidence,
    summary_line,
)
from iclfs.method._members import member_samples, plan_members
from iclfs.method._ranking import member_orders, selection_frequency


def test_meinshausen_buhlmann_bound_is_q_squared_over_2pi_minus_1_p():
    assert meinshausen_buhlmann_bound(50, 1000, 0.9) == pytest.approx(2500 / (0.8 * 1000))
    assert meinshausen_buhlmann_bound(10, 100, 0.75) == pytest.approx(100 / (0.5 * 100))
    assert math.isinf(meinshausen_buhlmann_bound(10, 100, 0.5))


def test_complementary_pairs_bound_is_theta_q_over_2pi_minus_1_and_needs_a_pair():
    assert complementary_pairs_bound(50, 1000, 0.6, pairs=3) == pytest.approx(0.05 * 50 / 0.2)
    assert math.isinf(complementary_pairs_bound(50, 1000, 0.6, pairs=0))
    assert math.isinf(complementary_pairs_bound(50, 1000, 0.4, pairs=3))


@pytest.mark.parametrize("q, p, threshold", [(0, 10, 0.9), (11, 10, 0.9), (5, 10, 1.5)])
def test_bounds_refuse_sizes_that_mean_nothing(q, p, threshold):
    with pytest.raises(ValueError, match="q|threshold"):
        meinshausen_buhlmann_bound(q, p, threshold)


def test_selection_probability_is_the_share_of_members_whose_first_q_hold_a_feature():
    scores = np.array([[4.0, 3.0, 2.0, 1.0], [4.0, 1.0, 3.0, 2.0], [1.0, 4.0, 3.0, 2.0], [4.0, 3.0, 1.0, 2.0]])
    probability = selection_frequency(member_orders(scores), 2)
    np.testing.assert_allclose(probability, [0.75, 0.75, 0.5, 0.0])


def test_stable_set_is_every_feature_at_or_above_the_threshold_highest_first():
    probability = np.array([0.2, 0.9, 1.0, 0.95, 0.9, 0.89, 0.0, 1.0])
    found = evidence(probability, q=3, members=20, threshold=0.9)
    assert found.stable.tolist() == [2, 7, 3, 1, 4]
    assert found.stable_mask().sum() == 5


def test_a_share_of_nine_in_ten_is_stable_at_ninety_percent_despite_float_sums():
    probability = np.full(12, sum([0.1] * 9))  # 0.8999999999999999
    assert len(evidence(probability, q=10, members=10, threshold=0.9).stable) == 12


def test_complementary_members_give_shah_samworths_bound_even_when_few():
    probability = np.zeros(1000)
    probability[:20] = 1.0
    found = evidence(probability, q=20, members=4, threshold=0.75, complementary=True)
    assert found.kind == COMPLEMENTARY
    assert found.bound == pytest.approx(0.02 * 20 / 0.5)
    assert found.claims
    assert "expected false selections among them <= 0.8 (complementary pairs)" in found.summary(range(20))


def test_few_random_members_give_no_bound_and_say_why():
    probability = np.zeros(1000)
    probability[:20] = 1.0
    found = evidence(probability, q=20, members=MB_MIN_MEMBERS - 1, threshold=0.9)
    assert found.bound is None and not found.claims
    assert "too few for Meinshausen-Bühlmann" in found.summary(range(20))
    found = evidence(probability, q=20, members=MB_MIN_MEMBERS, threshold=0.9)
    assert found.kind == MEINSHAUSEN_BUHLMANN and found.claims


def test_odd_complementary_members_or_other_subsamples_give_no_bound():
    probability = np.zeros(100)
    probability[:10] = 1.0
    assert "complementary pairs" in evidence(probability, 10, 3, 0.9, complementary=True).reason
    assert "half of the samples" in evidence(probability, 10, 40, 0.9, half_samples=False).reason


def test_a_threshold_at_or_below_one_half_is_undefined():
    probability = np.ones(100) * 0.6
    found = evidence(probability, q=60, members=40, threshold=0.5)
    assert found.bound is None and "not above 1/2" in found.reason


def test_a_bound_not_below_the_stable_sets_size_says_nothing():
    probability = np.zeros(100)
    probability[:10] = 1.0
    found = evidence(probability, q=50, members=40, threshold=0.6)  # bound 2500 / (0.2 * 100) = 125
    assert found.bound == pytest.approx(125.0)
    assert "says nothing" in found.reason and not found.claims


def test_a_stable_set_below_the_minimum_claims_nothing():
    probability = np.zeros(1000)
    probability[:STABLE_MIN - 1] = 1.0
    found = evidence(probability, q=10, members=16, threshold=0.9, complementary=True)
    assert not found.claims
    assert f"fewer than {STABLE_MIN} stable features: no evidence is claimed" in found.summary(range(10))


def test_the_summary_counts_the_stable_features_among_those_listed():
    probability = np.zeros(1000)
    probability[:12] = 0.95
    probability[12:50] = 0.5
    line = evidence(probability, q=50, members=24, threshold=0.9, complementary=True).summary(range(50))
    assert line.startswith("of the 50 listed, 12 are selected by >= 90 % of 24 members; expected false "
                           "selections among them <= 3.1")


def test_no_members_means_no_evidence():
    found = evidence(np.zeros(10), q=5, members=0)
    assert found.stable.size == 0 and found.bound is None
    assert "deterministic" in found.summary(range(5))
    assert found.as_dict()["claims"] is False


def test_evidence_as_dict_names_the_stable_features():
    probability = np.array([1.0, 0.0, 1.0])
    found = evidence(probability, q=2, members=2, threshold=0.9, complementary=True)
    assert found.as_dict(["a", "b", "c"])["stable"] == ["a", "c"]


@pytest.mark.parametrize("probability", [np.array([0.5, 1.5]), np.array([[0.5]]), np.array([np.nan, 0.1])])
def test_probabilities_that_are_not_shares_are_refused(probability):
    with pytest.raises(ValueError, match="selection probabilities"):
        evidence(probability, q=1, members=4)


def test_complementary_members_come_in_disjoint_halves_of_one_size():
    config = MembersConfig(per_run=6, sampling="complementary")
    plans = plan_members(101, config, seed=7)
    assert member_samples(101, config) == 50
    for first, second in zip(plans[::2], plans[1::2]):
        assert len(first.samples) == len(second.samples) == 50
        assert not set(first.samples) & set(second.samples)
    assert not np.array_equal(plans[0].samples, plans[2].samples)
    again = plan_members(101, config, seed=7)
    assert all(np.array_equal(a.samples, b.samples) for a, b in zip(plans, again))


def test_complementary_sampling_needs_an_even_number_of_members():
    with pytest.raises(ParameterError, match="members.per_run even"):
        MembersConfig(per_run=3, sampling="complementary")
    with pytest.raises(ParameterError, match="members.sampling"):
        MembersConfig(sampling="pairs")


def test_a_runs_evidence_takes_its_bound_from_the_members_settings():
    probability = np.zeros(1000)
    probability[:20] = 1.0
    pairs = MembersConfig(per_run=4, sampling="complementary", threshold=0.75)
    assert run_evidence(probability, 20, 4, pairs).kind == COMPLEMENTARY
    assert run_evidence(probability, 20, 16, MembersConfig(per_run=16)).kind == MEINSHAUSEN_BUHLMANN
    other = run_evidence(probability, 20, 16, MembersConfig(per_run=16, subsample=0.8))
    assert other.bound is None and "half of the samples" in other.reason
    carried = run_evidence(probability, 20, 8, pairs, carried_runs=1)
    assert carried.bound is None and "other tables" in carried.reason
    one = run_evidence(probability, 20, 1, MembersConfig())
    assert one.bound is None and "one member" in one.reason
    assert one.summary(range(20)).startswith("one member: the list is one run's")
    assert run_evidence(probability, 20, 0, MembersConfig()).members == 0


def test_the_threshold_setting_is_above_one_half():
    with pytest.raises(ParameterError, match="members.threshold"):
        MembersConfig(threshold=0.5)


def test_a_lists_evidence_counts_kept_members_of_earlier_runs_as_carried():
    from iclfs.method._ranking import Member, MemberHistory, rank

    rng = np.random.default_rng(0)
    names = [f"f{j}" for j in range(40)]
    config = MembersConfig(per_run=4, sampling="complementary", threshold=0.75)

    def members():
        return [Member(i, names, rng.normal(size=40)) for i in range(4)]

    ranking, history = rank(members(), names, np.ones(40), config, [10], MemberHistory(), fingerprint="a")
    first = list_evidence(ranking, 10, config)
    assert first.members == 4 and first.kind == COMPLEMENTARY  # this run's own pairs: the bound applies
    np.testing.assert_array_equal(first.selection_frequency, ranking.selection_frequency[10])
    ranking, _ = rank(members(), names, np.ones(40), config, [10], history, fingerprint="b")
    second = list_evidence(ranking, 10, config)
    assert second.members == 8 and "carried from earlier runs" in second.reason
    assert list_evidence(ranking, 10, config, has_members=False).members == 0
    own, _ = rank(members(), names, np.ones(40), config, [10])
    assert list_evidence(own, 10, config).members == 4


def test_the_summary_line_reads_the_same_from_the_kept_facts():
    probability = np.zeros(1000)
    probability[:12] = 0.95
    found = evidence(probability, q=50, members=24, threshold=0.9, complementary=True)
    listed = np.arange(50)
    assert summary_line(found.as_dict(), 12, 50) == found.summary(listed)
