"""iclfs.runner.DaskRunner: the benchmark on a two-worker cluster, what it refuses, where it connects."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import yaml
from kedro.framework.startup import bootstrap_project
from kedro.io import DataCatalog, MemoryDataset
from kedro.pipeline import Node, Pipeline
from kedro.runner import SequentialRunner
from kedro_datasets.json import JSONDataset
from kedro_datasets.pickle import PickleDataset

from iclfs.method._runtime import available_cpus
from iclfs.runner import DaskRunner, InMemoryIntermediateError, read_dask_conf
from tests.distributed._support import CELLS, PROJECT_ROOT, TIMING_COLUMNS, make_project
from tests.project_copy import run_session

pytest.importorskip("distributed", reason="dask[distributed] is not installed")


def cell_tables(root: Path) -> dict[str, pd.DataFrame]:
    cells = root / CELLS
    return {str(path.relative_to(cells)): pd.read_csv(path, keep_default_na=False, na_values=[""])
            for path in sorted(cells.rglob("*.csv"))}


def grid(root: Path, monkeypatch, runner_for) -> dict[str, pd.DataFrame]:
    """The benchmark of both datasets at seeds 42 and 43 in the project copy ``root``."""
    monkeypatch.chdir(root)
    bootstrap_project(root)
    try:
        for seed in (42, 43):
            run_session(root, pipeline_names=["benchmark"], runner=runner_for(), runtime_params={"seed": seed})
    finally:
        mlflow.set_tracking_uri(None)
    return cell_tables(root)


def test_the_benchmark_on_two_workers_gives_the_sequential_cells(tmp_path, data, monkeypatch, dask_cluster,
                                                                  stray_store):
    on_dask = grid(make_project(tmp_path / "dask", data), monkeypatch,
                   lambda: DaskRunner(scheduler=dask_cluster.scheduler_address))
    # the reference: SequentialRunner in another copy (its MLflow runs go to the same store: one store to create)
    store = f"sqlite:///{tmp_path / 'dask' / 'mlflow.db'}"
    in_turn = grid(make_project(tmp_path / "sequential", data, tracking_uri=store), monkeypatch, SequentialRunner)

    # two datasets x (ICLFS, LS, random) x two seeds, every cell on both sides, and nothing half-written
    assert len(on_dask) == 2 * 3 * 2 and sorted(on_dask) == sorted(in_turn)
    assert {key.split("/")[0] for key in on_dask} == {"COIL20", "Isolet"}
    assert not [p for p in (tmp_path / "dask" / CELLS).rglob("*") if p.is_file() and p.suffix != ".csv"]
    for key, table in on_dask.items():
        pd.testing.assert_frame_equal(table.drop(columns=TIMING_COLUMNS), in_turn[key].drop(columns=TIMING_COLUMNS),
                                      obj=key)
    # the metrics (saved by the driver, not the workers) reached the run's MLflow store: one run per seed
    client = mlflow.MlflowClient(tracking_uri=store)
    [experiment] = [e for e in client.search_experiments() if e.name == "iclfs"]
    every = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(every) == 4 and {run.info.status for run in every} == {"FINISHED"}  # 2 Dask + 2 sequential
    runs = [run for run in every if run.data.tags["project_path"] == str(tmp_path / "dask")]
    assert len(runs) == 2
    assert not stray_store.exists()  # and no worker opened a run of its own
    for run in runs:
        assert "COIL20.loss" in run.data.metrics and "Isolet.LS.best_accuracy" in run.data.metrics
        assert run.data.params["training.epochs"] == "1"  # announced in the driver for the worker's node
    assert {run.data.params["seed"] for run in runs} == {"42", "43"}


# --- a pipeline of its own: refused, or run on a cluster named by conf -------------------------------------------


def double(x):
    return 2 * x


def add(a, b):
    return a + b


def where_am_i(a):
    from distributed import get_worker

    return {"scheduler": get_worker().scheduler.address, "a": a}


def worker_environment(a):
    return {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def test_in_memory_datasets_between_nodes_are_refused_by_name_before_anything_runs(tmp_path):
    catalog = DataCatalog({"x": MemoryDataset(3), "doubled": MemoryDataset(), "kept": MemoryDataset(),
                           "total": PickleDataset(filepath=str(tmp_path / "total.pkl"))})
    pipeline = Pipeline([Node(double, "x", "doubled", name="first"),
                         Node(double, "doubled", "kept", name="second"),
                         Node(add, ["kept", "doubled"], "total", name="third"),
                         Node(double, "x", "unread", name="free")])  # no entry, read by none: allowed
    # an address nobody listens on: the refusal comes before any connection
    runner = DaskRunner(scheduler="tcp://127.0.0.1:9", conf_source=tmp_path / "no conf")
    with pytest.raises(InMemoryIntermediateError) as refused:
        runner.run(pipeline, catalog)
    message = str(refused.value)
    assert "doubled (read by second, third)" in message and "kept (read by third)" in message
    assert "unread" not in message and "x (" not in message  # a free output, a pipeline input
    assert "Nothing was run" in message and not (tmp_path / "total.pkl").exists()


def test_the_scheduler_address_comes_from_dask_yml_and_runner_params_override_it(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from kedro.framework.cli.utils import _split_params
    from kedro.utils import load_obj

    # conf/base/dask.yml as shipped: no address, a LocalCluster sized to the machine
    shipped = tmp_path / "shipped"
    (shipped / "base").mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / "conf" / "base" / "dask.yml", shipped / "base" / "dask.yml")
    assert read_dask_conf(shipped) == {"scheduler": None, "n_workers": None, "threads_per_worker": 1}
    runner = DaskRunner(conf_source=shipped)
    assert runner.scheduler is None and runner._local_cluster_size() == available_cpus()

    # a scheduler in this process (one in-process worker): its address in conf/local/dask.yml, as a user sets it
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        conf = tmp_path / "project" / "conf"
        (conf / "base").mkdir(parents=True), (conf / "local").mkdir()
        (conf / "base" / "dask.yml").write_text(yaml.safe_dump({"dask": {"scheduler": None, "n_workers": 3,
                                                                         "threads_per_worker": 1}}))
        (conf / "local" / "dask.yml").write_text(yaml.safe_dump({"dask": {"scheduler": cluster.scheduler_address}}))
        monkeypatch.chdir(tmp_path / "project")  # where kedro run runs: the runner finds ./conf itself

        # what `kedro run --runner iclfs.runner.DaskRunner` does: the class by its path, no arguments
        runner = load_obj("iclfs.runner.DaskRunner", "kedro.runner")(is_async=False)
        assert runner.scheduler == cluster.scheduler_address
        assert runner.settings.n_workers == 3  # local sets one key; base's others stay
        catalog = DataCatalog({"x": MemoryDataset(21), "a": PickleDataset(filepath=str(tmp_path / "a.pkl")),
                               "seen": JSONDataset(filepath=str(tmp_path / "seen.json"))})
        runner.run(Pipeline([Node(double, "x", "a", name="double"), Node(where_am_i, "a", "seen", name="where")]),
                   catalog)
        seen = json.loads((tmp_path / "seen.json").read_text())
        assert seen == {"scheduler": cluster.scheduler_address, "a": 42}  # run by a worker of that scheduler

        # --runner-params scheduler=... wins over conf, as the CLI parses it
        override = _split_params(None, None, "scheduler=tcp://10.1.2.3:8786,n_workers=5")
        runner = DaskRunner(**override, is_async=False)
        assert runner.scheduler == "tcp://10.1.2.3:8786" and runner.settings.n_workers == 5

    # KEDRO_ENV picks the env folder; a bad value is named with its key
    (conf / "staging").mkdir()
    (conf / "staging" / "dask.yml").write_text("dask: {scheduler: tcp://staging:8786, threads_per_worker: 2}\n")
    monkeypatch.setenv("KEDRO_ENV", "staging")
    assert DaskRunner().scheduler == "tcp://staging:8786" and DaskRunner().settings.threads_per_worker == 2
    (conf / "staging" / "dask.yml").write_text("dask: {n_workers: 0}\n")
    with pytest.raises(ValueError, match="n_workers must be a positive integer or null; got 0"):
        DaskRunner()
    (conf / "staging" / "dask.yml").write_text("dask: {workers: 2}\n")
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['workers'\]"):
        DaskRunner()


def test_a_run_on_its_own_local_cluster_leaves_the_drivers_environment_as_it_found_it(tmp_path, monkeypatch):
    # Dask's nanny writes OMP_NUM_THREADS=1 (and MKL_..., OPENBLAS_..., MALLOC_TRIM_THRESHOLD_) into the process
    # that starts a LocalCluster and never takes them back: a later run from the same process would start on one
    # thread. An earlier test's cluster may have left them here too, so this one sets its own starting point.
    import dask

    names = sorted(dask.config.get("distributed.nanny.pre-spawn-environ"))
    assert "OMP_NUM_THREADS" in names
    for name in names:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # a user's own value stays the user's
    monkeypatch.chdir(tmp_path)  # no conf/: the shipped defaults, here one worker process
    runner = DaskRunner(n_workers=1, is_async=False)
    assert runner.scheduler is None
    catalog = DataCatalog({"x": MemoryDataset(21), "a": PickleDataset(filepath=str(tmp_path / "a.pkl")),
                           "seen": JSONDataset(filepath=str(tmp_path / "seen.json"))})
    runner.run(Pipeline([Node(double, "x", "a", name="double"), Node(worker_environment, "a", "seen",
                                                                     name="environment")]), catalog)
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["OMP_NUM_THREADS"] == "1" and seen["MKL_NUM_THREADS"] == "3"  # the workers got the nanny's
    assert {name: os.environ.get(name) for name in names} == {name: ("3" if name == "MKL_NUM_THREADS" else None)
                                                              for name in names}
