"""ICLFSSelector: the scikit-learn face of the method (tiny data, 1-2 epochs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from iclfs import chain
from iclfs.io._synthetic import make_synthetic
from iclfs.method._config import (
    SECTIONS,
    LaplacianConfig,
    MembersConfig,
    ParameterError,
    RankingConfig,
    RuntimeConfig,
    SelectionConfig,
    Settings,
    TrainingConfig,
    ViewConfig,
)
from iclfs.method._laplacian import laplacian_scores
from iclfs.method._lgrc import lgrc_select
from iclfs.method._preprocessing import FeatureTable, invert, prepare
from iclfs.method._ranking import MemberHistory, carried_laplacian, combine_kept, fuse_laplacian, member_seed
from iclfs.method._scores import embed, feature_order, feature_scores, rank_positions
from iclfs.method._training import train
from iclfs._selectors import EXPECTED_FAILED_CHECKS, ICLFSSelector

K = 5
# members is passed explicitly: the default consensus is not decided yet.
FAST = {"epochs": 2, "members": 1, "device": "cpu"}
CONSENSUS = {"members": 3, "epochs": 1, "settings": {"members": {"subsample": 0.5}}, "device": "cpu"}


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Tiny tensors: one thread is fastest and avoids OpenMP spin contention."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def table():
    return make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)


@pytest.fixture(scope="module")
def frame(table):
    return pd.DataFrame(table.X, columns=table.feature_names)


@pytest.fixture(scope="module")
def fitted(table):
    return ICLFSSelector(K, **FAST).fit(table.X)


@pytest.fixture(scope="module")
def consensus(table):
    return ICLFSSelector(K, random_state=5, **CONSENSUS).fit(table.X)


def core_chain(X, k, *, epochs=2, seed=42, score="z_norm", use_lgrc=True, alpha=1.5, quantile=0.75,
               n_neighbors=3):
    """The single run's selection computed by calling the method's functions directly."""
    prepared = prepare(FeatureTable(X=X))
    A = invert(prepared.standardized)
    result = train(A, TrainingConfig(epochs=epochs), ViewConfig(), RuntimeConfig(device="cpu", progress=False),
                   seed=seed)
    h, z = embed(result.model, A)
    scores = feature_scores(h, z)[score]
    order = feature_order(scores)
    ls = laplacian_scores(prepared.standardized, n_neighbors=n_neighbors)
    selected = lgrc_select(order, ls, k, alpha=alpha, quantile=quantile) if use_lgrc else order[:k]
    return scores, order, ls, selected


def rfe_ranking(order, selected):
    """RFE's ranking_: 1 for every selected feature, then 2, 3, ... for the rest in their order."""
    ranks = np.ones(len(order), dtype=np.int64)
    rest = [j for j in order if j not in set(np.asarray(selected).tolist())]
    ranks[rest] = np.arange(2, len(rest) + 2)
    return ranks


# -- shapes, attributes, mask ------------------------------------------------


def test_fit_transform_shapes_and_attributes(fitted, table):
    n, d = table.X.shape
    assert fitted.transform(table.X).shape == (n, K)
    assert fitted.n_features_in_ == d
    assert fitted.n_features_to_select_ == K
    assert fitted.scores_.shape == (d,)
    assert fitted.laplacian_scores_.shape == (d,)
    assert sorted(fitted.feature_order_.tolist()) == list(range(d))
    assert sorted(fitted.ranking_.tolist()) == [1] * K + list(range(2, d - K + 2))
    assert fitted.member_ranks_.shape == (1, d)
    assert fitted.selection_frequency_.shape == (d,)
    assert fitted.selected_features_.shape == (K,)
    assert fitted.k_reason_ == f"selection.k = {K}"
    assert len(fitted.training_log_) == 2
    assert {"member", "block", "epoch", "loss"} <= set(fitted.training_log_[0])
    assert {row["member"] for row in fitted.training_log_} == {0}
    assert len(fitted.models_) == 1 and next(fitted.models_[0].parameters()).device.type == "cpu"
    assert not fitted.models_[0].training  # eval mode
    assert not hasattr(fitted, "feature_names_in_")
    for gone in ("feature_scores_", "all_feature_scores_", "model_", "training_history_", "history_"):
        assert not hasattr(fitted, gone)
    # fit_transform equals fit + transform; the selected columns, best first in selected_features_.
    np.testing.assert_array_equal(
        clone(fitted).fit_transform(table.X), table.X[:, np.sort(fitted.selected_features_)]
    )


def test_support_mask_matches_selected_features(fitted):
    mask = fitted.get_support()
    assert mask.dtype == bool and mask.sum() == K
    np.testing.assert_array_equal(mask, fitted.support_)
    np.testing.assert_array_equal(np.flatnonzero(mask), np.sort(fitted.selected_features_))
    np.testing.assert_array_equal(fitted.get_support(indices=True), np.sort(fitted.selected_features_))


def test_ranking_follows_rfe_convention(fitted):
    """ranking_ == 1 exactly on the selection; then 2, 3, ... in the order of feature_order_."""
    np.testing.assert_array_equal(fitted.ranking_ == 1, fitted.support_)
    np.testing.assert_array_equal(fitted.ranking_, rfe_ranking(fitted.feature_order_, fitted.selected_features_))
    rest = [j for j in fitted.feature_order_ if not fitted.support_[j]]
    np.testing.assert_array_equal(fitted.ranking_[rest], np.arange(2, len(rest) + 2))


def test_scores_rank_the_features(fitted):
    """scores_ is the score feature_order_ sorts by, higher first, ties by index."""
    assert np.isfinite(fitted.scores_).all()
    np.testing.assert_array_equal(fitted.feature_order_, feature_order(fitted.scores_))
    assert (np.diff(fitted.scores_[fitted.feature_order_]) <= 0).all()
    # one member: its own rank of every feature is the order's
    np.testing.assert_array_equal(fitted.member_ranks_[0], rank_positions(fitted.feature_order_))


def test_feature_names_out(fitted, frame):
    on_frame = ICLFSSelector(K, **FAST).fit(frame)
    np.testing.assert_array_equal(on_frame.feature_names_in_, frame.columns.to_numpy())
    chosen = np.sort(on_frame.selected_features_)
    np.testing.assert_array_equal(on_frame.get_feature_names_out(), frame.columns[chosen].to_numpy())
    # RFE's convention: the columns ranked 1 are the selected ones
    np.testing.assert_array_equal(frame.columns[on_frame.ranking_ == 1].to_numpy(), on_frame.get_feature_names_out())
    # numpy input: sklearn's x0, x1, ... names
    np.testing.assert_array_equal(
        fitted.get_feature_names_out(), [f"x{j}" for j in np.sort(fitted.selected_features_)]
    )
    # same data and seed, same choice whether it came as a frame or an array
    np.testing.assert_array_equal(on_frame.selected_features_, fitted.selected_features_)


def test_set_output_pandas(frame, table):
    selector = ICLFSSelector(K, **FAST).set_output(transform="pandas")
    out = selector.fit_transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(selector.get_feature_names_out())
    pd.testing.assert_frame_equal(out, frame[out.columns])
    out_np = ICLFSSelector(K, **FAST).set_output(transform="pandas").fit(table.X).transform(table.X)
    assert isinstance(out_np, pd.DataFrame) and out_np.columns[0].startswith("x")


@pytest.mark.parametrize("final", [LogisticRegression(), KMeans(n_clusters=2, n_init=1, random_state=0)],
                         ids=["logistic", "kmeans"])
def test_inside_pipeline(frame, table, final):
    pipe = make_pipeline(StandardScaler(), ICLFSSelector(K, **FAST), final).set_output(transform="pandas")
    pipe.fit(frame, table.y)
    assert pipe.predict(frame).shape == (len(frame),)
    names = pipe[:-1].get_feature_names_out()
    assert len(names) == K and set(names) <= set(frame.columns)


# -- reproducibility and agreement with the method ------------------------------


def test_same_random_state_same_selection(table):
    a = ICLFSSelector(K, random_state=7, **FAST).fit(table.X)
    b = ICLFSSelector(K, random_state=7, **FAST).fit(table.X, y=table.y)  # y is ignored
    np.testing.assert_array_equal(a.selected_features_, b.selected_features_)
    np.testing.assert_array_equal(a.ranking_, b.ranking_)
    np.testing.assert_array_equal(a.feature_order_, b.feature_order_)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    assert a.seed_ == b.seed_ == 7


@pytest.mark.parametrize("settings, core", [
    (None, {}),
    ({"ranking": {"score": "harmonic"}, "selection": {"alpha": 2.0, "quantile": 0.5}},
     {"score": "harmonic", "alpha": 2.0, "quantile": 0.5}),
], ids=["defaults", "harmonic"])
def test_selection_equals_core_chain(table, settings, core):
    selector = ICLFSSelector(K, random_state=11, **FAST, settings=settings).fit(table.X)
    scores, order, ls, selected = core_chain(table.X, K, seed=11, **core)
    np.testing.assert_allclose(selector.scores_, scores)
    np.testing.assert_array_equal(selector.feature_order_, order)
    np.testing.assert_array_equal(selector.laplacian_scores_, ls)
    np.testing.assert_array_equal(selector.selected_features_, selected)
    np.testing.assert_array_equal(selector.ranking_, rfe_ranking(order, selected))


def test_consensus_equals_the_chain_run(table, consensus):
    settings = Settings(
        seed=5, runtime=RuntimeConfig(device="cpu", progress=False),
        members=MembersConfig(per_run=3, epochs=1, subsample=0.5, carry=False),
        selection=SelectionConfig(k=K, k_values=(K,)))
    result = chain.run(FeatureTable(X=table.X), settings)
    np.testing.assert_allclose(consensus.scores_, result.ranking.scores)
    np.testing.assert_array_equal(consensus.feature_order_, result.ranking.order)
    np.testing.assert_array_equal(consensus.selected_features_, result.selected)
    np.testing.assert_array_equal(consensus.laplacian_scores_, result.laplacian_scores)
    np.testing.assert_array_equal(consensus.selection_frequency_, result.ranking.selection_frequency[K])
    for row, order in zip(consensus.member_ranks_, result.ranking.member_orders, strict=True):
        np.testing.assert_array_equal(row, rank_positions(order))
    assert consensus.k_reason_ == result.k_reason


def test_a_consensus_has_one_rank_row_per_member_and_its_members_differ(table, consensus):
    d = table.X.shape[1]
    assert consensus.member_ranks_.shape == (3, d)
    for row in consensus.member_ranks_:
        assert sorted(row.tolist()) == list(range(1, d + 1))  # each a ranking, 1 = best
    # different seeds and samples: different rankings
    assert len({tuple(row) for row in consensus.member_ranks_}) == 3
    assert len(consensus.models_) == 3
    assert [row["member"] for row in consensus.training_log_] == [0, 1, 2]  # 1 epoch each
    # every member contributes its top k to the frequencies
    assert consensus.selection_frequency_.sum() == pytest.approx(K)
    assert set(np.round(3 * consensus.selection_frequency_).astype(int)) <= {0, 1, 2, 3}
    np.testing.assert_array_equal(consensus.ranking_ == 1, consensus.support_)


def test_feature_blocks_train_one_network_per_block_and_equal_the_chain_run(table):
    selector = ICLFSSelector(K, members=2, epochs=1, device="cpu",
                             settings={"members": {"subsample": 1.0, "feature_blocks": 2}}).fit(table.X)
    assert len(selector.models_) == 4  # 2 members x 2 blocks
    assert [(row["member"], row["block"]) for row in selector.training_log_] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert selector.member_ranks_.shape == (2, table.X.shape[1])
    settings = Settings(seed=42, runtime=RuntimeConfig(device="cpu", progress=False),
                        members=MembersConfig(per_run=2, epochs=1, subsample=1.0, feature_blocks=2, carry=False),
                        selection=SelectionConfig(k=K, k_values=(K,)))
    result = chain.run(FeatureTable(X=table.X), settings)
    np.testing.assert_array_equal(selector.selected_features_, result.selected)
    with pytest.raises(ValueError, match="feature_blocks"):
        ICLFSSelector(K, **FAST, settings={"members": {"feature_blocks": table.X.shape[1]}}).fit(table.X)


def test_auto_chooses_k_from_the_members_agreement(table):
    selector = ICLFSSelector("auto", **CONSENSUS).fit(table.X)
    grid = ICLFSSelector._auto_grid(table.X.shape[1])
    assert selector.n_features_to_select_ in grid
    assert selector.k_reason_ and "k = " in selector.k_reason_
    assert selector.transform(table.X).shape == (40, selector.n_features_to_select_)
    assert int((selector.ranking_ == 1).sum()) == selector.n_features_to_select_


def test_fit_leaves_torch_global_state_alone(table):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ICLFSSelector(K, settings={"runtime": {"num_threads": 2}}, **FAST).fit(table.X)
    np.testing.assert_array_equal(torch.rand(3), expected)
    assert torch.get_num_threads() == 1


def test_random_state_none_draws_a_seed_from_numpy(table):
    np.random.seed(0)
    a = ICLFSSelector(K, random_state=None, **FAST).fit(table.X)
    np.random.seed(0)
    b = ICLFSSelector(K, random_state=None, **FAST).fit(table.X)
    assert a.seed_ == b.seed_
    np.testing.assert_array_equal(a.selected_features_, b.selected_features_)


def test_random_state_none_draws_a_fresh_seed_at_every_fit(table):
    selector = ICLFSSelector(K, random_state=None, **{**FAST, "epochs": 1})
    first = selector.fit(table.X).seed_
    second = selector.fit(table.X).seed_
    assert first != second


# -- options ------------------------------------------------------------------


def test_without_lgrc_selects_first_k_of_ranking(table):
    selector = ICLFSSelector(K, use_lgrc=False, **FAST).fit(table.X)
    np.testing.assert_array_equal(selector.selected_features_, selector.feature_order_[:K])
    np.testing.assert_array_equal(selector.ranking_[selector.feature_order_],
                                  [1] * K + list(range(2, table.X.shape[1] - K + 2)))
    assert np.array_equal(selector.feature_order_, core_chain(table.X, K, use_lgrc=False)[1])


@pytest.mark.parametrize("fraction, k", [(0.25, 10), (1.0, 40), (0.01, 1)])
def test_float_n_features_to_select_is_a_fraction(table, fraction, k):
    selector = ICLFSSelector(fraction, use_lgrc=False, **FAST).fit(table.X)
    assert selector.n_features_to_select_ == k
    assert selector.transform(table.X).shape == (40, k)


# -- bad input ----------------------------------------------------------------


def test_nan_is_refused_with_its_position(table):
    X = table.X.copy()
    X[3, 7] = np.nan
    with pytest.raises(ValueError, match=r"1 NaN .*row 3, column 7"):
        ICLFSSelector(K, **FAST).fit(X)


def test_k_larger_than_n_features_is_refused(table):
    with pytest.raises(ValueError, match=r"n_features_to_select=41 is larger than the number of features in X \(40\)"):
        ICLFSSelector(41, **FAST).fit(table.X)


def test_non_numeric_column_is_named(frame):
    bad = frame.assign(colour=["red", "blue"] * 20)
    with pytest.raises(ValueError, match=r"not numeric: 'colour'"):
        ICLFSSelector(K, **FAST).fit(bad)


@pytest.mark.parametrize(
    "params, X, message",
    [
        ({"n_features_to_select": 0}, None, "n_features_to_select must be >= 1"),
        ({"n_features_to_select": 1.5}, None, r"must be\s+in \(0, 1\]"),
        ({"n_features_to_select": K, "settings": {"ranking": {"score": "norm"}}}, None,
         r"settings=\{'ranking': \{'score': \.\.\.\}\}: the value 'norm' is invalid: expected one of z_norm"),
        ({"n_features_to_select": K, "settings": {"selection": {"alpha": 0.5}}}, None,
         r"settings=\{'selection': \{'alpha': \.\.\.\}\}: the value 0.5 is invalid: expected a finite number >= 1"),
        ({"n_features_to_select": K, "settings": {"training": {"lr": 1}}}, None,
         r"unknown parameter\(s\) settings\['training'\].lr; known keys of settings\['training'\]: .*learning_rate"),
        ({"n_features_to_select": K, "settings": {"training": {"num_threads": 1}}}, None,
         r"unknown parameter\(s\) settings\['training'\].num_threads"),
        ({"n_features_to_select": K, "settings": {"members": {"half_life": float("nan")}}}, None,
         r"settings=\{'members': \{'half_life': \.\.\.\}\}: the value nan is invalid"),
        ({"n_features_to_select": K, "members": 0}, None, r"ICLFSSelector\(members=\.\.\.\): the value 0 is invalid"),
        ({"n_features_to_select": K, "members": 2.5}, None, r"members must be an int >= 1, got 2.5"),
        ({"n_features_to_select": K, "epochs": "5"}, None, r"epochs must be an int >= 1 or None, got '5'"),
        ({"n_features_to_select": "auto"}, None,
         r"ICLFSSelector\(n_features_to_select=\.\.\.\) 'auto' .*needs ICLFSSelector\(members=\.\.\.\) 2 or more"),
        ({"n_features_to_select": 1}, np.ones((3, 5)), r"3 sample\(s\).*at least 4"),
        ({"n_features_to_select": 1}, np.ones((10, 1)), r"1 feature\(s\).*at least 2"),
        ({"n_features_to_select": 1, "settings": {"laplacian": {"n_neighbors": 6}}},
         np.random.default_rng(0).random((6, 4)), r"n_neighbors=6 needs more samples.*settings=\{'laplacian'"),
    ],
    ids=["k0", "fraction>1", "score", "alpha", "unknown-key", "threads-are-runtime", "half-life-nan", "members0",
         "members-float", "epochs-str", "auto-one-member", "3-samples", "1-feature", "n_neighbors"],
)
def test_bad_parameters_and_shapes_are_refused(table, params, X, message):
    with pytest.raises(ValueError, match=message):
        ICLFSSelector(**{**FAST, **params}).fit(table.X if X is None else X)


# -- settings: every other setting, by section ------------------------------------


def test_at_most_eight_parameters_and_twelve_params():
    params = ICLFSSelector().get_params()
    assert len(params) <= 12
    assert set(params) == {"n_features_to_select", "members", "epochs", "use_lgrc", "random_state", "device",
                           "progress", "settings"}


@pytest.mark.parametrize("old", ["member_epochs", "subsample", "schedule", "ranking_score", "alpha", "quantile",
                                 "n_neighbors", "half_life", "max_members", "history_rule", "hold", "admit",
                                 "history_laplacian", "history_laplacian_weight", "history_laplacian_fusion",
                                 "training_options", "view_options", "consensus_options", "runtime_options"])
def test_old_parameters_are_gone(old):
    with pytest.raises(TypeError, match=old):
        ICLFSSelector(K, **{old: 1})


@pytest.mark.parametrize("section, guess",
                         [("trainig", "training"), ("member", "members"), ("selections", "selection")])
def test_an_unknown_section_is_refused_with_a_did_you_mean_and_the_sections(table, section, guess):
    with pytest.raises(ValueError, match=rf"settings has no section '{section}' \(did you mean '{guess}'\?\)") as err:
        ICLFSSelector(K, **FAST, settings={section: {}}).fit(table.X)
    assert all(name in str(err.value) for name in SECTIONS)


def test_an_old_section_is_refused_naming_the_sections(table):
    with pytest.raises(ValueError, match="settings has no section 'consensus'; the sections are training, runtime"):
        ICLFSSelector(K, **FAST, settings={"consensus": {"members": 3}}).fit(table.X)


@pytest.mark.parametrize("params, settings, message", [
    ({}, {"members": {"per_run": 3}},
     r"settings\['members'\] must not set per_run: use ICLFSSelector\(members=\.\.\.\)"),
    ({}, {"selection": {"k": 5}},
     r"settings\['selection'\] must not set k: use ICLFSSelector\(n_features_to_select=\.\.\.\)"),
    ({}, {"selection": {"k_values": [5, 10]}}, r"must not set k_values: use ICLFSSelector\(n_features_to_select="),
    ({}, {"selection": {"use_lgrc": False}}, r"must not set use_lgrc: use ICLFSSelector\(use_lgrc=\.\.\.\)"),
    ({}, {"training": {"epochs": 5}}, r"settings\['training'\] must not set epochs: use ICLFSSelector\(epochs="),
    ({"members": 2}, {"members": {"epochs": 5}}, r"must not set epochs: use ICLFSSelector\(epochs=\.\.\.\)"),
    ({}, {"runtime": {"device": "cpu"}}, r"settings\['runtime'\] must not set device: use ICLFSSelector\(device="),
    ({}, {"runtime": {"progress": True}}, r"must not set progress: use ICLFSSelector\(progress=\.\.\.\)"),
    ({}, {"members": {"carry": True}}, r"must not set carry: use fit .* or partial_fit"),
], ids=["per_run", "k", "k_values", "use_lgrc", "training-epochs", "members-epochs", "device", "progress", "carry"])
def test_a_key_the_class_sets_is_refused_naming_the_parameter_to_use(table, params, settings, message):
    with pytest.raises(ParameterError, match=message):
        ICLFSSelector(K, **{**FAST, **params}, settings=settings).fit(table.X)


@pytest.mark.parametrize("settings, error", [([("training", {})], "settings must be a dict of sections"),
                                             ({"training": 3}, r"settings\['training'\] must be a dict")])
def test_settings_that_are_not_dicts_are_refused(table, settings, error):
    with pytest.raises(TypeError, match=error):
        ICLFSSelector(K, **FAST, settings=settings).fit(table.X)


def test_epochs_is_training_epochs_for_one_member_and_members_epochs_for_several(table):
    one = ICLFSSelector(K, members=1, epochs=3, device="cpu")
    several = ICLFSSelector(K, members=2, epochs=3, device="cpu")
    assert one._settings(40, 1).training.epochs == 3 and one._settings(40, 1).members.epochs == 25
    assert several._settings(40, 1).members.epochs == 3 and several._settings(40, 1).training.epochs == 100
    # None keeps the defaults, and the settings the class leaves alone pass through
    given = {"training": {"learning_rate": 5e-3}, "members": {"half_life": 8, "kept": 4}, "views": {"heavy_keep": 0.5},
             "runtime": {"num_threads": 1}, "laplacian": {"n_neighbors": 5}, "ranking": {"score": "h_norm"},
             "selection": {"alpha": 2.0, "quantile": 0.5}}
    built = ICLFSSelector(K, settings=given)._settings(40, 9)
    assert built.training.epochs == 100 and built.members.epochs == 25 and built.seed == 9
    assert (built.training.learning_rate, built.members.half_life, built.members.kept, built.views.heavy_keep,
            built.runtime.num_threads, built.laplacian.n_neighbors, built.ranking.score, built.selection.alpha,
            built.selection.quantile) == (5e-3, 8, 4, 0.5, 1, 5, "h_norm", 2.0, 0.5)
    assert (built.selection.k, built.selection.k_values, built.members.per_run, built.members.carry) == (
        K, (K,), 1, False)
    assert ICLFSSelector(K, settings=given).get_params()["settings"] is given  # kept as given (clone-safe)


def test_fit_with_settings_equals_the_chain_run_with_the_same_settings(table):
    given = {"training": {"learning_rate": 5e-3}, "laplacian": {"n_neighbors": 5}, "ranking": {"score": "h_norm"},
             "selection": {"alpha": 2.0, "quantile": 0.5}, "runtime": {"num_threads": 1}}
    selector = ICLFSSelector(K, random_state=11, **FAST, settings=given).fit(table.X)
    settings = Settings(seed=11, training=TrainingConfig(epochs=2, learning_rate=5e-3),
                        runtime=RuntimeConfig(device="cpu", progress=False, num_threads=1),
                        ranking=RankingConfig(score="h_norm"), laplacian=LaplacianConfig(n_neighbors=5),
                        selection=SelectionConfig(k=K, k_values=(K,), alpha=2.0, quantile=0.5),
                        members=MembersConfig(per_run=1, carry=False))
    result = chain.run(FeatureTable(X=table.X), settings)
    np.testing.assert_array_equal(selector.scores_, result.ranking.scores)
    np.testing.assert_array_equal(selector.feature_order_, result.ranking.order)
    np.testing.assert_array_equal(selector.laplacian_scores_, result.laplacian_scores)
    np.testing.assert_array_equal(selector.selected_features_, result.selected)
    assert selector.n_features_to_select_ == result.k and selector.k_reason_ == result.k_reason
    assert selector.seed_ == result.continuation.seed == 11


# -- carrying members: partial_fit ----------------------------------------------


def carried_rows(calls: int) -> list[np.ndarray]:
    """Each call's samples: 36 of the 40, drawn afresh."""
    return [np.sort(np.random.default_rng(r).choice(40, size=36, replace=False)) for r in range(calls)]


def test_partial_fit_starts_as_fit_and_carries_each_calls_member(table):
    X = np.asarray(table.X)
    rows = carried_rows(3)
    carried = ICLFSSelector(K, random_state=7, settings={"members": {"half_life": 2.0, "laplacian_weight": 0.0}},
                            **FAST)
    carried.partial_fit(X[rows[0]])
    alone = ICLFSSelector(K, random_state=7, **FAST).fit(X[rows[0]])
    np.testing.assert_array_equal(carried.selected_features_, alone.selected_features_)  # the first call is fit
    np.testing.assert_array_equal(carried.scores_, alone.scores_)  # its scores too, not their ranks
    assert carried.n_members_ == 1 and carried.seed_ == 7
    for r in (1, 2):
        carried.partial_fit(X[rows[r]])
    assert carried.n_members_ == 3 and carried.history_.runs == 3
    assert carried.seed_ == member_seed(7, 2)
    assert [m.seed for m in carried.history_.members] == [7, member_seed(7, 1), member_seed(7, 2)]
    assert carried.member_ranks_.shape == (3, X.shape[1])
    assert len(carried.training_log_) == 2  # this call's network only
    # the combined order is the history's, through the same core the pipelines use
    history = MemberHistory()
    for r in range(3):
        history = history.add_run([m for m in carried.history_.members if m.run == r], 64)
    combined = combine_kept(history, list(history.members[0].feature_names), 2.0, [K])
    np.testing.assert_array_equal(carried.feature_order_, combined.order)
    np.testing.assert_allclose(carried.selection_frequency_, combined.selection_frequency[K])
    assert np.all((carried.selection_frequency_ >= 0) & (carried.selection_frequency_ <= 1))


@pytest.mark.parametrize("settings", [None, {"members": {"half_life": 2.0, "kept": 2}},
                                      {"selection": {"alpha": 2.0}, "laplacian": {"n_neighbors": 5}}],
                         ids=["defaults", "half-life-kept", "selection"])
def test_partial_fit_equals_the_chain_run_with_history_and_previous(table, settings):
    """Each call is chain.run on the history so far, its lists held to the last call's (``previous``)."""
    X = np.asarray(table.X)
    selector = ICLFSSelector(K, random_state=7, **FAST, settings=settings)
    given = settings or {}
    config = Settings(seed=7, training=TrainingConfig(epochs=2), runtime=RuntimeConfig(device="cpu", progress=False),
                      members=MembersConfig(per_run=1, carry=True, **given.get("members", {})),
                      laplacian=LaplacianConfig(**given.get("laplacian", {})),
                      selection=SelectionConfig(k=K, k_values=(K,), **given.get("selection", {})))
    history, previous = MemberHistory(), None
    for r, rows in enumerate(carried_rows(3)):
        selector.partial_fit(X[rows])
        result = chain.run(FeatureTable(X=X[rows]), config, history=history, previous=previous)
        assert result.continuation.holds == (r > 0)
        np.testing.assert_array_equal(selector.scores_, result.ranking.scores)
        np.testing.assert_array_equal(selector.feature_order_, result.ranking.order)
        np.testing.assert_array_equal(selector.selected_features_, result.selected)
        np.testing.assert_array_equal(selector.laplacian_scores_, result.laplacian_scores)
        np.testing.assert_array_equal(selector.selection_frequency_, result.ranking.selection_frequency[K])
        assert selector.seed_ == result.continuation.seed
        assert [m.seed for m in selector.history_.members] == [m.seed for m in result.history.members]
        assert selector.n_members_ == len(result.history.members) == min(r + 1, config.members.kept)
        assert selector._lists == result.lists
        history, previous = result.history, result.lists


def test_partial_fit_fuses_the_laplacian_rank_into_the_carried_order_with_its_weight(table):
    X = np.asarray(table.X)
    selector = ICLFSSelector(K, random_state=7, settings={"members": {"laplacian_weight": 0.5}}, **FAST)
    for rows in carried_rows(2):
        selector.partial_fit(X[rows])
    history = selector.history_
    names = list(history.members[0].feature_names)
    members = combine_kept(history, names, MembersConfig().half_life, [K])
    gate = carried_laplacian(history, names, MembersConfig().half_life)
    np.testing.assert_allclose(selector.scores_, fuse_laplacian(members.scores, gate, 0.5))
    np.testing.assert_array_equal(selector.feature_order_, feature_order(selector.scores_))


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_partial_fit_needs_the_same_features_and_fit_starts_afresh(table, frame):
    selector = ICLFSSelector(K, **FAST).partial_fit(frame)
    with pytest.raises(ValueError, match="feature names"):
        selector.partial_fit(frame.rename(columns={frame.columns[0]: "renamed"}))
    with pytest.raises(ValueError, match="features"):
        selector.partial_fit(np.asarray(table.X)[:, :-1])
    selector.fit(frame)
    for gone in ("history_", "n_members_", "history_seed_", "_lists"):
        assert not hasattr(selector, gone)


# -- scikit-learn ------------------------------------------------------------------


def test_both_selectors_import_from_the_package():
    from iclfs import BaselineSelector, ICLFSSelector as Imported
    from iclfs import _selectors as selectors

    assert Imported is ICLFSSelector is selectors.ICLFSSelector
    assert BaselineSelector is selectors.BaselineSelector


def test_in_a_pipeline_on_tiny_data_with_one_thread():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 8))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    pipe = Pipeline([("scale", StandardScaler()),
                     ("select", ICLFSSelector(3, epochs=2, device="cpu", settings={"runtime": {"num_threads": 1}})),
                     ("model", LogisticRegression())])
    pipe.fit(X, y)
    assert pipe.predict(X).shape == (12,)
    assert pipe.named_steps["select"].transform(X).shape == (12, 3)
    assert len(pipe[:-1].get_feature_names_out()) == 3
    # the pipeline's parameters reach the selector, its settings included
    pipe.set_params(select__n_features_to_select=2, select__settings={"runtime": {"num_threads": 1},
                                                                     "laplacian": {"n_neighbors": 2}})
    pipe.fit(X, y)
    assert pipe.named_steps["select"].n_features_to_select_ == 2
    assert clone(pipe).get_params()["select__settings"] == {"runtime": {"num_threads": 1},
                                                             "laplacian": {"n_neighbors": 2}}


@parametrize_with_checks(
    [ICLFSSelector(n_features_to_select=1, members=1, epochs=1)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
