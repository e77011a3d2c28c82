"""The benchmark's nodes and pipelines: one cell per method, one namespace per dataset, the report."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
import yaml

from iclfs.evaluation._benchmark import RESULT_COLUMNS, gather, method_name
from iclfs.method._config import Settings
from iclfs.method._laplacian import laplacian_scores
from iclfs.pipeline_registry import benchmark_datasets
from iclfs.pipelines.benchmark import create_baselines_pipeline, create_pipeline
from iclfs.pipelines.benchmark.nodes import evaluate_baselines, evaluate_iclfs
from iclfs.pipelines.benchmark_report import create_pipeline as create_report_pipeline
from iclfs.pipelines.benchmark_report.nodes import build_benchmark_report, collect_cells
from tests.evaluation.cells import cell

DATASETS = ("COIL20", "warpPIE10P")


# -- pipelines -----------------------------------------------------------------


def _written(pipeline):
    """Every dataset a pipeline's nodes write, including those another node reads."""
    return {name for node in pipeline.nodes for name in node.outputs}


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_every_namespace_has_the_same_nodes_and_shares_parameters():
    pipeline = create_pipeline(DATASETS)
    namespaces = {node.namespace for node in pipeline.nodes}
    assert namespaces == set(DATASETS)
    per_namespace = {ns: sorted(n.name.split(".", 1)[1] for n in pipeline.nodes if n.namespace == ns)
                     for ns in namespaces}
    assert len({tuple(v) for v in per_namespace.values()}) == 1
    assert {"validate_and_standardize", "train_members", "rank_features", "select_every_k", "evaluate_iclfs",
            "evaluate_baselines"} <= set(per_namespace["COIL20"])
    params = {i for i in pipeline.inputs() if i.startswith("params:")}
    assert params and all("." not in p for p in params)  # shared, not COIL20.params
    assert "parameters" in pipeline.inputs()
    assert {f"{ns}.raw_data" for ns in DATASETS} <= pipeline.inputs()
    assert {f"{ns}.{cells}_cells" for ns in DATASETS for cells in ("iclfs", "baseline")} <= _written(pipeline)
    assert not create_pipeline().nodes  # no dataset, no namespace


def test_the_baselines_pipeline_trains_nothing_and_writes_the_same_cells():
    baselines, full = create_baselines_pipeline(DATASETS), create_pipeline(DATASETS)
    names = {node.name.split(".", 1)[1] for node in baselines.nodes if node.namespace == "COIL20"}
    assert {"validate_and_standardize", "evaluate_baselines"} <= names
    assert not names & {"train_members", "evaluate_iclfs", "rank_features"}
    assert {node.namespace for node in baselines.nodes} == set(DATASETS)
    assert "COIL20.baseline_cells" in _written(baselines) & _written(full)
    assert all("." not in p for p in baselines.inputs() if p.startswith("params:"))


def test_the_report_pipeline_collects_then_builds():
    pipeline = create_report_pipeline()
    assert {node.name for node in pipeline.nodes} == {"collect_cells", "build_report"}
    assert pipeline.inputs() == {"benchmark_cells", "published_cells", "parameters", "params:benchmark",
                                 "params:benchmark_report"}
    assert pipeline.outputs() == {"benchmark_report", "benchmark_figures"}


def _conf(tmp_path, names, local=None):
    conf = tmp_path / "conf"
    (conf / "base").mkdir(parents=True)
    (conf / "local").mkdir()
    main, validation = tmp_path / "datasets", tmp_path / "validation"
    main.mkdir(), validation.mkdir()
    (conf / "base" / "globals.yml").write_text(yaml.safe_dump({"datasets_dir": str(main),
                                                               "validation_dir": str(validation)}))
    (conf / "base" / "parameters.yml").write_text(yaml.safe_dump({"benchmark": {
        "datasets": names, "folders": ["${globals:datasets_dir}", "${globals:validation_dir}"],
        "baselines": ["spec"]}}))
    if local:
        (conf / "local" / "parameters.yml").write_text(yaml.safe_dump(local))
    return conf, main, validation


def test_a_benchmark_dataset_whose_file_is_missing_is_left_out_and_named(tmp_path):
    conf, main, validation = _conf(tmp_path, ["COIL20", "nci9", "Isolet", "ORL"])
    (main / "COIL20.mat").write_bytes(b"")
    (validation / "Isolet.mat").write_bytes(b"")  # the validation folder counts too
    records = _Records()
    logger = logging.getLogger("iclfs.pipeline_registry")  # Kedro's logging config may stop propagation
    logger.addHandler(records)
    level = logger.level
    logger.setLevel(logging.DEBUG)  # said quietly: every kedro command builds the registry
    try:
        found = benchmark_datasets(conf)
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)
    assert found == ("COIL20", "Isolet")  # conf order
    [message] = records.messages
    assert message.startswith("Benchmark datasets left out") and message.endswith(": nci9, ORL"), message
    assert str(main) in message and str(validation) in message


def test_local_conf_chooses_the_benchmark_datasets(tmp_path):
    conf, main, _ = _conf(tmp_path, ["COIL20", "arcene"], local={"benchmark": {"datasets": ["arcene"]}})
    for name in ("COIL20", "arcene"):
        (main / f"{name}.mat").write_bytes(b"")
    assert benchmark_datasets(conf) == ("arcene",)
    # no conf folder at all: no benchmark dataset (the list is kept in conf alone)
    assert benchmark_datasets(tmp_path / "nowhere") == ()


# -- nodes ---------------------------------------------------------------------


@pytest.fixture
def three_clusters():
    rng = np.random.default_rng(0)
    codes = np.repeat([0, 1, 2], 20)
    X = rng.standard_normal((60, 30))
    X[:, :5] += 4 * codes[:, None]  # five informative columns
    X = (X - X.mean(0)) / X.std(0)
    return X.astype(np.float32), {"classes": ["a", "b", "c"], "codes": codes.tolist()}


def _parameters(**changes):
    """Kedro's ``parameters``: every section, plus keys that are not sections."""
    text = ",".join(f"{k}={v}" for k, v in changes.items())
    settings = Settings().with_overrides("selection.k=5,selection.k_values=[5,10,50],evaluation.n_runs=3,"
                                         "members.per_run=1")
    parameters = settings.with_overrides(text).to_parameters()
    parameters["benchmark"] = {"baselines": ["ls"]}
    parameters["baselines"] = {"random": {"rankings": 4}}
    parameters["data_source"] = "synthetic"
    return parameters


def _history(members=1, epochs=2, seconds=(1.5, 2.5, 3.0)):
    rows = [{"member": m, "epoch": e + 1, "loss": 1.0, "member_seconds": seconds[m], "device": "cpu"}
            for m in range(members) for e in range(epochs)]
    return pd.DataFrame(rows)


def _selected(*selections):
    rows = [{"k": len(s), "rank": r + 1, "feature_index": j} for s in selections for r, j in enumerate(s)]
    return pd.DataFrame(rows)


def test_evaluate_iclfs_writes_the_runs_cell(three_clusters):
    X, labels = three_clusters
    parameters = _parameters(**{"training.schedule": "paper", "seed": 7})
    selected = _selected(list(range(5)), list(range(29, 19, -1)))
    cells = evaluate_iclfs(X, labels, {"source": "/data/toy.mat"}, selected, _history(), parameters)
    assert list(cells) == ["iclfs/seed_7"]  # the method's slug, the run's seed
    table = cells["iclfs/seed_7"]
    assert list(table.columns) == RESULT_COLUMNS
    assert set(table["dataset"]) == {"toy"} and set(table["method"]) == {"ICLFS"}
    assert list(table["k"]) == [5, 10] and (table["seed"] == 7).all() and (table["n_runs"] == 3).all()
    assert table["accuracy_mean"].iloc[0] == pytest.approx(1.0)  # the five informative columns
    assert table["selected"].iloc[0] == "0 1 2 3 4"
    assert (table["seconds"] == 1.5).all() and (table["epochs"] == 2).all()
    assert set(table["schedule"]) == {"paper"} and set(table["device"]) == {"cpu"}


def test_a_cell_of_several_members_counts_every_members_time_and_epochs(three_clusters):
    X, labels = three_clusters
    members = {"members.per_run": 3, "members.epochs": 2, "members.subsample": 0.5}
    parameters = _parameters(**members)
    cells = evaluate_iclfs(X, labels, {"source": "toy.mat"}, _selected(list(range(5))), _history(members=3),
                           parameters)
    [(key, table)] = cells.items()
    name = method_name(Settings.from_parameters(parameters))
    assert name == "ICLFS [fast, 3 members of 2 epochs, 0.5 of samples]"
    assert key == "iclfs-fast-3-members-of-2-epochs-0.5-of-samples/seed_42" and set(table["method"]) == {name}
    assert (table["seconds"] == 1.5 + 2.5 + 3.0).all() and (table["epochs"] == 6).all()


def test_the_protocol_refuses_unlabelled_data(three_clusters):
    X, _ = three_clusters
    with pytest.raises(ValueError, match="needs class labels.*toy.csv has none"):
        evaluate_iclfs(X, {"classes": [], "codes": []}, {"source": "data/toy.csv"}, _selected([0, 1, 2, 3, 4]),
                       _history(), _parameters())
    with pytest.raises(ValueError, match="needs class labels.*toy.csv has none"):
        evaluate_baselines(X, {"classes": [], "codes": []}, {"source": "data/toy.csv"}, X, {"baselines": ["spec"]},
                           {}, {"k": 5, "k_values": [5]}, {"n_runs": 3}, {}, 0)


def test_evaluate_baselines_writes_one_cell_per_baseline(three_clusters):
    X, labels = three_clusters
    benchmark = {"baselines": ["ls", "spec", "mcfs", "ndfs", "variance", "dispersion", "random", "all_features"]}
    options = {"random": {"rankings": 4}, "mcfs": {"n_neighbors": 5}, "ndfs": {"n_neighbors": 5, "max_iter": 5}}
    measured = X - X.min()  # the table before standardization: nonnegative, so dispersion serves it
    # the grid data_processing stored: selection.k_values [5, 10, 50] up to d = 30
    cells = evaluate_baselines(X, labels, {"source": "/data/toy.mat", "k_values": [5, 10]}, measured, benchmark,
                               options, {"k": 5, "k_values": [5, 10, 50]}, {"n_runs": 3}, {"num_threads": 1}, 42)
    assert sorted(cells) == ["all-features/seed_42", "dispersion/seed_42", "ls/seed_42", "mcfs/seed_42",
                             "ndfs/seed_42", "random/seed_42", "spec/seed_42", "variance/seed_42"]
    for key, table in cells.items():
        assert list(table.columns) == RESULT_COLUMNS, key
        assert set(table["dataset"]) == {"toy"} and (table["seed"] == 42).all()
        assert (table["schedule"] == "none").all() and (table["epochs"] == 0).all()
        if key.startswith("all-features"):
            assert list(table["k"]) == [30] and (table["n_runs"] == 3).all()
        else:
            assert list(table["k"]) == [5, 10], key  # k = 50 > d left out
    # LS: the lowest Laplacian scores of its own graph first
    scores = laplacian_scores(X, 3)
    assert cells["ls/seed_42"]["selected"].iloc[0] == " ".join(map(str, np.argsort(scores, kind="stable")[:5]))
    assert (cells["random/seed_42"]["n_runs"] == 12).all()  # 4 orders x 3 runs, pooled
    assert (cells["random/seed_42"]["selected"] == "").all()


def test_a_benchmark_run_logs_each_cells_best_accuracy_under_a_name_with_its_dataset_and_method():
    from iclfs.project._tracked import cell_metrics

    def cell(method, accs):
        return pd.DataFrame({"dataset": "COIL20", "method": method, "k": [5, 10], "accuracy_mean": accs})

    cells = {"iclfs-fast/seed_42": lambda: cell("ICLFS [fast]", [0.6, 0.7]),  # a partition's load function
             "ls/seed_42": cell("LS", [0.5, 0.4]), "all-features/seed_42": cell("all features", [0.3, 0.3])}
    assert cell_metrics(cells) == {"COIL20.ICLFS_fast.best_accuracy": 0.7, "COIL20.LS.best_accuracy": 0.5,
                                   "COIL20.all_features.best_accuracy": 0.3}
    assert cell_metrics({}) == {} and cell_metrics(None) == {}


# -- the report's nodes ----------------------------------------------------------


def _cell(method, seed, accs, dataset="COIL20", ks=(5, 10)):
    return cell(method, seed, accs, dataset=dataset, ks=ks, selected=["1 2 3 4 5", ""], n_runs=3, epochs=2)


def test_collect_cells_lets_a_working_cell_replace_its_published_twin():
    working = {"COIL20/ls/seed_42": lambda: _cell("LS", 42, [0.9, 0.9])}
    published = {"COIL20/ls/seed_42": lambda: _cell("LS", 42, [0.1, 0.1]),
                 "COIL20/ls/seed_43": lambda: _cell("LS", 43, [0.2, 0.2])}
    results = collect_cells(working, published)
    assert list(zip(results["seed"], results["accuracy_mean"], strict=True)) == [(42, 0.9), (42, 0.9), (43, 0.2),
                                                                                 (43, 0.2)]
    empty = collect_cells({}, {})
    assert empty.empty and list(empty.columns) == RESULT_COLUMNS


def test_build_compares_the_projects_settings_and_names_missing_files(tmp_path):
    import matplotlib.pyplot as plt

    (tmp_path / "COIL20.mat").write_bytes(b"")
    parameters = Settings().to_parameters()
    default = method_name(Settings())
    results = gather({"a": _cell(default, 42, [0.6, 0.5]), "b": _cell("LS", 42, [0.5, 0.4]),
                      "c": _cell("LS", 42, [0.4, 0.4], dataset="arcene")})
    report, figures = build_benchmark_report(results, parameters, {"datasets": ["COIL20", "arcene", "nci9"],
                                                  "folders": [str(tmp_path), str(tmp_path / "validation")]},
                            {"seeds": [42, 43]})
    try:
        assert f"| dataset | {default} (the default) |" in report
        assert "| COIL20 | " in report and "over the outer seeds 42, 43" in report
        assert f"- **nci9**: nci9.mat is in none of {tmp_path}, {tmp_path / 'validation'}" in report
        assert "- **arcene**: arcene.mat is in none of" in report  # its cells were published elsewhere
        assert "- **COIL20**" not in report
        assert set(figures) == {"COIL20.png", "arcene.png"}
    finally:
        for fig in figures.values():
            plt.close(fig)
