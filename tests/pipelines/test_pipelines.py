"""Each stage pipeline, and their chain, run with Kedro's SequentialRunner on an in-memory catalog."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from iclfs.method._config import ParameterError
from iclfs.method._ranking import MemberHistory
from iclfs.method._preprocessing import DataValidationError, FeatureTable
from iclfs.pipeline_registry import STAGES, register_pipelines
from iclfs.project._hooks import check_parameters
from tests.conftest import CONSENSUS_OVERRIDES, DEFAULT_THREADS


def resolved_threads() -> int:
    """The thread count a CPU training takes by default: torch's, capped at the CPUs this process may use."""
    from iclfs.method._runtime import available_cpus

    return min(torch.get_num_threads(), available_cpus())


class KeptDataset(MemoryDataset):
    """A MemoryDataset the runner cannot release, so tests can read every intermediate."""

    def _release(self) -> None:
        pass


class StoredHistories:
    """``previous_member_history`` in memory, for a catalog of memory datasets: ``history`` as its one stored
    version (``history.version``), read as :class:`iclfs.io.datasets.MemberHistories` reads the disk."""

    def __init__(self, history: MemberHistory | None = None) -> None:
        self.history = history or MemberHistory()

    def of(self, method: str) -> MemberHistory:
        return self.history

    def at(self, method: str, version: str | None) -> MemberHistory:
        if version is None:
            return MemberHistory(method=method)
        assert version == self.history.version, (version, self.history.version)
        return self.history

    def reserve(self, method: str, count: int) -> None:
        return None


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
    """Run a registered pipeline as a Kedro session does: the parameter check first, then the nodes."""
    data.setdefault("previous_selections", pd.DataFrame())
    data.setdefault("previous_lists", pd.DataFrame())
    data.setdefault("previous_member_history", StoredHistories())
    data.setdefault("previous_feature_names", pd.DataFrame())
    data.setdefault("previous_ground_truth", pd.DataFrame())
    catalog = make_catalog(params, **data)
    pipeline = register_pipelines()[name]
    check_parameters(run_params={}, pipeline=pipeline, catalog=catalog)
    SequentialRunner().run(pipeline, catalog)
    return catalog


def test_registry_has_every_stage_and_default_chains_them():
    pipelines = register_pipelines()
    assert set(STAGES) | {"__default__", "select", "benchmark", "benchmark_baselines", "benchmark_report"} == set(
        pipelines)
    default = pipelines["__default__"]
    assert default is pipelines["select"]  # kedro run, the packaged job and the DAG run one path
    # Each node takes the sections it needs; none takes the whole parameters dict.
    assert default.inputs() == {"raw_data", "previous_selections", "previous_lists", "previous_member_history",
                                "previous_feature_names", "previous_ground_truth"} | {
        f"params:{p}" for p in ("selection", "views", "seed", "training", "runtime", "members", "ranking",
                                "laplacian", "evaluation", "baselines")}
    expected = {"standardized_data", "measured_data", "inverted_data", "labels", "feature_names", "ground_truth",
                "model_state", "training_log", "training_loss_plot",
                "member_scores", "history_start", "member_history", "feature_ranking",
                "laplacian_scores", "selections",
                "evaluation_table", "evaluation_summary", "accuracy_vs_k", "k_choice",
                "feature_list", "reduced_data", "table_changes", "selection_stability", "score_distribution_plot",
                "run_report"}
    assert expected == default.all_outputs()
    assert pipelines["views"].all_outputs() == {"view_sample", "view_statistics"}  # inspection, by name only


def test_every_catalog_entry_of_the_default_pipeline_is_declared(base_parameters):
    from tests.conftest import config_loader

    loader = config_loader()
    catalog = {k for k in loader["catalog"] if not k.startswith("_") and "{" not in k}
    stages = sum(register_pipelines()[name] for name in STAGES)
    params = {d for d in stages.datasets() if d.startswith("params:") or d == "parameters"}
    report = register_pipelines()["benchmark_report"].datasets()
    # the run record is written by a hook when a run ends well, not by a node
    assert stages.datasets() - params == catalog - report - {"run_record"}


def test_every_benchmark_dataset_resolves_through_a_factory():
    from kedro.io import DataCatalog, MemoryDataset

    from tests.conftest import config_loader

    catalog = DataCatalog.from_config(config_loader()["catalog"])
    pipelines = register_pipelines()
    names = pipelines["benchmark"].datasets() | pipelines["benchmark_baselines"].datasets()
    for name in sorted(n for n in names if not n.startswith("params:") and n != "parameters"):
        dataset = catalog.get(name)
        assert not isinstance(dataset, MemoryDataset), f"{name} has no catalog entry (it would not be saved)"
        if name.startswith("COIL20."):
            assert "COIL20" in str(dataset._describe().get("filepath", dataset._describe())), name


@pytest.mark.threads
def test_default_pipeline_end_to_end(tiny_table, fast_parameters):
    catalog = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)

    standardized = catalog.load("standardized_data")
    assert standardized.shape == (40, 40) and standardized.dtype == np.float32
    np.testing.assert_array_equal(catalog.load("inverted_data"), standardized.T)
    assert catalog.load("feature_names") == list(tiny_table.feature_names)
    assert len(catalog.load("labels")["codes"]) == 40

    history = catalog.load("training_log")
    assert list(history["epoch"]) == [1, 2] and np.isfinite(history["loss"]).all()
    assert set(history["member"]) == {0} and set(history["member_seed"]) == {fast_parameters["seed"]}
    assert set(history["precision"]) == {"fp32"}
    assert set(history["threads"]) == ({resolved_threads()} if DEFAULT_THREADS else {1})
    # the choices made for this machine: fused attention below 1000 samples; one InfoNCE block holds all 40 rows
    assert set(history["attention_kernel"]) == {"fused"} and set(history["loss_block_rows"]) == {40}
    state = catalog.load("model_state")
    assert isinstance(state, dict) and all(isinstance(v, torch.Tensor) for v in state.values())
    scores = catalog.load("member_scores")
    assert scores["z_norm"].shape == (1, 40) and list(scores["seed"]) == [fast_parameters["seed"]]
    assert set(scores) == {"z_norm", "h_norm", "weighted_sum", "harmonic", "seed", "seconds"}

    ranking = catalog.load("feature_ranking")
    assert sorted(ranking["feature_index"]) == list(range(40)) and list(ranking["rank"]) == list(range(1, 41))
    assert ranking["score"].is_monotonic_decreasing
    np.testing.assert_allclose(ranking.sort_values("feature_index")["score"], scores["z_norm"][0])
    # one member, the first of the data source's history (carried by default): its own order
    assert (ranking["members_seen"] == 1).all() and len(catalog.load("member_history").members) == 1

    selected = catalog.load("selections")
    assert selected.groupby("k").size().to_dict() == {5: 5, 10: 10}
    names = dict(zip(ranking["feature_index"], ranking["feature_name"]))
    assert all(names[i] == n for i, n in zip(selected["feature_index"], selected["feature_name"]))

    table = catalog.load("evaluation_table")
    assert list(table["k"]) == [5, 10]
    assert table["accuracy_mean"].between(0.5, 1.0).all()
    assert {"nmi_mean", "informative_recall"} <= set(table.columns)
    summary = catalog.load("evaluation_summary")
    assert summary["best_k"] in (5, 10) and summary["labels"] is True


@pytest.mark.threads
def test_consensus_pipeline_keeps_every_members_rank_and_their_agreement(tiny_table, fast_parameters):
    fast_parameters["members"] = {**fast_parameters["members"], **CONSENSUS_OVERRIDES["members"]}
    fast_parameters["selection"]["k"] = "auto"
    catalog = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)
    history = catalog.load("training_log")
    assert sorted(set(history["member"])) == [0, 1, 2] and set(history["n_samples"]) == {20}
    assert len(set(history["member_seed"])) == 3
    ranking = catalog.load("feature_ranking")
    assert {"member_0_rank", "member_1_rank", "member_2_rank", "selection_frequency_5", "selection_frequency_10"} <= set(ranking)
    assert not (ranking["member_0_rank"] == ranking["member_1_rank"]).all()  # the members differ
    assert set(ranking["selection_frequency_5"]) <= {0, 1 / 3, 2 / 3, 1}
    assert set(catalog.load("model_state")) == {"member_0", "member_1", "member_2"}
    choice = catalog.load("k_choice")
    assert choice["k"] in (5, 10) and choice["reason"] and set(choice["agreement"]) == {"5", "10"}
    assert len(catalog.load("feature_list")) == choice["k"]
    assert "selection_frequency" in catalog.load("selections")


def test_feature_blocks_through_the_pipeline_one_network_per_block(tiny_table, fast_parameters):
    fast_parameters["members"] = {**fast_parameters["members"], **CONSENSUS_OVERRIDES["members"],
                                  "per_run": 2, "feature_blocks": 2}
    catalog = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)
    history = catalog.load("training_log")
    networks = history.groupby(["member", "block"])["n_features"].first().to_dict()
    assert networks == {(0, 0): 20, (0, 1): 20, (1, 0): 20, (1, 1): 20}
    assert set(catalog.load("model_state")) == {f"member_{m}_block_{b}" for m in (0, 1) for b in (0, 1)}
    assert catalog.load("member_scores")["z_norm"].shape == (2, 40)
    assert len(catalog.load("selections").query("k == 5")) == 5
    views = run_pipeline("views", fast_parameters, inverted_data=catalog.load("inverted_data"))
    assert views.load("view_sample")["light"].shape == (20, 20)  # the first network: 20 features, 20 samples


def test_lgrc_disabled_takes_the_first_k_of_the_order(tiny_table, fast_parameters):
    fast_parameters["selection"]["use_lgrc"] = False
    catalog = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)
    ranking = catalog.load("feature_ranking")["feature_index"].to_numpy()
    selected = catalog.load("selections")
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
    from iclfs.method._config import ViewConfig
    from iclfs.method._views import generate_views

    A = np.random.default_rng(1).normal(size=(12, 10)).astype(np.float32)
    catalog = run_pipeline("views", fast_parameters, inverted_data=A)
    generator = torch.Generator().manual_seed(fast_parameters["seed"])
    views = generate_views(torch.as_tensor(A), ViewConfig(**fast_parameters["views"]), generator)
    np.testing.assert_array_equal(catalog.load("view_sample")["heavy"], views.heavy.numpy())


@pytest.mark.threads
def test_views_pipeline_draws_the_published_streams_first_epoch(fast_parameters, monkeypatch):
    """With views.stream published the inspected views are those training draws after the network's init."""
    from iclfs.method import _training as training_module
    from iclfs.method._config import RuntimeConfig, TrainingConfig, ViewConfig

    A = np.random.default_rng(2).normal(size=(14, 9)).astype(np.float32)
    fast_parameters["views"] = {**fast_parameters["views"], "stream": "published"}
    catalog = run_pipeline("views", fast_parameters, inverted_data=A)
    drawn = []  # (trainer, views): on two threads or more a spare trainer warms the kernels up first
    original = training_module.Trainer.draw_views
    monkeypatch.setattr(training_module.Trainer, "draw_views",
                        lambda self: drawn.append((self, original(self))) or drawn[-1][1])
    training_module.train(A, TrainingConfig(**{**fast_parameters["training"], "epochs": 1}),
                          ViewConfig(**fast_parameters["views"]), RuntimeConfig(device="cpu", progress=False),
                          seed=fast_parameters["seed"])
    trained = drawn[-1][0]  # the training's own trainer draws last
    first = next(views for trainer, views in drawn if trainer is trained)
    np.testing.assert_array_equal(catalog.load("view_sample")["negative"], first.negative.numpy())
    np.testing.assert_array_equal(catalog.load("view_sample")["pair_b"], first.pair_b.numpy())


def test_evaluation_without_labels_skips_kmeans(tiny_table, fast_parameters):
    unlabeled = FeatureTable(X=tiny_table.X, feature_names=tiny_table.feature_names)
    catalog = run_pipeline("__default__", fast_parameters, raw_data=unlabeled)
    table = catalog.load("evaluation_table")
    assert list(table.columns) == ["k"]
    assert catalog.load("evaluation_summary")["labels"] is False


@pytest.mark.parametrize(
    "table, message",
    [
        (FeatureTable(X=np.where(np.eye(8, 40) > 0, np.nan, 1.0)), r"8 NaN .* first at \(row 0, column 0\)"),
        (FeatureTable(X=np.ones((3, 40))), "at least 4"),
        (FeatureTable(X=np.random.default_rng(0).normal(size=(10, 4))), "4 feature.*selection.k is 5"),
        (FeatureTable(X=pd.DataFrame({"a": ["x"] * 8, **{f"f{i}": np.arange(8.0) for i in range(40)}})), "'a'"),
    ],
)
def test_bad_input_fails_in_the_first_node_before_any_output(table, message, fast_parameters):
    catalog = make_catalog(fast_parameters, raw_data=table, previous_selections=pd.DataFrame())
    with pytest.raises(DataValidationError, match=message):
        SequentialRunner().run(register_pipelines()["__default__"], catalog)
    assert "standardized_data" not in catalog or not catalog["standardized_data"].exists()


def test_a_k_grid_above_d_is_trimmed_but_the_production_k_above_d_is_refused(fast_parameters, caplog):
    table = FeatureTable(X=np.random.default_rng(0).normal(size=(12, 8)))
    fast_parameters["selection"] = {**fast_parameters["selection"], "k": 5, "k_values": [5, 50]}
    catalog = run_pipeline("select", fast_parameters, raw_data=table)
    assert sorted(set(catalog.load("selections")["k"])) == [5]
    assert "k = 50 of selection.k_values are left out" in caplog.text
    fast_parameters["selection"] = {**fast_parameters["selection"], "k": 50, "k_values": [5, 50]}
    with pytest.raises(DataValidationError, match="8 feature.*selection.k is 50"):
        run_pipeline("select", fast_parameters, raw_data=table)


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("training", "epochs", -1, "training.epochs = -1 is invalid: expected an integer in 1..100,000"),
        ("runtime", "device", "tpu", "runtime.device 'tpu'"),
        ("training", "learning_rat", 0.1, r"unknown parameter\(s\) training.learning_rat"),
        ("runtime", "precision", "bf16", "runtime.precision 'bf16' needs a CUDA device"),
        ("views", "heavy_keep", 1.5, r"views.heavy_keep = 1.5 is invalid: expected a number in \(0, 1\]"),
        ("views", "stream", "cuda", "views.stream = 'cuda' is invalid: expected one of vectorized, published"),
        ("selection", "quantile", 1.2, r"selection.quantile = 1.2 is invalid: expected a number in \[0, 1\]"),
        ("selection", "alpha", 0.5, "selection.alpha = 0.5 is invalid"),
        ("selection", "k_values", [], "selection.k_values"),
        ("ranking", "score", "l2", "ranking.score = 'l2' is invalid"),
        ("laplacian", "n_neighbors", 40, "laplacian.n_neighbors = 40 is invalid: expected fewer than the 40 samples"),
        ("evaluation", "n_runs", 0, "evaluation.n_runs = 0 is invalid"),
        ("selection", "k", 7, r"selection.k = 7 is invalid: expected 'auto' or one of selection.k_values \[5, 10\]"),
        ("members", "per_run", 0, "members.per_run = 0 is invalid"),
        ("selection", "alpha", float("inf"), "selection.alpha = inf is invalid: expected a finite number"),
    ],
)
def test_bad_parameters_fail_before_any_output(tiny_table, fast_parameters, section, key, value, message):
    fast_parameters["runtime"]["device"] = "cpu"  # the precision check depends on the device
    fast_parameters[section][key] = value
    with pytest.raises(ValueError, match=message):
        run_pipeline("__default__", fast_parameters, raw_data=tiny_table)


def test_every_section_is_checked_before_the_first_node(tiny_table, fast_parameters):
    """A bad key of a section the first node does not read (ranking) still stops the run before it."""
    fast_parameters["ranking"]["score"] = "l2"
    catalog = make_catalog(fast_parameters, raw_data=tiny_table, previous_selections=pd.DataFrame())
    with pytest.raises(ParameterError, match="ranking.score"):
        check_parameters(run_params={}, pipeline=register_pipelines()["__default__"], catalog=catalog)
    assert not catalog["standardized_data"].exists()


@pytest.mark.parametrize("consensus", [False, True], ids=["one-run", "consensus"])
@pytest.mark.threads
def test_same_data_parameters_seed_and_threads_give_the_identical_selection_on_cpu(tiny_table, fast_parameters,
                                                                                   consensus):
    fast_parameters["runtime"]["device"] = "cpu"
    if consensus:
        fast_parameters["members"] = CONSENSUS_OVERRIDES["members"]
    first = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)
    second = run_pipeline("__default__", fast_parameters, raw_data=tiny_table)
    pd.testing.assert_frame_equal(first.load("feature_ranking"), second.load("feature_ranking"))
    pd.testing.assert_frame_equal(first.load("selections"), second.load("selections"))
    np.testing.assert_array_equal(first.load("member_scores")["z_norm"], second.load("member_scores")["z_norm"])


def test_constant_and_near_constant_features_never_produce_nan(tiny_table, fast_parameters):
    X = np.asarray(tiny_table.X, dtype=np.float64).copy()
    X[:, 0] = 5.0                      # constant
    X[:, 1] = 1e6 + 1e-9 * np.arange(40)  # constant up to round-off
    X[:, 2] = 0.0
    X[7, 2] = 1e-3                     # near-constant: one sample differs
    table = FeatureTable(X=X, y=tiny_table.y, feature_names=tiny_table.feature_names)
    catalog = run_pipeline("__default__", fast_parameters, raw_data=table)
    assert np.isfinite(catalog.load("standardized_data")).all()
    for name in ("feature_ranking", "selections", "evaluation_table"):
        frame = catalog.load(name).select_dtypes("number")
        assert not frame.isna().any().any(), name
    ls = catalog.load("laplacian_scores").set_index("feature_index")["laplacian_score"]
    assert np.isinf(ls[[0, 1]]).all() and np.isfinite(ls[2])
    assert all(np.isfinite(v).all() for v in catalog.load("member_scores").values())


def test_select_publishes_a_named_list_the_reduced_data_and_stability(tiny_table, fast_parameters):
    unlabeled = FeatureTable(X=tiny_table.X, feature_names=tiny_table.feature_names)
    first = run_pipeline("select", fast_parameters, raw_data=unlabeled)
    listing = first.load("feature_list")
    assert list(listing.columns) == ["rank", "feature_name", "feature_index", "score", "score_name",
                                     "laplacian_score", "selection_frequency", "stable"]
    assert set(listing["selection_frequency"]) <= {0.0, 1.0}  # one member: in its first 5, or swapped in by LGRC
    assert listing["stable"].tolist() == (listing["selection_frequency"] == 1.0).tolist()  # its own first 5
    assert first.load("k_choice") == {"k": 5, "reason": "selection.k = 5"}
    assert list(listing["rank"]) == [1, 2, 3, 4, 5]
    reduced = first.load("reduced_data")
    assert list(reduced.columns) == listing["feature_name"].tolist()
    np.testing.assert_array_equal(reduced.to_numpy(), np.asarray(tiny_table.X)[:, listing["feature_index"]])
    assert first.load("selection_stability")["previous_version"] is None

    previous = first.load("selections").copy()
    previous.attrs["version"] = "2026-01-01T00.00.00.000Z"
    previous.loc[previous["k"] == 5, "feature_name"] = ["gone"] + previous.loc[previous["k"] == 5, "feature_name"].tolist()[1:]
    second = run_pipeline("select", fast_parameters, raw_data=unlabeled, previous_selections=previous)
    stability = second.load("selection_stability")
    assert stability["previous_version"] == "2026-01-01T00.00.00.000Z"
    assert stability["per_k"][10]["jaccard"] == 1.0
    assert stability["per_k"][10]["rank_correlation"] == pytest.approx(1.0)
    assert stability["per_k"][5]["left"] == ["gone"] and stability["per_k"][5]["entered"] == [listing["feature_name"][0]]
    assert stability["per_k"][5]["jaccard"] == 4 / 6


def stored_run(folder, version: str, member_scores: dict, names: list[str], laplacian: pd.DataFrame, sections: dict,
               ground_truth: dict) -> tuple[dict, pd.DataFrame, MemberHistory]:
    """One run's start and ranking nodes on a real member history under ``folder``, its history then stored as
    ``version``: ``(history_start, feature_ranking, the history stored)``."""
    from kedro.io.core import Version

    from iclfs.io.datasets import MemberHistoryDataset, MemberHistoryView
    from iclfs.pipelines.ranking.nodes import rank_features
    from iclfs.pipelines.training.nodes import start_history

    path = str(folder / "member_history.npz")
    histories = MemberHistoryView(filepath=path, data_source="t", version=Version(None, version)).load()
    record = start_history(histories, names, sections["members"], sections["selection"], 42)
    table, kept = rank_features(member_scores, names, laplacian, ground_truth, record, histories, **sections)
    MemberHistoryDataset(filepath=path, data_source="t", version=Version(None, version)).save(kept)
    return record, table, kept


def test_a_carrying_run_holds_each_list_to_the_last_list_handed_on_in_the_selection_stage(tmp_path):
    from iclfs.method._config import SelectionConfig, Settings
    from iclfs.method._lgrc import hold, select_every_k as select
    from iclfs.method._ranking import carried_laplacian
    from iclfs.pipelines.selection.nodes import select_every_k

    rng = np.random.default_rng(4)
    names = [f"g{j}" for j in range(30)]
    parameters = Settings().with_overrides("selection.k=5,selection.k_values=[5,10]").to_parameters()
    sections = {key: parameters[key] for key in ("ranking", "members", "selection")}
    handed_on, previous = [], pd.DataFrame()
    for run in range(3):
        member_scores = {"z_norm": rng.random((1, 30)), "seed": np.array([run]), "seconds": np.ones(1)}
        laplacian = pd.DataFrame({"feature_index": np.arange(30), "laplacian_score": rng.random(30)})
        truth = {"fingerprint": str(run), "k_values": [5, 10]}
        start, table, history = stored_run(tmp_path, f"2026-01-0{run + 1}T00.00.00.000Z", member_scores, names,
                                           laplacian, sections, truth)
        assert start["holds"] == (run > 0) and start["members"] == run
        assert not any(c.startswith("list_") for c in table.columns)  # the ranking stage orders; selection selects
        selected = select_every_k(table, laplacian, truth, previous, start, sections["selection"])
        handed_on.append({k: tuple(group["feature_name"]) for k, group in selected.groupby("k")})
        last = (table, laplacian, truth, previous, start)
        previous = selected
    # a history built on with a note (a damaged newer version passed over) holds as well, as chain.run does
    passed_over = {**last[4], "note": "the member history v2 cannot be read (damaged); it is passed over"}
    assert select_every_k(*last[:4], passed_over, sections["selection"]).equals(selected)
    # the third run's list at 5: the second's features among its wider selection (3 x 5, gated by the members'
    # mean Laplacian scores) stay, the best of the others fill the rest, the first 5 / 2 always enter
    gate = carried_laplacian(history, names, float("inf"))
    wider = select(table["feature_index"].to_numpy(), gate, SelectionConfig(), [15])[15]
    assert [names[j] for j in hold(handed_on[1][5], wider, names, 5)] == list(handed_on[2][5])
    assert {names[j] for j in wider[:3]} <= set(handed_on[2][5])
    assert set(handed_on[2][5]) != {names[j] for j in wider[:5]}  # the hold kept what a plain list would drop


@pytest.mark.parametrize("members", [1, 2])
def test_a_first_carrying_run_hands_on_exactly_what_a_run_without_carrying_does(tmp_path, members):
    from iclfs.method._config import Settings
    from iclfs.pipelines.selection.nodes import select_every_k
    from iclfs.pipelines.ranking.nodes import rank_features
    from iclfs.pipelines.training.nodes import start_without_history

    rng = np.random.default_rng(3)
    names = [f"g{j}" for j in range(12)]
    member_scores = {"z_norm": rng.random((members, 12)), "seed": np.arange(members), "seconds": np.ones(members)}
    laplacian = pd.DataFrame({"feature_index": np.arange(12), "laplacian_score": rng.random(12)})
    parameters = Settings().with_overrides("selection.k=5,selection.k_values=[5,10]").to_parameters()
    sections = {key: parameters[key] for key in ("ranking", "members", "selection")}
    truth = {"fingerprint": "f", "k_values": [5, 10]}
    start, table, carried = stored_run(tmp_path, "2026-01-01T00.00.00.000Z", member_scores, names, laplacian,
                                       sections, truth)
    assert start["carry"] and not start["holds"]
    # the benchmark's run: its start keeps no history (it never reads the stored one: an empty stand-in serves)
    one_run = start_without_history(42)
    assert not one_run["carry"] and not one_run["holds"]
    alone, none = rank_features(member_scores, names, laplacian, truth, one_run, None, **sections)
    assert none.members == ()
    pd.testing.assert_frame_equal(table.drop(columns=["members_seen"]), alone)
    pd.testing.assert_frame_equal(select_every_k(table, laplacian, truth, pd.DataFrame(), start, sections["selection"]),
                                  select_every_k(alone, laplacian, truth, pd.DataFrame(), one_run,
                                                 sections["selection"]))
    assert (table["members_seen"] == members).all() and len(carried.members) == members
    _, again, twice = stored_run(tmp_path, "2026-01-02T00.00.00.000Z", member_scores, names, laplacian, sections,
                                 {**truth, "fingerprint": "g"})
    assert len(twice.members) == 2 * members and again["score_name"].iloc[0].startswith("carried mean rank")
