"""The benchmark's nodes: variant names, one protocol for every method, merging, the report."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from iclfs.evaluation.paper import PAPER_RESULTS
from iclfs.evaluation.baselines import mcfs_ranking
from iclfs.pipelines.benchmark import BENCHMARK_DATASETS, create_baselines_pipeline, create_pipeline
from iclfs.pipelines.benchmark.nodes import (
    RESULT_COLUMNS,
    evaluate_baselines,
    evaluate_methods,
    iclfs_variant,
    merge_results,
    rank_baselines,
)
from iclfs.pipelines.benchmark_report.nodes import (
    best_rows,
    build_report,
    plot_benchmark,
    summarize,
    summary_metrics,
)


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({}, "ICLFS"),
        ({"lgrc": {"enabled": False}}, "ICLFS-WL"),
        ({"lgrc": {"enabled": False}, "training": {"use_decorrelation": False}}, "ICLFS-WLD"),
        ({"lgrc": {"enabled": False}, "training": {"use_decorrelation": False, "use_attention": False}},
         "ICLFS-WLDA"),
        ({"lgrc": {"enabled": False}, "training": {"use_decorrelation": False, "use_attention": False},
          "views": {"positives": "random"}}, "ICLFS-WLDAR"),
        ({"training": {"use_attention": False}}, "ICLFS-WA"),
        ({"ranking": {"score": "h_norm"}}, "ICLFS (h_norm)"),
        ({"training": {"schedule": "fast"}, "lgrc": {"enabled": False}}, "ICLFS-WL [fast]"),
        ({"training": {"schedule": "fast", "precision": "bf16"}}, "ICLFS [fast, bf16]"),
        ({"training": {"precision": "bf16"}}, "ICLFS [bf16]"),
        ({"training": {"schedule": "fast", "precision": "tf32"}}, "ICLFS [fast]"),
        ({"views": {"stream": "reference"}}, "ICLFS [reference stream]"),
        ({"training": {"schedule": "fast"}, "views": {"stream": "reference"}}, "ICLFS [fast, reference stream]"),
        ({"views": {"stream": "vectorized"}}, "ICLFS"),
    ],
)
def test_variant_names_follow_the_papers_ablation_names(base_parameters, changes, name):
    params = copy.deepcopy(base_parameters)
    params["training"]["schedule"] = "paper"  # the literal loop is the paper's ICLFS; others are tagged
    for section, values in changes.items():
        params[section].update(values)
    assert iclfs_variant(params) == name


def test_every_namespace_has_the_same_nodes_and_shares_parameters():
    pipeline = create_pipeline()
    namespaces = {node.namespace for node in pipeline.nodes}
    assert namespaces == set(BENCHMARK_DATASETS)
    per_namespace = {ns: sorted(n.name.split(".", 1)[1] for n in pipeline.nodes if n.namespace == ns)
                     for ns in namespaces}
    assert len({tuple(v) for v in per_namespace.values()}) == 1
    assert {"rank_baselines", "evaluate_methods", "merge_results", "train_model"} <= set(per_namespace["COIL20"])
    params = {i for i in pipeline.inputs() if i.startswith("params:")}
    assert params and all("." not in p for p in params)  # shared, not COIL20.params
    assert {f"{ns}.raw_data" for ns in BENCHMARK_DATASETS} <= pipeline.inputs()


def test_the_baselines_pipeline_trains_nothing_and_shares_the_records():
    baselines, full = create_baselines_pipeline(), create_pipeline()
    names = {node.name.split(".", 1)[1] for node in baselines.nodes if node.namespace == "COIL20"}
    assert {"rank_baselines", "evaluate_baselines", "merge_results"} <= names
    assert not names & {"train_model", "evaluate_methods"}
    assert {node.namespace for node in baselines.nodes} == set(BENCHMARK_DATASETS)
    # the same result table and rankings as the full benchmark, so a rerun replaces rows
    shared = {"COIL20.benchmark_result", "COIL20.previous_benchmark_result", "COIL20.baseline_rankings"}
    assert shared <= baselines.datasets() & full.datasets()
    assert all("." not in p for p in baselines.inputs() if p.startswith("params:"))


@pytest.fixture
def three_clusters():
    rng = np.random.default_rng(0)
    codes = np.repeat([0, 1, 2], 20)
    X = rng.standard_normal((60, 30))
    X[:, :5] += 4 * codes[:, None]  # five informative columns
    X = (X - X.mean(0)) / X.std(0)
    return X.astype(np.float32), {"classes": ["a", "b", "c"], "codes": codes.tolist()}


def _params(base_parameters, **benchmark):
    params = copy.deepcopy(base_parameters)
    params["lgrc"]["k_values"] = [5, 10, 50]
    params["evaluation"]["n_runs"] = 3
    params["training"]["schedule"] = "paper"
    params["benchmark"] = {**params["benchmark"], **benchmark}
    return params


def test_every_method_goes_through_one_protocol(base_parameters, three_clusters):
    X, labels = three_clusters
    params = _params(base_parameters, random_seeds=4)
    ls = pd.DataFrame({"feature_index": np.arange(30), "laplacian_score": np.linspace(0, 1, 30)})
    rankings, seconds = rank_baselines(X, labels, ls, params["benchmark"], params["lgrc"], seed=42)
    # MCFS fits once per k (k = 50 > d has none); the others rank once
    assert set(rankings) == {"laplacian_score", "spec", "mcfs@5", "mcfs@10", "ndfs", "random"}
    assert set(seconds) == {"laplacian_score", "spec", "mcfs", "ndfs", "random", "all_features"}
    assert rankings["random"].shape == (4, 30)
    np.testing.assert_array_equal(rankings["laplacian_score"], np.arange(30))

    selected = pd.DataFrame({"k": [5] * 5 + [10] * 10, "rank": list(range(1, 6)) + list(range(1, 11)),
                             "feature_index": list(range(5)) + list(range(10))})
    history = pd.DataFrame({"seconds": [1.5, 2.5], "device": "cpu", "schedule": "paper"})
    table = evaluate_methods(X, labels, {"source": "/data/toy.mat"}, selected, history, rankings, seconds, params)

    assert list(table.columns) == RESULT_COLUMNS
    assert set(table["dataset"]) == {"toy"}
    iclfs = table[table["method"] == "ICLFS"]
    assert list(iclfs["k"]) == [5, 10] and (iclfs["seconds"] == 4.0).all()
    assert iclfs["accuracy_mean"].iloc[0] == pytest.approx(1.0)  # the five informative columns
    for method in ("LS", "SPEC", "MCFS", "NDFS", "random"):
        assert list(table.loc[table["method"] == method, "k"]) == [5, 10], method  # k = 50 > d dropped
    assert (table.loc[table["method"] == "random", "n_runs"] == 12).all()  # 4 rankings x 3 runs, pooled
    everything = table[table["method"] == "all features"]
    assert list(everything["k"]) == [30] and (everything["n_runs"] == 3).all()
    assert (table["seed"] == 42).all()
    assert (iclfs["epochs"] == params["training"]["epochs"]).all() and (iclfs["schedule"] == "paper").all()
    # baselines are numpy: no device of their own, no schedule, no epochs
    others = table[table["method"] != "ICLFS"]
    assert (others["device"] == "cpu").all() and (others["schedule"] == "none").all() and (others["epochs"] == 0).all()


def test_a_per_k_baseline_is_scored_with_its_own_fit_at_each_k(base_parameters, three_clusters):
    X, labels = three_clusters
    params = _params(base_parameters, baselines=["mcfs"])
    informative_first, noise_first = np.arange(30), np.arange(30)[::-1]
    # at k = 5 the fit picked the five informative columns, at k = 10 only noise
    rankings = {"mcfs@5": informative_first, "mcfs@10": noise_first}
    table = evaluate_baselines(X, labels, {"source": "toy.mat"}, rankings, {"mcfs": 0.5}, params)
    accuracy = dict(zip(table["k"], table["accuracy_mean"], strict=True))
    assert accuracy[5] == pytest.approx(1.0) and accuracy[10] < 0.7
    with pytest.raises(ValueError, match=r"no ranking for mcfs at k = 10 .*'mcfs@5'"):
        evaluate_baselines(X, labels, {"source": "toy.mat"}, {"mcfs@5": informative_first}, {"mcfs": 0.5}, params)


def test_the_real_mcfs_ranking_fits_each_k(base_parameters, three_clusters):
    X, labels = three_clusters
    params = _params(base_parameters)
    rankings, _ = rank_baselines(X, labels, pd.DataFrame(), {"baselines": ["mcfs"], "mcfs": {"n_neighbors": 5}},
                                 params["lgrc"], seed=0)
    for k in (5, 10):
        expected = mcfs_ranking(np.asarray(X, dtype=np.float64), 3, n_neighbors=5, n_nonzero=k)
        np.testing.assert_array_equal(rankings[f"mcfs@{k}"][:k], expected[:k])


def test_the_protocol_refuses_unlabelled_data(base_parameters, three_clusters):
    X, _ = three_clusters
    params = _params(base_parameters, baselines=["all_features"])
    history = pd.DataFrame({"seconds": [1.0], "device": "cpu", "schedule": "paper"})
    with pytest.raises(ValueError, match="needs class labels.*toy.csv has none"):
        evaluate_methods(X, {"classes": [], "codes": []}, {"source": "toy.csv"}, pd.DataFrame(columns=["k"]),
                         history, {}, {}, params)


def test_unknown_baseline_is_named(base_parameters, three_clusters):
    X, labels = three_clusters
    with pytest.raises(ValueError, match=r"unknown benchmark.baselines \['relieff'\]"):
        rank_baselines(X, labels, pd.DataFrame(), {"baselines": ["relieff"]}, {"k_values": [5]}, seed=0)


def _result(method, seed, accs, dataset="COIL20", ks=(50, 100)):
    return pd.DataFrame({
        "dataset": dataset, "method": method, "k": list(ks), "accuracy_mean": accs, "accuracy_std": 0.01,
        "nmi_mean": 0.5, "nmi_std": 0.01, "n_runs": 20, "seconds": 10.0, "evaluation_seconds": 1.0, "seed": seed,
        "device": "cpu", "schedule": "paper", "epochs": 100, "run_at": "2026-11-22T00:00:00Z",
        "versions": "iclfs=0.1.0",
    })[RESULT_COLUMNS]


def test_merge_replaces_the_same_method_and_seed_and_keeps_the_rest():
    old = pd.concat([_result("ICLFS", 42, [0.5, 0.6]), _result("LS", 42, [0.4, 0.3]),
                     _result("ICLFS", 43, [0.55, 0.5])])
    new = pd.concat([_result("ICLFS-WL", 42, [0.45, 0.5]), _result("LS", 42, [0.41, 0.31])])
    merged = merge_results(new, old)
    assert sorted(set(zip(merged["method"], merged["seed"]))) == [("ICLFS", 42), ("ICLFS", 43), ("ICLFS-WL", 42),
                                                                 ("LS", 42)]
    assert list(merged.loc[merged["method"] == "LS", "accuracy_mean"]) == [0.41, 0.31]
    assert len(merged) == 8
    assert merge_results(new, pd.DataFrame()).equals(merge_results(new, None))
    with pytest.raises(ValueError, match="lacks columns"):
        merge_results(new, old.drop(columns=["seed"]))


def test_best_row_ties_go_to_the_smaller_k():
    table = _result("ICLFS", 42, [0.6, 0.6])
    assert int(best_rows(table)["k"].iloc[0]) == 50


def test_report_judges_the_target_and_names_what_is_missing(tmp_path):
    paper = PAPER_RESULTS["COIL20"]["ICLFS"].accuracy / 100
    results = {
        "COIL20": pd.concat([_result("ICLFS", 42, [paper - 0.01, paper - 0.02]), _result("LS", 42, [0.5, 0.55]),
                             _result("ICLFS", 43, [paper - 0.03, paper]), _result("ICLFS-WL", 42, [0.6, 0.61])]),
        "Prostate_GE": pd.concat([_result("ICLFS", 42, [0.70, 0.75], dataset="Prostate_GE"),
                                  _result("LS", 42, [0.58, 0.50], dataset="Prostate_GE"),
                                  _result("ICLFS-WLD", 42, [0.6, 0.6], dataset="Prostate_GE")]),
        "nci9": pd.DataFrame(),
        "TOX_171": _result("ICLFS [fast]", 42, [0.55, 0.5], dataset="TOX_171"),
        "arcene": pd.DataFrame(),
    }
    (tmp_path / "arcene.mat").write_bytes(b"x")
    params = {"seed": 42, "target_points": 2.0, "datasets_dir": str(tmp_path),
              "not_run_reasons": {"arcene": "too slow here.\n", "BASEHOCK": "not in this run"}}
    report, summary = build_report(params, "Likely cause: *unstated details*.", **results)

    figures, same = plot_benchmark(params, **results)
    assert set(figures) == {"COIL20.png", "Prostate_GE.png", "TOX_171.png"} and figures is same
    row = summary[(summary["dataset"] == "COIL20") & (summary["method"] == "ICLFS")].iloc[0]
    assert row["difference"] == pytest.approx(-1.0) and row["target"].startswith("met (within")
    prostate = summary[summary["dataset"] == "Prostate_GE"].iloc[0]
    assert prostate["target"] == "missed" and prostate["difference"] == pytest.approx(75 - 83.97)
    assert "met on 2 of 3 datasets run; at or above the paper on 1" in report
    assert "| TOX_171 | 55.00 ± 1.00 (50) [fast] | 54.77 ± 4.53 (100) | +0.23 | met (at or above) |" in report
    fast = summary[summary["method"] == "ICLFS [fast]"].iloc[0]
    assert fast["paper_accuracy"] == 54.77 and fast["target"] == "met (at or above)"
    assert f"**nci9**: source file {tmp_path / 'nci9.mat'} not found" in report
    assert "- **arcene**: no results for seed 42 in docs/benchmark/arcene.csv yet; too slow here.\n" in report
    assert "BASEHOCK" not in report  # a reason for a dataset outside the run is not a row
    assert "| COIL20 | ICLFS-WL | 61.00 ± 1.00 (100) | 68.17 |" in report
    assert "| COIL20 | 2 | 42: 67.68 (50), 43: 68.68 (100) |" in report  # the seed spread
    # Wall times: the main run (ICLFS at seed 42: 10 s training, LS 10 s, 4 protocol rows of 1 s), then
    # every run (4 methods x seeds of 10 s, 8 protocol rows); the last row sums the datasets.
    assert ("| COIL20 | cpu | ICLFS, seed 42, 100 epochs | 10 | 10 | 4 | 24 | 3 ICLFS trainings (seeds 42, 43) "
            "| 48 | 2026-11-22T00:00:00Z |") in report
    assert "| TOX_171 | cpu | ICLFS [fast], seed 42, 100 epochs | 10 | 0 | 2 | 12 | 1 ICLFS training (seed 42) |" \
        in report
    assert "| **all datasets** | | | 30 | 20 | 10 | 60 | 6 ICLFS trainings | 96 | |" in report
    assert "![COIL20](benchmark/figures/COIL20.png)" in report
    # A miss lists what exists to explain it, then the hand-written notes.
    assert ("- **Prostate_GE**: schedules run: ICLFS; ablations run (best accuracy at seed 42): ICLFS-WLD 60.00; "
            "ICLFS seeds: 1 (42) (fewer than 3); "
            "our LS/SPEC/MCFS/NDFS are +0.79 points from the paper's on average.") in report
    assert "Likely cause: *unstated details*." in report
    assert "- **COIL20**: schedules run" not in report  # met, so not a miss
    assert "The misses" not in build_report(params, **{"COIL20": results["COIL20"]})[0]
    # A dataset run only with fast is checked too, and fast's seeds count.
    tox = pd.concat([_result("ICLFS [fast]", s, [0.40, 0.45], dataset="TOX_171") for s in (42, 43, 44)])
    fast_only = build_report(params, TOX_171=tox)[0]
    assert ("- **TOX_171**: schedules run: ICLFS [fast]; ablations run (best accuracy at seed 42): none; "
            "ICLFS seeds: 3 (42, 43, 44);") in fast_only
    tox = pd.concat([tox, _result("ICLFS-WL [fast]", 43, [0.3, 0.3], dataset="TOX_171")])
    assert ("ablations run (best accuracy at seed 42): ICLFS-WL [fast] (other seeds only); "
            "ICLFS seeds: 3 (42, 43, 44);") in build_report(params, TOX_171=tox)[0]
    assert "| TOX_171 (ICLFS [fast]) | 3 |" in fast_only
    # Ablations run with several seeds get their own spread line; one seed is not a spread.
    tox = pd.concat([tox, _result("ICLFS-WL [fast]", 44, [0.35, 0.2], dataset="TOX_171"),
                     _result("ICLFS-WLD [fast]", 42, [0.5, 0.5], dataset="TOX_171")])
    spread = build_report(params, TOX_171=tox)[0].split("## Seed spread")[1]
    assert "| TOX_171 (ICLFS-WL [fast]) | 2 | 43: 30.00 (50), 44: 35.00 (50) | 32.50 ± 2.50 |" in spread
    assert spread.index("(ICLFS [fast]) | 3") < spread.index("(ICLFS-WL [fast])")
    assert "ICLFS-WLD" not in spread


def test_mlflow_metrics_log_the_row_the_main_table_shows():
    results = {
        "COIL20": pd.concat([_result("ICLFS [fast]", 42, [0.60, 0.62]), _result("ICLFS", 42, [0.65, 0.66]),
                             _result("LS", 42, [0.7, 0.7])]),
        "TOX_171": _result("ICLFS [fast]", 42, [0.55, 0.5], dataset="TOX_171"),
    }
    metrics = summary_metrics(summarize(results, 42, 2.0))
    assert set(metrics) == {"COIL20.best_accuracy", "COIL20.difference_to_paper",
                            "TOX_171.best_accuracy", "TOX_171.difference_to_paper"}
    assert metrics["COIL20.best_accuracy"]["value"] == pytest.approx(66.0)  # the paper's schedule, not fast or LS
    assert metrics["TOX_171.best_accuracy"]["value"] == pytest.approx(55.0)  # run only with fast
    assert metrics["TOX_171.difference_to_paper"]["value"] == pytest.approx(55 - 54.77)
    assert summary_metrics(summarize({"COIL20": pd.DataFrame()}, 42, 2.0)) == {}


def test_summary_of_nothing_is_empty():
    assert summarize({"COIL20": pd.DataFrame()}, 42, 2.0).empty


def test_the_main_table_prefers_the_reference_stream_then_the_literal_loop_then_fast(tmp_path):
    """The published code's draw (views.stream reference) is the row the paper's numbers come from."""
    def report_for(*methods):
        accuracies = {"ICLFS [reference stream]": [0.83, 0.84], "ICLFS": [0.70, 0.75], "ICLFS [fast]": [0.6, 0.6]}
        table = pd.concat([_result(m, 42, accuracies[m], dataset="Prostate_GE") for m in methods])
        params = {"seed": 42, "target_points": 2.0, "datasets_dir": str(tmp_path)}
        return build_report(params, "", Prostate_GE=table)[0]

    everything = report_for("ICLFS [fast]", "ICLFS", "ICLFS [reference stream]")
    assert ("| Prostate_GE | 84.00 ± 1.00 (100) [reference stream] | 83.97 ± 0.47 (50) | +0.03 | "
            "met (at or above) |") in everything
    assert "| Prostate_GE | ICLFS [reference stream], seed 42, 100 epochs |" in everything.replace("| cpu ", "")
    assert "| Prostate_GE | 75.00 ± 1.00 (100) | 83.97" in report_for("ICLFS [fast]", "ICLFS")
    assert "| Prostate_GE | 60.00 ± 1.00 (50) [fast] | 83.97" in report_for("ICLFS [fast]")
