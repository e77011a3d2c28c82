"""kedro-mlflow's datasets under the Dask runner: a node on a worker, its metric logged to the driver's run."""

from __future__ import annotations

import mlflow
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.pipeline import Node, Pipeline
from kedro_datasets.pickle import PickleDataset
from kedro_mlflow.io.metrics import MlflowMetricDataset

from iclfs.runner import DaskRunner, driver_outputs, runs_on_driver

pytest.importorskip("distributed", reason="dask[distributed] is not installed")


def half(x):
    return x / 2


def double(x):
    return 2 * x


def test_a_metric_a_worker_computes_is_logged_to_the_run_kedro_mlflow_opened_in_the_driver(tmp_path, dask_cluster,
                                                                                            stray_store):
    catalog = DataCatalog({"x": MemoryDataset(3), "score": MlflowMetricDataset(key="score"),
                           "total": PickleDataset(filepath=str(tmp_path / "total.pkl"))})
    pipeline = Pipeline([Node(half, "x", "score", name="score"), Node(double, "x", "total", name="total")])
    (score,) = [node for node in pipeline.nodes if node.name == "score"]
    assert driver_outputs(score, catalog) == {"score"} and not runs_on_driver(score, catalog)  # runs on a worker

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        # this store's own experiment: a Kedro session run earlier in the same test process leaves its experiment
        # active, and that id does not exist here
        mlflow.set_experiment("workers")
        with mlflow.start_run() as run:  # as kedro-mlflow opens it, in the driver
            DaskRunner(scheduler=dask_cluster.scheduler_address, conf_source=tmp_path / "no conf").run(pipeline,
                                                                                                      catalog)
        history = mlflow.MlflowClient().get_metric_history(run.info.run_id, "score")
        assert [metric.value for metric in history] == [1.5]
        assert len(mlflow.search_runs(output_format="list", search_all_experiments=True)) == 1
    finally:
        mlflow.set_tracking_uri(None)
    assert not stray_store.exists()  # no worker opened a run of its own
