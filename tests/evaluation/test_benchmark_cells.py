"""Benchmark cells: method names, where a cell lives, one protocol for every method, gathering."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclfs.baselines import REGISTRY
from iclfs.baselines._graph import mcfs_selections
from iclfs.baselines._reference import random_orders
from iclfs.evaluation._benchmark import (
    RESULT_COLUMNS,
    baseline_selections,
    cell_key,
    evaluate_cell,
    gather,
    method_name,
    slug,
)
from iclfs.method._config import ParameterError, Settings
from iclfs.method._laplacian import laplacian_scores
from iclfs.method._scores import feature_order
from tests.evaluation.cells import cell

# The paper's ICLFS: one run, the literal loop; every name below is relative to it.
# The paper's single run; each tag below is what the case sets.
PAPER = "members.per_run=1,training.schedule=paper,members.subsample=1.0"


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ("", "ICLFS"),
        ("selection.use_lgrc=false", "ICLFS-WL"),
        ("selection.use_lgrc=false,training.use_decorrelation=false", "ICLFS-WLD"),
        ("selection.use_lgrc=false,training.use_decorrelation=false,training.use_attention=false", "ICLFS-WLDA"),
        ("selection.use_lgrc=false,training.use_decorrelation=false,training.use_attention=false,"
         "views.positives=random", "ICLFS-WLDAR"),
        ("training.use_attention=false", "ICLFS-WA"),
        ("ranking.score=h_norm", "ICLFS (h_norm)"),
        ("selection.use_lgrc=false,ranking.score=harmonic", "ICLFS-WL (harmonic)"),
        ("training.schedule=fast,selection.use_lgrc=false", "ICLFS-WL [fast]"),
        ("training.schedule=fast,runtime.precision=bf16", "ICLFS [fast, bf16]"),
        ("runtime.precision=bf16", "ICLFS [bf16]"),
        ("training.schedule=fast,runtime.precision=tf32", "ICLFS [fast]"),
        ("views.stream=published", "ICLFS [published stream]"),
        ("training.schedule=fast,views.stream=published", "ICLFS [fast, published stream]"),
        ("views.stream=vectorized", "ICLFS"),
        # what does not change the method does not change its name
        ("training.epochs=3,seed=7,selection.k=100,runtime.device=cpu,evaluation.n_runs=2", "ICLFS"),
        # several members are a tag: how many, of how many epochs, then what differs from the members defaults
        ("members.per_run=8,members.epochs=20,members.subsample=0.5",
         "ICLFS [8 members of 20 epochs, 0.5 of samples]"),
        ("training.schedule=fast,members.per_run=8,members.epochs=20,members.subsample=0.5",
         "ICLFS [fast, 8 members of 20 epochs, 0.5 of samples]"),
        ("members.per_run=3,members.epochs=5,members.subsample=1.0", "ICLFS [3 members of 5 epochs]"),
        ("selection.use_lgrc=false,members.per_run=3,members.epochs=5,runtime.precision=bf16",
         "ICLFS-WL [3 members of 5 epochs, bf16]"),
        ("members.per_run=4,members.epochs=100,members.subsample=1,members.feature_blocks=8",
         "ICLFS [4 members of 100 epochs, 8 feature blocks]"),
        ("members.per_run=1,members.feature_blocks=4", "ICLFS [4 feature blocks]"),
    ],
)
def test_method_names_follow_the_papers_ablation_names(changes, name):
    settings = Settings().with_overrides(PAPER).with_overrides(changes)
    assert method_name(settings) == name


def test_the_default_is_named_by_what_it_is():
    """Whatever the default members end up being, its name says fast, and the members when there are several."""
    settings = Settings()
    name = method_name(settings)
    assert name.startswith("ICLFS [fast")
    assert (" members of " in name) is (settings.members.per_run > 1)


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("ICLFS", "iclfs"),
        ("ICLFS [fast]", "iclfs-fast"),
        ("ICLFS-WLD [fast]", "iclfs-wld-fast"),
        ("ICLFS (h_norm)", "iclfs-h-norm"),
        ("ICLFS [fast, 8 members of 20 epochs, 0.5 of samples]", "iclfs-fast-8-members-of-20-epochs-0.5-of-samples"),
        ("all features", "all-features"),
        ("LS", "ls"),
    ],
)
def test_slug_is_a_folder_name(method, expected):
    assert slug(method) == expected


def test_cell_key_is_dataset_method_seed():
    assert cell_key("COIL20", "ICLFS [fast]", np.int64(42)) == "COIL20/iclfs-fast/seed_42"
    assert cell_key("COIL20", "all features", 43) == "COIL20/all-features/seed_43"
    # every baseline and ablation gets its own folder
    names = [*(entry.name for entry in REGISTRY.values()), "ICLFS", "ICLFS-WL", "ICLFS [fast]", "ICLFS-WL [fast]"]
    assert len({slug(name) for name in names}) == len(names)


@pytest.fixture
def three_clusters():
    rng = np.random.default_rng(0)
    codes = np.repeat([0, 1, 2], 20)
    X = rng.standard_normal((60, 30))
    X[:, :5] += 4 * codes[:, None]  # five informative columns
    X = (X - X.mean(0)) / X.std(0)
    return X.astype(np.float32), codes


def test_a_cell_is_one_row_per_k_through_the_protocol(three_clusters):
    X, codes = three_clusters
    informative, noise = np.arange(5), np.arange(29, 19, -1)
    table = evaluate_cell(X, codes, {10: noise, 5: informative}, dataset="toy", method="ICLFS [fast]", seed=42,
                          n_runs=3, seconds=4.0, device="cpu", schedule="fast", epochs=2)
    assert list(table.columns) == RESULT_COLUMNS
    assert list(table["k"]) == [5, 10]  # ascending k
    assert table["accuracy_mean"].iloc[0] == pytest.approx(1.0) and table["accuracy_mean"].iloc[1] < 0.7
    assert (table["n_runs"] == 3).all() and (table["seed"] == 42).all() and (table["seconds"] == 4.0).all()
    assert set(table["dataset"]) == {"toy"} and set(table["method"]) == {"ICLFS [fast]"}
    assert set(table["schedule"]) == {"fast"} and set(table["epochs"]) == {2} and set(table["device"]) == {"cpu"}
    assert table["selected"].tolist() == ["0 1 2 3 4", " ".join(map(str, noise))]  # best first
    assert table["versions"].iloc[0].startswith("iclfs=") and table["run_at"].iloc[0].endswith("Z")
    # the same selection and seed: the same k-means runs
    again = evaluate_cell(X, codes, {5: informative}, dataset="toy", method="x", seed=42, n_runs=3, seconds=0)
    assert again["accuracy_mean"].iloc[0] == table["accuracy_mean"].iloc[0]


def test_several_selections_at_one_k_pool_their_runs(three_clusters):
    X, codes = three_clusters
    orders = random_orders(30, 4, seed=0)
    table = evaluate_cell(X, codes, {5: orders[:, :5]}, dataset="toy", method="random", seed=1, n_runs=3,
                          seconds=0.1)
    assert table["n_runs"].iloc[0] == 12 and table["selected"].iloc[0] == ""  # pooled: no single selection
    assert (table["schedule"] == "none").all() and (table["epochs"] == 0).all()  # baselines train nothing


def test_every_baseline_selects_at_every_k_up_to_d(three_clusters):
    X, codes = three_clusters
    options = {"mcfs": {"n_neighbors": 5}, "ndfs": {"n_neighbors": 5, "max_iter": 5}, "random": {"rankings": 4}}
    # variance and dispersion read the table before standardization, dispersion nonnegative values
    out = baseline_selections(X, codes, list(REGISTRY), options, [5, 10, 50], seed=42, measured=X - X.min())
    assert set(out) == {entry.name for entry in REGISTRY.values()}
    for name, (selections, seconds) in out.items():
        assert seconds >= 0
        if name == "all features":
            assert list(selections) == [30]
            np.testing.assert_array_equal(selections[30], np.arange(30))
        else:
            assert sorted(selections) == [5, 10], name  # k = 50 > d is left out
    # LS: the lowest Laplacian scores first, on the baseline's own graph
    scores = laplacian_scores(np.asarray(X, dtype=np.float64), 3)
    np.testing.assert_array_equal(out["LS"][0][5], feature_order(-scores)[:5])
    assert out["random"][0][10].shape == (4, 10)
    np.testing.assert_array_equal(out["random"][0][10], random_orders(30, 4, seed=42)[:, :10])
    # MCFS fits once per k, as its paper does
    expected = mcfs_selections(np.asarray(X, dtype=np.float64), 3, [5, 10], n_neighbors=5)
    for k in (5, 10):
        np.testing.assert_array_equal(out["MCFS"][0][k], expected[k][:k])


def test_an_unknown_baseline_is_named_before_any_work(three_clusters):
    X, codes = three_clusters
    with pytest.raises(ParameterError, match=r"unknown baseline 'relieff'; known: ls, spec, mcfs, ndfs"):
        baseline_selections(X, codes, ["spec", "relieff"], {}, [5], seed=0)


def test_a_baseline_option_is_checked_by_name(three_clusters):
    X, codes = three_clusters
    with pytest.raises(ParameterError, match=r"parameter baselines.ndfs.max_iter = 0 is invalid"):
        baseline_selections(X, codes, ["ndfs"], {"ndfs": {"max_iter": 0}}, [5], seed=0)
    with pytest.raises(ParameterError, match=r"unknown parameter\(s\) baselines.mcfs.neighbours"):
        baseline_selections(X, codes, ["mcfs"], {"mcfs": {"neighbours": 5}}, [5], seed=0)


def _cell(method, seed, accs, dataset="COIL20", ks=(50, 100)):
    return cell(method, seed, accs, dataset=dataset, ks=ks, selected=["1 2", "1 2 3"])


def test_gather_orders_every_cell_and_keeps_each_cells_rows():
    cells = {
        "COIL20/ls/seed_42": _cell("LS", 42, [0.4, 0.3]),
        "COIL20/iclfs-fast/seed_43": _cell("ICLFS [fast]", 43, [0.55, 0.5], ks=(100, 50)),
        "COIL20/iclfs-fast/seed_42": _cell("ICLFS [fast]", 42, [0.5, 0.6]),
        "arcene/ls/seed_42": _cell("LS", 42, [0.6, 0.6], dataset="arcene"),
        "COIL20/empty/seed_42": pd.DataFrame(),
    }
    results = gather(cells)
    assert list(results.columns) == RESULT_COLUMNS and len(results) == 8
    assert list(zip(results["dataset"], results["method"], results["seed"], results["k"], strict=True))[:4] == [
        ("COIL20", "ICLFS [fast]", 42, 50), ("COIL20", "ICLFS [fast]", 42, 100),
        ("COIL20", "ICLFS [fast]", 43, 50), ("COIL20", "ICLFS [fast]", 43, 100)]
    split = {cell_key(d, m, s): g.reset_index(drop=True)
             for (d, m, s), g in results.groupby(["dataset", "method", "seed"], sort=True)}
    assert sorted(split) == sorted(key for key, table in cells.items() if not table.empty)
    pd.testing.assert_frame_equal(split["COIL20/ls/seed_42"], cells["COIL20/ls/seed_42"])
    assert gather({}).empty and list(gather({}).columns) == RESULT_COLUMNS


def test_gather_fills_what_an_older_cell_lacks():
    old = _cell("LS", 42, [0.4, 0.3]).drop(columns=["selected", "evaluation_seconds"])
    results = gather({"COIL20/ls/seed_42": old})
    assert list(results.columns) == RESULT_COLUMNS
    assert (results["selected"] == "").all() and results["evaluation_seconds"].isna().all()
