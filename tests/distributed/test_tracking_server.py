"""Tracking that takes concurrent writers: two `kedro run`s at once against a real `mlflow server` (SQLite store),
through kedro-mlflow and its companion hook."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from iclfs.project._tracking import TrackingUnavailableError, check_tracking_store, mask_credentials
from tests.distributed._support import PYTHON, environment, free_port, make_project, stop, wait_for_port

MLFLOW = Path(sys.executable).with_name("mlflow")


@pytest.fixture(scope="module")
def tracking_server(tmp_path_factory):
    """``mlflow server --backend-store-uri sqlite:///...`` on a free loopback port; stopped at the end, always."""
    if not MLFLOW.is_file():
        pytest.skip(f"no mlflow command next to {sys.executable}")
    folder = tmp_path_factory.mktemp("server")
    port = free_port()
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(
        [str(MLFLOW), "server", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        # no background job runner: these tests need the tracking API alone
        env=environment(MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"))
    try:
        try:
            wait_for_port(port, server)
        except (RuntimeError, TimeoutError) as err:
            log.flush()
            raise AssertionError(f"{err}\n{(folder / 'server.log').read_text()[-3000:]}") from None
        yield f"http://127.0.0.1:{port}", port
    finally:
        stop(server)
        log.close()


def test_two_kedro_runs_at_once_track_to_one_server(tmp_path, data, tracking_server):
    """One run per refresh, named, with metrics at k and the method's parameters: one run reaches the server by
    mlflow.yml, the other by MLFLOW_TRACKING_URI, which wins over its mlflow.yml's SQLite file."""
    import mlflow

    uri, _ = tracking_server
    by_conf = make_project(tmp_path / "by_conf", data, tracking_uri=uri)
    by_environment = make_project(tmp_path / "by_environment", data,
                                  tracking_uri=f"sqlite:///{tmp_path / 'by_environment' / 'unused.db'}")
    # A fresh store: both first runs get or create the experiment at once (mlflow/mlflow#4123).
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = []
    for project, source, table, extra in ((by_conf, "a", "COIL20.mat", {}),
                                          (by_environment, "b", "Isolet.mat", {"MLFLOW_TRACKING_URI": uri})):
        env = environment()
        env.update(extra)
        runs.append(subprocess.Popen([PYTHON, "-m", "kedro", "run", "--pipeline", "select",
                                      "--params", f"data_source={source},input={data / table}"],
                                     cwd=project, env=env, text=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True))
    try:
        outputs = [run.communicate(timeout=240)[0] for run in runs]
    finally:
        for run in runs:
            stop(run)
    for run, output in zip(runs, outputs, strict=True):
        assert run.returncode == 0, output[-4000:]
    assert not (tmp_path / "by_environment" / "unused.db").exists()

    [experiment] = [e for e in client.search_experiments() if e.name == "iclfs"]
    found = client.search_runs([experiment.experiment_id])
    assert len(found) == 2 and {run.info.status for run in found} == {"FINISHED"}
    # one run each, neither lost nor merged, named by data source, method and version
    names = sorted(run.info.run_name for run in found)
    assert [name.split(" · ")[:2] for name in names] == [["a", "iclfs"], ["b", "iclfs"]]
    for run in found:
        params, metrics = run.data.params, run.data.metrics
        assert params["training.epochs"] == "1" and params["runtime.num_threads"] == "1"
        assert params["selection.k"] == "5" and metrics["k"] == 5
        assert not any(key.startswith("baselines.") for key in params)  # ICLFS's parameters only
        assert params["member_seeds"] == params["seed"]  # one member, its own seed
        epochs = int(params["training.epochs"])  # one member
        assert len(client.get_metric_history(run.info.run_id, "loss")) == epochs  # one value an epoch
        assert run.data.tags["data_source"] in ("a", "b") and run.data.tags["runner"] == "SequentialRunner"
        assert run.info.run_name == f"{run.data.tags['data_source']} · iclfs · {run.data.tags['version']}"


def test_credentials_stay_out_of_the_preflight_message(tracking_server):
    _, port = tracking_server
    live = f"http://user:pw@127.0.0.1:{port}"
    assert mask_credentials(live) == f"http://***@127.0.0.1:{port}"
    check_tracking_store(live)  # the live server answers: judged reachable, no error

    dead = f"http://user:pw@127.0.0.1:{free_port()}"
    with pytest.raises(TrackingUnavailableError) as refused:
        check_tracking_store(dead)
    message = str(refused.value)
    assert "pw" not in message and "user" not in message
    assert f"http://***@127.0.0.1:{dead.rsplit(':', 1)[1]}" in message and "does not answer" in message
