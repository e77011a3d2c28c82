"""ICLFSSelector: the scikit-learn face of the method (tiny data, 1-2 epochs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from iclfs.selectors import EXPECTED_FAILED_CHECKS, ICLFSSelector
from iclfs.io.synthetic import make_synthetic
from iclfs.method import chain
from iclfs.method.config import (
    ConsensusConfig,
    HistoryConfig,
    RuntimeConfig,
    SelectionConfig,
    Settings,
    TrainingConfig,
    ViewConfig,
)
from iclfs.method.consensus import fuse_laplacian
from iclfs.method.history import (
    MemberHistory,
    admitted_k,
    carried_laplacian,
    combine_history,
    gate_laplacian,
    hold,
    member_seed,
)
from iclfs.method.laplacian import laplacian_scores
from iclfs.method.lgrc import lgrc_select
from iclfs.method.preprocessing import FeatureTable, invert, prepare
from iclfs.method.scores import embed, feature_order, feature_scores, rank_positions
from iclfs.method.training import train

K = 5
# members is passed explicitly: the default consensus is not decided yet.
FAST = {"epochs": 2, "members": 1, "device": "cpu"}
CONSENSUS = {"members": 3, "member_epochs": 1, "subsample": 0.5, "device": "cpu"}


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
    assert len(fitted.training_history_) == 2
    assert {"member", "epoch", "loss"} <= set(fitted.training_history_[0])
    assert {row["member"] for row in fitted.training_history_} == {0}
    assert len(fitted.models_) == 1 and next(fitted.models_[0].parameters()).device.type == "cpu"
    assert not fitted.models_[0].training  # eval mode
    assert not hasattr(fitted, "feature_names_in_")
    for gone in ("feature_scores_", "all_feature_scores_", "model_"):
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


@pytest.mark.parametrize("settings", [{}, {"ranking_score": "harmonic", "alpha": 2.0, "quantile": 0.5}],
                         ids=["defaults", "harmonic"])
def test_selection_equals_core_chain(table, settings):
    selector = ICLFSSelector(K, random_state=11, **FAST, **settings).fit(table.X)
    core = {"score": settings.get("ranking_score", "z_norm"),
            **{k: v for k, v in settings.items() if k != "ranking_score"}}
    scores, order, ls, selected = core_chain(table.X, K, seed=11, **core)
    np.testing.assert_allclose(selector.scores_, scores)
    np.testing.assert_array_equal(selector.feature_order_, order)
    np.testing.assert_array_equal(selector.laplacian_scores_, ls)
    np.testing.assert_array_equal(selector.selected_features_, selected)
    np.testing.assert_array_equal(selector.ranking_, rfe_ranking(order, selected))


def test_consensus_equals_the_chain_run(table, consensus):
    settings = Settings(
        seed=5, training=TrainingConfig(epochs=2), runtime=RuntimeConfig(device="cpu", progress=False),
        consensus=ConsensusConfig(members=3, member_epochs=1, subsample=0.5),
        selection=SelectionConfig(k=K, k_values=(K,)))
    result = chain.run(FeatureTable(X=table.X), settings)
    np.testing.assert_allclose(consensus.scores_, result.consensus.scores)
    np.testing.assert_array_equal(consensus.feature_order_, result.consensus.order)
    np.testing.assert_array_equal(consensus.selected_features_, result.selected)
    np.testing.assert_array_equal(consensus.laplacian_scores_, result.laplacian_scores)
    np.testing.assert_array_equal(consensus.selection_frequency_, result.consensus.frequency[K])
    for row, order in zip(consensus.member_ranks_, result.consensus.member_orders, strict=True):
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
    assert [row["member"] for row in consensus.training_history_] == [0, 1, 2]  # 1 epoch each
    # every member contributes its top k to the frequencies
    assert consensus.selection_frequency_.sum() == pytest.approx(K)
    assert set(np.round(3 * consensus.selection_frequency_).astype(int)) <= {0, 1, 2, 3}
    np.testing.assert_array_equal(consensus.ranking_ == 1, consensus.support_)


def test_feature_blocks_train_one_network_per_block_and_equal_the_chain_run(table):
    selector = ICLFSSelector(K, members=2, member_epochs=1, subsample=1.0, device="cpu",
                             consensus_options={"feature_blocks": 2}).fit(table.X)
    assert len(selector.models_) == 4  # 2 members x 2 blocks
    assert [(row["member"], row["block"]) for row in selector.training_history_] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert selector.member_ranks_.shape == (2, table.X.shape[1])
    settings = Settings(seed=42, runtime=RuntimeConfig(device="cpu", progress=False),
                        consensus=ConsensusConfig(members=2, member_epochs=1, subsample=1.0, feature_blocks=2),
                        selection=SelectionConfig(k=K, k_values=(K,)))
    result = chain.run(FeatureTable(X=table.X), settings)
    np.testing.assert_array_equal(selector.selected_features_, result.selected)
    with pytest.raises(ValueError, match="feature_blocks"):
        ICLFSSelector(K, **FAST, consensus_options={"feature_blocks": table.X.shape[1]}).fit(table.X)


def test_auto_chooses_k_from_the_members_agreement(table):
    selector = ICLFSSelector("auto", members=3, member_epochs=1, subsample=0.5, device="cpu").fit(table.X)
    grid = ICLFSSelector._auto_grid(table.X.shape[1])
    assert selector.n_features_to_select_ in grid
    assert selector.k_reason_ and "k = " in selector.k_reason_
    assert selector.transform(table.X).shape == (40, selector.n_features_to_select_)
    assert int((selector.ranking_ == 1).sum()) == selector.n_features_to_select_


def test_fit_leaves_torch_global_state_alone(table):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ICLFSSelector(K, runtime_options={"num_threads": 2}, **FAST).fit(table.X)
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
        ({"n_features_to_select": K, "ranking_score": "norm"}, None, "ranking_score must be one of"),
        ({"n_features_to_select": K, "alpha": 0.5}, None, "alpha must be a number >= 1"),
        ({"n_features_to_select": K, "training_options": {"lr": 1}}, None,
         r"unknown parameter\(s\) training_options.lr"),
        ({"n_features_to_select": K, "training_options": {"num_threads": 1}}, None,
         r"unknown parameter\(s\) training_options.num_threads"),
        ({"n_features_to_select": K, "training_options": {"epochs": 5}}, None,
         r"training_options must not set epochs: use the ICLFSSelector parameter"),
        ({"n_features_to_select": K, "runtime_options": {"device": "cpu"}}, None,
         r"runtime_options must not set device: use the ICLFSSelector parameter"),
        ({"n_features_to_select": K, "consensus_options": {"members": 2}}, None,
         r"consensus_options must not set members: use the ICLFSSelector parameter"),
        ({"n_features_to_select": "auto"}, None, r"selection.k 'auto' .*needs consensus.members 2 or more"),
        ({"n_features_to_select": 1}, np.ones((3, 5)), r"3 sample\(s\).*at least 4"),
        ({"n_features_to_select": 1}, np.ones((10, 1)), r"1 feature\(s\).*at least 2"),
        ({"n_features_to_select": 1, "n_neighbors": 6}, np.random.default_rng(0).random((6, 4)),
         "n_neighbors=6 needs more samples"),
    ],
    ids=["k0", "fraction>1", "score", "alpha", "unknown-option", "threads-moved-to-runtime", "duplicate-option",
         "duplicate-runtime-option", "duplicate-consensus-option", "auto-one-member", "3-samples", "1-feature",
         "n_neighbors"],
)
def test_bad_parameters_and_shapes_are_refused(table, params, X, message):
    with pytest.raises(ValueError, match=message):
        ICLFSSelector(**{**FAST, **params}).fit(table.X if X is None else X)


# -- carrying members: partial_fit ----------------------------------------------


def test_partial_fit_starts_as_fit_and_carries_each_calls_member(table):
    X = np.asarray(table.X)
    rows = [np.sort(np.random.default_rng(r).choice(40, size=36, replace=False)) for r in range(3)]
    carried = ICLFSSelector(K, random_state=7, half_life=2.0, history_laplacian_weight=0.0, **FAST)
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
    # the combined order is the history's, through the same core the pipelines use
    history = MemberHistory()
    for r in range(3):
        history = history.add_run([(m.seed, m.feature_names, m.scores, 0.0, m.fingerprint)
                                   for m in carried.history_.members if m.run == r], 64)
    combined = combine_history(history, list(history.members[0].feature_names), 2.0, [K])
    np.testing.assert_array_equal(carried.feature_order_, combined.order)
    np.testing.assert_allclose(carried.selection_frequency_, combined.frequency[K])
    assert np.all((carried.selection_frequency_ >= 0) & (carried.selection_frequency_ <= 1))


@pytest.mark.parametrize("admit", [float("inf"), 2.0])
def test_partial_fit_with_a_hold_keeps_the_last_selection_while_it_stays_near_the_top(table, admit):
    X = np.asarray(table.X)
    rows = [np.sort(np.random.default_rng(r).choice(40, size=36, replace=False)) for r in range(2)]
    held = ICLFSSelector(K, random_state=7, hold=3.0, admit=admit, history_laplacian="carried", **FAST)
    free = ICLFSSelector(K, random_state=7, **FAST)
    for r in range(2):
        held.partial_fit(X[rows[r]])
        free.partial_fit(X[rows[r]])
        if r == 0:
            last = set(held.selected_features_.tolist())
            np.testing.assert_array_equal(held.selected_features_, free.selected_features_)  # nothing to hold to
    names = list(held.history_.members[0].feature_names)
    assert held.history_.lists == {K: tuple(names[j] for j in held.selected_features_)}
    # the second call's wider selection (3 x K, gated by the carried Laplacian scores): the last selection's
    # features in it stay, the rest of the places go to its best others
    laplacian = carried_laplacian(held.history_, names, float("inf"))
    wider = chain.select(held.feature_order_, laplacian, SelectionConfig(), [3 * K])[3 * K]
    expected = hold([names[j] for j in last], wider, names, K, admit)
    np.testing.assert_array_equal(held.selected_features_, expected)
    if admit == float("inf"):
        assert last & set(wider.tolist()) <= set(held.selected_features_.tolist())
    else:  # the first ceil(K / admit) of the wider selection are in, whatever the last selection
        assert set(wider[:admitted_k(admit, K)].tolist()) <= set(held.selected_features_.tolist())


def test_partial_fit_fuses_the_laplacian_rank_into_the_carried_order_with_its_weight(table):
    X = np.asarray(table.X)
    rows = [np.sort(np.random.default_rng(r).choice(40, size=36, replace=False)) for r in range(2)]
    fits = {}
    for fusion in ("rank_mean", "reciprocal_rank"):
        fits[fusion] = ICLFSSelector(K, random_state=7, history_laplacian_weight=0.5,
                                     history_laplacian_fusion=fusion, **FAST)
        for r in range(2):
            fits[fusion].partial_fit(X[rows[r]])
    history = fits["rank_mean"].history_
    names = list(history.members[0].feature_names)
    config = HistoryConfig(carry=True, laplacian_weight=0.5)
    members = combine_history(history, names, config.half_life, [K])
    gate = gate_laplacian(history, fits["rank_mean"].laplacian_scores_, names, config)
    for fusion, selector in fits.items():
        np.testing.assert_allclose(selector.scores_, fuse_laplacian(members.scores, gate, 0.5, fusion))
        np.testing.assert_array_equal(selector.feature_order_, feature_order(selector.scores_))
    assert ICLFSSelector(K).history_laplacian_fusion == HistoryConfig().laplacian_fusion


def test_partial_fit_needs_the_same_features_and_fit_starts_afresh(table, frame):
    selector = ICLFSSelector(K, **FAST).partial_fit(frame)
    with pytest.raises(ValueError, match="feature names"):
        selector.partial_fit(frame.rename(columns={frame.columns[0]: "renamed"}))
    with pytest.raises(ValueError, match="features"):
        selector.partial_fit(np.asarray(table.X)[:, :-1])
    selector.fit(frame)
    assert not hasattr(selector, "history_") and not hasattr(selector, "n_members_")


# -- scikit-learn's estimator checks -------------------------------------------


@parametrize_with_checks(
    [ICLFSSelector(n_features_to_select=1, members=1, epochs=1)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
