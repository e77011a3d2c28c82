"""Each stage pipeline, and their chain, run with Kedro's SequentialRunner on an in-memory catalog."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from iclfs.method.preprocessing import DataValidationError, FeatureTable
from iclfs.pipeline_registry import STAGES, register_pipelines

MLFLOW_ONLY = {"training_loss", "evaluation_metrics"}


class KeptDataset(MemoryDataset):
    """A MemoryDataset the runner cannot release, so tests can read every intermediate."""

    def _release(self) -> None:
        pass


def make_catalog(params: dict, **data) -> DataCatalog:
    catalog = DataCatalog()
    for name in register_pipelines()["__default__"].datasets():
        catalog[name] = KeptDataset()
    catalog["parameters"] = MemoryDataset(params)
    for name, value in params.items():
        catalog[f"params:{name}"] = MemoryDataset(value)
    for name, value in data.items():
        catalog[name] = MemoryDataset(value)
    return catalog


def run_pipeline(name: str, params: dict, **data) -> DataCatalog:
    data.setdefault("previous_selected_features", pd.DataFrame())
    catalog = make_catalog(params, **data)
    SequentialRunner().run(register_pipelines()[name], catalog)
    return catalog


def test_registry_has_every_stage_and_default_chains_them():
    pipelines = register_pipelines()
    assert set(STAGES) | {"__default__", "select", "benchmark", "benchmark_baselines", "benchmark_report"} == set(
        pipelines)
    default = pipelines["__default__"]
    assert default.inputs() == {"raw_data", "parameters", "previous_selected_features"} | {
        f"params:{p}" for p in ("lgrc", "views", "seed", "training", "ranking", "laplacian", "evaluation", "select")}
    expected = {"standardized_data", "inverted_data", "labels", "feature_names", "ground_truth", "view_sample",
                "view_statistics", "model_state", "training_history", "training_loss", "training_loss_plot",
                "embeddings", "feature_scores", "feature_ranking", "laplacian_scores", "selected_features",
                "evaluation_table", "evaluation_summary", "evaluation_metrics", "accuracy_vs_k",
                "selected_feature_list", "reduced_data", "selection_stability", "stability_metrics",
                "score_distribution_plot"}
    assert expected == default.all_outputs()
    select = pipelines["select"]
    assert not {"evaluation_table", "view_sample"} & select.all_outputs()
    assert {"selected_feature_list", "reduced_data", "selection_stability"} <= select.all_outputs()


def test_every_catalog_entry_of_the_default_pipeline_is_declared(base_parameters):
    from kedro.config import OmegaConfigLoader

    from tests.conftest import PROJECT_ROOT

    loader = OmegaConfigLoader(str(PROJECT_ROOT / "conf"), base_env="base", default_run_env="base")
    catalog = {k for k in loader["catalog"] if not k.startswith("_") and "{" not in k}
    default = register_pipelines()["__default__"]
    params = {d for d in default.datasets() if d.startswith("params:") or d == "parameters"}
    report = register_pipelines()["benchmark_report"].datasets()
    assert default.datasets() - params == catalog - report


def test_every_benchmark_dataset_resolves_through_a_factory():
    from kedro.config import OmegaConfigLoader
    from kedro.io import DataCatalog, MemoryDataset

    from tests.conftest import PROJECT_ROOT

    loader = OmegaConfigLoader(str(PROJECT_ROOT / "conf"), base_env="base", default_run_env="base")
    catalog = DataCatalog.from_config(loader["catalog"])
    pipelines = register_pipelines()
    names = pipelines["benchmark"].datasets() | pipelines["benchmark_baselines"].datasets()
    for name in sorted(n for n in names if not n.startswith("params:") and n != "parameters"):
        dataset = catalog.get(name)
        assert not isinstance(dataset, MemoryDataset), f"{name} has no catalog entry (it would not be saved)"
        if name.startswith("COIL20."):
            assert "COIL20" in str(dataset._describe().get("filepath", dataset._describe())), name


def test_default_pipeline_end_to_end(tiny_table, fast_parameters):
    catalog = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)

    standardized = catalog.load("standardized_data")
    assert standardized.shape == (40, 40) and standardized.dtype == np.float32
    np.testing.assert_array_equal(catalog.load("inverted_data"), standardized.T)
    assert catalog.load("feature_names") == list(tiny_table.feature_names)
    assert len(catalog.load("labels")["codes"]) == 40

    history = catalog.load("training_history")
    assert list(history["epoch"]) == [1, 2] and np.isfinite(history["loss"]).all()
    assert set(history["precision"]) == {"fp32"} and (history["threads"] >= 1).all()
    # the choices "auto" made: fused attention below 1000 samples; one InfoNCE block holds all 40 rows on CPU
    assert set(history["attention_kernel"]) == {"fused"} and set(history["loss_chunk_size"]) == {40}
    assert catalog.load("training_loss") == history["loss"].tolist()
    assert isinstance(catalog.load("model_state"), torch.nn.Module)
    embeddings = catalog.load("embeddings")
    assert embeddings["H"].shape == (40, 512) and embeddings["Z"].shape == (40, 16)

    scores = catalog.load("feature_scores")
    np.testing.assert_allclose(scores["z_norm"], np.linalg.norm(embeddings["Z"], axis=1), rtol=1e-6)
    ranking = catalog.load("feature_ranking")
    assert sorted(ranking["feature_index"]) == list(range(40))
    assert ranking["score"].is_monotonic_decreasing

    selected = catalog.load("selected_features")
    assert selected.groupby("k").size().to_dict() == {5: 5, 10: 10}
    names = dict(zip(scores["feature_index"], scores["feature_name"]))
    assert all(names[i] == n for i, n in zip(selected["feature_index"], selected["feature_name"]))

    table = catalog.load("evaluation_table")
    assert list(table["k"]) == [5, 10]
    assert table["accuracy_mean"].between(0.5, 1.0).all()
    assert {"nmi_mean", "informative_recall"} <= set(table.columns)
    summary = catalog.load("evaluation_summary")
    assert summary["best_k"] in (5, 10) and summary["labels"] is True
    metrics = catalog.load("evaluation_metrics")
    assert [m["step"] for m in metrics["accuracy_mean"]] == [5, 10]


def test_lgrc_disabled_takes_the_first_k_of_the_ranking(tiny_table, fast_parameters):
    fast_parameters["lgrc"]["enabled"] = False
    catalog = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)
    ranking = catalog.load("feature_ranking")["feature_index"].to_numpy()
    selected = catalog.load("selected_features")
    for k, group in selected.groupby("k"):
        np.testing.assert_array_equal(group["feature_index"].to_numpy(), ranking[:k])


def test_views_pipeline_reports_exact_keep_counts(fast_parameters):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 20)).astype(np.float32)
    catalog = run_pipeline("views", fast_parameters, inverted_data=A)
    stats = catalog.load("view_statistics").set_index("view")
    assert stats.loc["light", ["kept_min", "kept_max"]].tolist() == [18, 18]
    assert stats.loc["heavy", ["kept_min", "kept_max"]].tolist() == [12, 12]
    assert stats.loc["pair_a", ["shared_with_pair_min", "shared_with_pair_max"]].tolist() == [1, 1]
    sample = catalog.load("view_sample")
    assert set(sample) >= {"light", "heavy", "pair_a", "pair_b", "negative", "light_mask"}
    np.testing.assert_array_equal(np.sort(sample["negative"], axis=1), np.sort(A, axis=1))


def test_views_pipeline_draws_the_first_training_epoch_views(fast_parameters):
    """The inspected views come from the same generator and seed as training's first epoch."""
    from iclfs.method.views import ViewConfig, generate_views

    A = np.random.default_rng(1).normal(size=(12, 10)).astype(np.float32)
    catalog = run_pipeline("views", fast_parameters, inverted_data=A)
    generator = torch.Generator().manual_seed(fast_parameters["seed"])
    views = generate_views(torch.as_tensor(A), ViewConfig(**fast_parameters["views"]), generator)
    np.testing.assert_array_equal(catalog.load("view_sample")["heavy"], views.heavy.numpy())


def test_views_pipeline_draws_the_reference_streams_first_epoch(fast_parameters):
    """With views.stream reference the inspected views are those training draws after the network's init."""
    from iclfs.method import training as training_module

    A = np.random.default_rng(2).normal(size=(14, 9)).astype(np.float32)
    fast_parameters["views"] = {**fast_parameters["views"], "stream": "reference"}
    catalog = run_pipeline("views", fast_parameters, inverted_data=A)
    drawn = []
    original = training_module.generate_views
    training_module.generate_views = lambda *args: drawn.append(original(*args)) or drawn[-1]
    try:
        training_module.train(A, training_module.TrainingConfig(**{**fast_parameters["training"], "epochs": 1,
                                                                   "device": "cpu", "progress": False}),
                              training_module.ViewConfig(**fast_parameters["views"]), seed=fast_parameters["seed"])
    finally:
        training_module.generate_views = original
    np.testing.assert_array_equal(catalog.load("view_sample")["negative"], drawn[0].negative.numpy())
    np.testing.assert_array_equal(catalog.load("view_sample")["pair_b"], drawn[0].pair_b.numpy())


def test_evaluation_without_labels_skips_kmeans(tiny_table, fast_parameters):
    unlabeled = FeatureTable(X=tiny_table.X, feature_names=tiny_table.feature_names)
    catalog = run_pipeline("__default__", fast_parameters, raw_data=unlabeled)
    table = catalog.load("evaluation_table")
    assert list(table.columns) == ["k"]
    assert catalog.load("evaluation_summary")["labels"] is False
    assert catalog.load("evaluation_metrics") == {}


@pytest.mark.parametrize(
    "table, message",
    [
        (FeatureTable(X=np.where(np.eye(8, 40) > 0, np.nan, 1.0)), r"8 NaN .* first at \(row 0, column 0\)"),
        (FeatureTable(X=np.ones((3, 40))), "at least 4"),
        (FeatureTable(X=np.random.default_rng(0).normal(size=(10, 4))), "smallest requested k is 5"),
        (FeatureTable(X=pd.DataFrame({"a": ["x"] * 8, **{f"f{i}": np.arange(8.0) for i in range(40)}})), "'a'"),
    ],
)
def test_bad_input_fails_in_the_first_node_before_any_output(table, message, fast_parameters):
    catalog = make_catalog(fast_parameters, raw_data=table, previous_selected_features=pd.DataFrame())
    with pytest.raises(DataValidationError, match=message):
        SequentialRunner().run(register_pipelines()["__default__"], catalog)
    assert "standardized_data" not in catalog or not catalog["standardized_data"].exists()


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("training", "epochs", -1, "training.epochs must be a positive integer"),
        ("training", "device", "tpu", "training.device 'tpu'"),
        ("training", "learning_rat", 0.1, r"unknown key\(s\) training.learning_rat"),
        ("training", "precision", "bf16", "training.precision 'bf16' needs a CUDA device"),
        ("training", "compile", "fastest", "training.compile must be null or a torch.compile backend"),
        ("views", "heavy_keep", 1.5, r"views.heavy_keep must be in \(0, 1\]"),
        ("views", "light_keep", 0.0, r"views.light_keep must be in \(0, 1\]"),
        ("views", "stream", "cuda", r"views.stream must be one of \('vectorized', 'reference'\), got 'cuda'"),
        ("lgrc", "quantile", 1.2, r"lgrc.quantile = 1.2 is invalid: expected a number in \[0, 1\]"),
        ("lgrc", "alpha", 0.5, "lgrc.alpha = 0.5 is invalid"),
        ("lgrc", "k_values", [], "lgrc.k_values"),
        ("ranking", "score", "l2", "ranking.score = 'l2' is invalid"),
        ("laplacian", "n_neighbors", 40, "laplacian.n_neighbors = 40 is invalid: expected fewer than the 40 samples"),
        ("evaluation", "n_runs", 0, "evaluation.n_runs = 0 is invalid"),
        ("select", "k", 7, r"select.k = 7 is invalid: expected one of lgrc.k_values \[5, 10\]"),
    ],
)
def test_bad_parameters_fail_in_the_first_node_before_any_output(tiny_table, fast_parameters, section, key, value,
                                                                 message):
    fast_parameters["training"]["device"] = "cpu"  # the precision check depends on the device
    fast_parameters[section][key] = value
    catalog = make_catalog(fast_parameters, raw_data=tiny_table, previous_selected_features=pd.DataFrame())
    with pytest.raises(ValueError, match=message):
        SequentialRunner().run(register_pipelines()["__default__"], catalog)
    assert not catalog["standardized_data"].exists()


def test_same_data_parameters_and_seed_give_the_identical_selection_on_cpu(tiny_table, fast_parameters):
    fast_parameters["training"]["device"] = "cpu"
    first = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)
    second = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)
    pd.testing.assert_frame_equal(first.load("feature_ranking"), second.load("feature_ranking"))
    pd.testing.assert_frame_equal(first.load("selected_features"), second.load("selected_features"))
    np.testing.assert_array_equal(first.load("embeddings")["Z"], second.load("embeddings")["Z"])


def test_constant_and_near_constant_features_never_produce_nan(tiny_table, fast_parameters):
    X = np.asarray(tiny_table.X, dtype=np.float64).copy()
    X[:, 0] = 5.0                      # constant
    X[:, 1] = 1e6 + 1e-9 * np.arange(40)  # constant up to round-off
    X[:, 2] = 0.0
    X[7, 2] = 1e-3                     # near-constant: one sample differs
    table = FeatureTable(X=X, y=tiny_table.y, feature_names=tiny_table.feature_names)
    catalog = run_pipeline("__default__", fast_parameters, raw_data=table)
    assert np.isfinite(catalog.load("standardized_data")).all()
    for name in ("feature_scores", "feature_ranking", "selected_features", "evaluation_table"):
        frame = catalog.load(name).select_dtypes("number")
        assert not frame.isna().any().any(), name
    ls = catalog.load("laplacian_scores").set_index("feature_index")["laplacian_score"]
    assert np.isinf(ls[[0, 1]]).all() and np.isfinite(ls[2])
    assert np.isfinite(catalog.load("embeddings")["Z"]).all()


def test_select_publishes_a_named_list_the_reduced_data_and_stability(tiny_table, fast_parameters):
    unlabeled = FeatureTable(X=tiny_table.X, feature_names=tiny_table.feature_names)
    first = run_pipeline("select", fast_parameters, raw_data=unlabeled)
    listing = first.load("selected_feature_list")
    assert list(listing.columns) == ["rank", "feature_name", "feature_index", "score", "laplacian_score"]
    assert list(listing["rank"]) == [1, 2, 3, 4, 5]
    reduced = first.load("reduced_data")
    assert list(reduced.columns) == listing["feature_name"].tolist()
    np.testing.assert_array_equal(reduced.to_numpy(), np.asarray(tiny_table.X)[:, listing["feature_index"]])
    assert first.load("selection_stability")["previous_version"] is None

    previous = first.load("selected_features").copy()
    previous.attrs["version"] = "2026-01-01T00.00.00.000Z"
    previous.loc[previous["k"] == 5, "feature_name"] = ["gone"] + previous.loc[previous["k"] == 5, "feature_name"].tolist()[1:]
    second = run_pipeline("select", fast_parameters, raw_data=unlabeled, previous_selected_features=previous)
    stability = second.load("selection_stability")
    assert stability["previous_version"] == "2026-01-01T00.00.00.000Z"
    assert stability["per_k"][10]["jaccard"] == 1.0
    assert stability["per_k"][10]["rank_correlation"] == pytest.approx(1.0)
    assert stability["per_k"][5]["left"] == ["gone"] and stability["per_k"][5]["entered"] == [listing["feature_name"][0]]
    assert stability["per_k"][5]["jaccard"] == 4 / 6
    assert [m["step"] for m in second.load("stability_metrics")["jaccard"]] == [5, 10]
