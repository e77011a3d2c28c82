"""The whole project through a KedroSession, in a throw-away copy of the project.

The copy has its own data/ and mlflow.db, so tests never touch the user's.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import scipy.io
import yaml
from kedro.framework.session import KedroSession

from iclfs import _threads
from iclfs.method._config import ParameterError
from tests.pipelines.conftest import mlflow_runs, run_session, versions

def test_default_run_writes_versioned_artifacts_and_an_mlflow_run(project):
    run_session(project)

    outputs = {
        "03_primary/synthetic/standardized_data.npy",
        "05_model_input/synthetic/inverted_data.npy",
        "06_models/synthetic/iclfs/model_state.pt",
        "07_model_output/synthetic/iclfs/training_log.csv",
        "07_model_output/synthetic/iclfs/member_scores.npz",
        "07_model_output/synthetic/iclfs/feature_ranking.csv",
        "07_model_output/synthetic/iclfs/laplacian_scores.csv",
        "07_model_output/synthetic/iclfs/selections.csv",
        "08_reporting/synthetic/iclfs/evaluation_table.csv",
        "08_reporting/synthetic/iclfs/evaluation_summary.json",
        "08_reporting/synthetic/iclfs/accuracy_vs_k.png",
        "08_reporting/synthetic/iclfs/run_report.html",
    }
    run_versions = {tuple(versions(project, path)) for path in outputs}
    assert len(run_versions) == 1 and len(next(iter(run_versions))) == 1, run_versions
    version = next(iter(run_versions))[0]
    table = pd.read_csv(project / "data/08_reporting/synthetic/iclfs/evaluation_table.csv" / version
                        / "evaluation_table.csv")
    assert list(table["k"]) == [5, 10]
    assert {"accuracy_mean", "accuracy_std", "nmi_mean", "informative_recall"} <= set(table.columns)

    (run,) = mlflow_runs(project)
    assert run.info.status == "FINISHED" and run.info.run_name == f"synthetic · iclfs · {version}"
    assert run.data.params["training.epochs"] == "2"
    assert run.data.params["selection.k_values"] == "[5, 10]"
    assert not any(key.startswith("baselines.") for key in run.data.params)  # the method's own parameters only
    assert run.data.tags["runner"] == "SequentialRunner" and run.data.tags["data_source"] == "synthetic"
    assert run.data.tags["pipeline"] == "select"  # no --pipelines: the default, which is select, by its name
    # the policy this process applied as it started
    assert run.data.tags["thread_policy"] == _threads.summary(_threads.APPLIED)
    assert _threads.describe(_threads.APPLIED) == f"thread policy {run.data.tags['thread_policy']}"
    assert run.data.tags["thread_policy"].startswith(_threads.APPLIED.policy)
    record = json.loads((project / "data/08_reporting/synthetic/run_record.json" / version / "run_record.json")
                        .read_text())
    assert record["pipelines"] == ["select"]
    client = mlflow.MlflowClient()
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == [1, 2]  # one value an epoch
    # metrics at the list's k under plain names: never a step per k
    assert run.data.metrics["k"] == 5 and {"accuracy", "best_k", "best_accuracy"} <= set(run.data.metrics)
    assert [m.step for m in client.get_metric_history(run.info.run_id, "accuracy")] == [0]
    assert table.set_index("k").loc[5, "accuracy_mean"] == pytest.approx(run.data.metrics["accuracy"])
    (used,) = run.inputs.dataset_inputs
    assert used.dataset.name == "synthetic" and used.dataset.digest
    artifacts = {a.path for folder in ("model", "plots", "tables")
                 for a in client.list_artifacts(run.info.run_id, folder)}
    assert {"model/model_state.pt", "plots/accuracy_vs_k.png", "plots/training_loss.png",
            "tables/selections.csv", "tables/evaluation_table.csv", "tables/metrics_per_k.csv"} <= artifacts


@pytest.mark.slow
def test_each_stage_reruns_alone_from_saved_inputs_and_keeps_old_versions(project):
    run_session(project)
    ranking_path = project / "data/07_model_output/synthetic/iclfs/feature_ranking.csv"
    (first,) = versions(project, "07_model_output/synthetic/iclfs/feature_ranking.csv")
    before = (ranking_path / first / "feature_ranking.csv").read_bytes()

    for name in ("data_processing", "views", "training", "ranking", "laplacian", "selection", "evaluation"):
        run_session(project, pipeline_names=[name])

    assert len(versions(project, "07_model_output/synthetic/iclfs/feature_ranking.csv")) == 2
    assert len(versions(project, "08_reporting/synthetic/iclfs/evaluation_table.csv")) == 2
    assert (ranking_path / first / "feature_ranking.csv").read_bytes() == before
    assert len(mlflow_runs(project)) == 8


def test_runtime_data_source_separates_artifacts(project):
    run_session(project, pipeline_names=["data_processing"], runtime_params={"data_source": "other"})
    assert versions(project, "03_primary/other/standardized_data.npy")
    assert not (project / "data/03_primary/synthetic").exists()


def test_mat_without_x_fails_before_anything_is_written(project):
    bad = project / "bad.mat"
    scipy.io.savemat(bad, {"data": np.ones((8, 20)), "Y": np.arange(8)})
    catalog = {"raw_data": {"type": "iclfs.io.datasets.FeatureTableDataset", "filepath": str(bad)}}
    (project / "conf/local/catalog.yml").write_text(yaml.safe_dump(catalog))
    with pytest.raises(Exception, match=r"bad\.mat: no data matrix under key 'X'; keys found: \['Y', 'data'\]"):
        run_session(project)
    assert not (project / "data").exists() or not any(p.is_file() for p in (project / "data").rglob("*"))


def test_csv_with_nan_fails_naming_the_position_before_anything_is_written(project):
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(12, 20)), columns=[f"g{i}" for i in range(20)])
    frame.iloc[3, 7] = np.nan
    frame.to_csv(project / "table.csv", index=False)
    catalog = {"raw_data": {"type": "iclfs.io.datasets.FeatureTableDataset", "filepath": str(project / "table.csv")}}
    (project / "conf/local/catalog.yml").write_text(yaml.safe_dump(catalog))
    with pytest.raises(Exception, match=r"1 NaN and 0 infinite value\(s\).*\(row 3, column 7\)"):
        run_session(project)
    assert not (project / "data").exists() or not any(p.is_file() for p in (project / "data").rglob("*"))


def test_unwritable_output_folder_stops_the_run_before_any_node(project):
    (project / "data" / "07_model_output").mkdir(parents=True)
    (project / "data" / "07_model_output" / "synthetic").write_text("a file where a folder should be")
    with pytest.raises(PermissionError,
                       match=r"feature_ranking \(\S*data/07_model_output/synthetic/iclfs/feature_ranking.csv\)"
                             r": .*synthetic is a file, not a folder"):
        run_session(project)
    assert not (project / "data" / "03_primary").exists()


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in (root / "data").rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_run_killed_mid_training_leaves_earlier_versions_intact(project, signal_name):
    import os
    import signal
    import subprocess
    import sys
    import time

    run_session(project)
    before = snapshot(project)

    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1"}
    log = project / "killed.log"
    with log.open("w") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "kedro", "run", "--params", "training.epochs=100000"],
            cwd=project, env=env, stdout=handle, stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.time() + 300
            while "Running node: train_members" not in log.read_text() and time.time() < deadline \
                    and process.poll() is None:
                time.sleep(0.5)
            assert "Running node: train_members" in log.read_text(), log.read_text()[-2000:]
            time.sleep(3.0)  # well inside the 100000 epochs
            process.send_signal(getattr(signal, signal_name))
            process.wait(timeout=60)
        finally:
            if process.poll() is None:  # never leave a 100000-epoch run behind
                process.kill()
                process.wait()
    assert process.returncode != 0

    after = snapshot(project)
    for path, content in before.items():
        assert after.get(path) == content, f"{path} changed or vanished after the killed run"
    assert not any("06_models" in p for p in set(after) - set(before)), "the killed run saved a model"

    run_session(project)
    assert len(versions(project, "07_model_output/synthetic/iclfs/selections.csv")) == 2
    assert len(versions(project, "06_models/synthetic/iclfs/model_state.pt")) == 2


def test_select_on_an_unlabeled_csv_twice_reports_what_changed(project):
    """The production path: a CSV with a header and an id column, no labels, refreshed."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(30, 24)), columns=[f"gene_{j}" for j in range(24)])
    frame.insert(0, "sample_id", [f"s{i}" for i in range(30)])
    frame.to_csv(project / "expression.csv", index=False)
    catalog = {"raw_data": {"type": "iclfs.io.datasets.FeatureTableDataset", "filepath": str(project / "expression.csv"),
                            "id_column": "sample_id"}}
    (project / "conf/local/catalog.yml").write_text(yaml.safe_dump(catalog))

    run_session(project, pipeline_names=["select"], runtime_params={"data_source": "expression"})
    (first,) = versions(project, "07_model_output/expression/iclfs/feature_list.csv")
    listing = pd.read_csv(project / "data/07_model_output/expression/iclfs/feature_list.csv" / first
                          / "feature_list.csv")
    assert listing["feature_name"].str.startswith("gene_").all() and len(listing) == 5
    reduced = pd.read_parquet(project / "data/07_model_output/expression/iclfs/reduced_data.parquet" / first
                              / "reduced_data.parquet")
    assert list(reduced.columns) == ["sample_id", *listing["feature_name"]]  # joins back by sample
    assert reduced["sample_id"].tolist() == [f"s{i}" for i in range(30)]
    stability = json.loads((project / "data/08_reporting/expression/iclfs/selection_stability.json" / first
                            / "selection_stability.json").read_text())
    assert stability["previous_version"] is None
    table = pd.read_csv(project / "data/08_reporting/expression/iclfs/evaluation_table.csv" / first
                        / "evaluation_table.csv")
    assert list(table.columns) == ["k"]  # no labels: the k-means protocol was skipped

    # without carrying, the second run is the same run again (carried refreshes: tests/pipelines/test_carry.py)
    run_session(project, pipeline_names=["select"],
                runtime_params={"data_source": "expression", "members": {"carry": False}})
    second = versions(project, "08_reporting/expression/iclfs/selection_stability.json")[-1]
    stability = json.loads((project / "data/08_reporting/expression/iclfs/selection_stability.json" / second
                            / "selection_stability.json").read_text())
    assert stability["previous_version"] == first
    assert stability["per_k"]["5"]["jaccard"] == 1.0  # same data, same seed
    runs = mlflow_runs(project)
    assert runs[-1].data.metrics["jaccard"] == 1.0 and "jaccard" not in runs[0].data.metrics


def test_an_old_key_in_local_parameters_is_refused_naming_its_new_name(project):
    """consensus.members and history.max_members moved to members, and their one version under the old name has
    passed: a conf that still sets one is refused in one line naming the new name, even beside the new key."""
    (project / "conf/local/parameters.yml").write_text(yaml.safe_dump({"members": {"kept": 9},
                                                                       "history": {"max_members": 3}}))
    with KedroSession.create(project_path=project) as session:
        with pytest.raises(ParameterError, match=r"^parameter history.max_members is now members.kept: rename it"):
            session.load_context().params


def test_local_parameters_override_single_keys_of_a_section(project):
    (project / "conf/local/parameters.yml").write_text(yaml.safe_dump({"selection": {"k_values": [4, 8], "k": 4},
                                                                       "training": {"epochs": 1},
                                                                       "evaluation": {"n_runs": 2}}))
    with KedroSession.create(project_path=project) as session:
        params = session.load_context().params
    assert params["selection"] == {"k": 4, "k_values": [4, 8], "use_lgrc": True, "alpha": 1.5, "quantile": 0.75,
                                   "method": "iclfs", "n_clusters": None}
    assert params["training"]["epochs"] == 1 and params["training"]["temperature"] == 0.05


def test_a_run_refused_by_its_checks_leaves_no_mlflow_run(project):
    from iclfs.method._config import ParameterError

    with pytest.raises(ParameterError, match=r"selection.k = 7 .* selection.k_values"):
        run_session(project, runtime_params={"selection": {"k": 7}})
    assert not (project / "data").exists() or not any((project / "data").rglob("*.csv"))
    assert (not (project / "mlflow.db").exists()) or mlflow_runs(project) == []  # checked before kedro-mlflow's run
