"""Tracking on kedro-mlflow with its companion hook, against a real SQLite store (a server: tests/distributed).

Every test runs whole Kedro sessions in a throw-away copy of the project (fixture ``project``), with kedro-mlflow's
hook registered by its entry point as a user's project has it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import yaml
from kedro.framework.hooks import hook_impl
from kedro.framework.session import KedroSession
from mlflow.entities import ViewType

from iclfs.method._config import ParameterError
from iclfs.method._preprocessing import DataValidationError
from iclfs.project._store import TrackingUnavailableError, opened_alone
from iclfs.project._tracking import TrackingFailedError
from tests.pipelines.conftest import mlflow_runs, run_session, versions
from tests.project_copy import copy_project

pytestmark = pytest.mark.slow

VERSION = re.compile(r"\d{4}-\d\d-\d\dT\d\d\.\d\d\.\d\d\.\d{3}Z")
KEDRO_MLFLOW_TEMPLATE = Path(__import__("kedro_mlflow").__file__).parent / "template/project/mlflow.yml"


def write_mlflow_yml(project: Path, conf: dict) -> None:
    (project / "conf/local/mlflow.yml").write_text(yaml.safe_dump(conf))


def all_runs(store: str) -> list:
    """Every run of the experiment, deleted ones too."""
    client = mlflow.MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name("iclfs")
    return [] if experiment is None else client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL)


def test_a_users_kedro_mlflow_yml_is_accepted_and_the_environments_store_wins(project, monkeypatch, tmp_path):
    """kedro-mlflow's own template (``kedro mlflow init``), as a user brings it; MLFLOW_TRACKING_URI set as well
    as mlflow.yml's store: the environment wins (MLflow's convention, docs/guides/tracking.md)."""
    template = KEDRO_MLFLOW_TEMPLATE.read_text().replace("{{ python_package }}", "iclfs")
    conf = yaml.safe_load(template)
    conf["server"]["mlflow_tracking_uri"] = f"sqlite:///{project / 'mlflow.db'}"  # the file's store: not used
    write_mlflow_yml(project, conf)
    store = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    run_session(project)

    (run,) = all_runs(store)
    (version,) = versions(project, "07_model_output/synthetic/iclfs/selections.csv")
    assert run.info.status == "FINISHED" and run.info.run_name == f"synthetic · iclfs · {version}"
    assert not (project / "mlflow.db").exists()
    # the template's unflattened parameters: kedro-mlflow's choice, the method's sections only
    assert "training" in run.data.params and "baselines" not in run.data.params
    assert run.data.metrics["k"] == 5


def test_a_variance_run_logs_its_own_parameters_the_members_real_seeds_and_airflows_tags(project, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CTX_DAG_ID", "iclfs_synthetic")
    monkeypatch.setenv("AIRFLOW_CTX_DAG_RUN_ID", "scheduled__2026-11-27T00:00:00+00:00")
    monkeypatch.setenv("AIRFLOW_CTX_LOGICAL_DATE", "2026-11-27T00:00:00+00:00")
    run_session(project, runtime_params={"selection": {"method": "variance"}})
    run_session(project)  # ICLFS, twice: the second member's seed comes from the member history, not seed: 42
    run_session(project)

    variance, first, second = mlflow_runs(project)
    assert variance.data.tags["method"] == "variance" and variance.info.run_name.startswith("synthetic · variance · ")
    sections = {key.split(".")[0] for key in variance.data.params}
    assert {"selection", "seed", "member_seeds"} <= sections <= {"selection", "evaluation", "baselines", "seed",
                                                                 "member_seeds"}, sections  # no LGRC, no device
    assert all(key.startswith("baselines.variance") for key in variance.data.params if key.startswith("baselines"))
    assert variance.data.tags["airflow.logical_date"] == "2026-11-27T00:00:00+00:00"
    assert variance.data.tags["airflow.dag_id"] == "iclfs_synthetic"
    assert {"training", "runtime", "laplacian", "views"} <= {key.split(".")[0] for key in first.data.params}
    for run in (first, second):
        log = pd.read_csv(project / "data/07_model_output/synthetic/iclfs/training_log.csv" / run.data.tags["version"]
                          / "training_log.csv")
        seeds = log.drop_duplicates("member")["member_seed"].tolist()
        assert run.data.params["member_seeds"] == ",".join(map(str, seeds))
        assert run.data.params["seed"] == str(seeds[0])
    assert second.data.params["seed"] != first.data.params["seed"]  # the history's next member, not 42 again


def test_a_run_refused_by_its_first_node_leaves_no_mlflow_run(project):
    """dispersion on centred values (the synthetic table has negative values) is refused by the data checks of
    the first node: kedro-mlflow's run is deleted, and nothing of the run is kept."""
    with pytest.raises(DataValidationError, match="needs nonnegative values"):
        run_session(project, runtime_params={"selection": {"method": "dispersion"}})
    assert mlflow_runs(project) == []  # active runs: what `mlflow ui` and search_runs show
    (deleted,) = all_runs(f"sqlite:///{project / 'mlflow.db'}")
    assert deleted.info.lifecycle_stage == "deleted"  # until `mlflow gc` removes it for good


def test_a_quoted_false_and_the_former_keys_in_mlflow_yml_are_refused_in_one_line(project):
    write_mlflow_yml(project, {"enabled": "false", "tracking_uri": "sqlite:///x.db"})
    with pytest.raises(ParameterError) as refused:
        run_session(project)
    assert str(refused.value) == (
        "mlflow.yml: enabled is now tracking.disable_tracking.pipelines (the pipelines not to track, e.g. [select]); "
        "tracking_uri is now server.mlflow_tracking_uri (kedro-mlflow's mlflow.yml: docs/guides/tracking.md)")
    write_mlflow_yml(project, {"tracking": {"run": {"nested": "false"}}})  # kedro-mlflow's own key, a string
    with pytest.raises(ParameterError, match=r"^mlflow.yml: tracking.run.nested: Input should be a valid boolean "
                                             r"\(got 'false'\)"):
        run_session(project)
    assert not (project / "data").exists() and not (project / "mlflow.db").exists()


def test_tracking_off_for_a_pipeline_makes_no_run_and_the_run_is_kept(project):
    conf = yaml.safe_load((project / "conf/local/mlflow.yml").read_text())
    conf["tracking"]["disable_tracking"]["pipelines"] = ["__default__"]
    write_mlflow_yml(project, conf)
    run_session(project)
    assert mlflow_runs(project) == []
    assert versions(project, "07_model_output/synthetic/iclfs/selections.csv")


def test_an_unreachable_server_fails_fast_with_the_uri_and_where_it_came_from(project):
    import socket

    with socket.socket() as sock:  # a loopback port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    conf = yaml.safe_load((project / "conf/local/mlflow.yml").read_text())
    conf["server"]["mlflow_tracking_uri"] = f"http://127.0.0.1:{port}"
    write_mlflow_yml(project, conf)
    with pytest.raises(TrackingUnavailableError, match=rf"^the MLflow tracking store http://127.0.0.1:{port} "
                                                       r"\(server.mlflow_tracking_uri in mlflow.yml\) does not answer"):
        run_session(project)
    assert not (project / "data").exists()


class LockAfterTraining:
    """Once the members are trained, another process holds the SQLite store (BEGIN EXCLUSIVE) for ``seconds``."""

    def __init__(self, store: Path, seconds: float) -> None:
        self.store, self.seconds, self.holder = store, seconds, None

    @hook_impl
    def after_node_run(self, node) -> None:
        if node.name != "train_members" or self.holder is not None:
            return
        script = (f"import sqlite3, time; db = sqlite3.connect({str(self.store)!r}, isolation_level=None); "
                  f"db.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep({self.seconds}); "
                  "db.execute('ROLLBACK')")
        self.holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert self.holder.stdout.readline().strip() == "locked"


def test_a_store_locked_from_the_end_of_training_keeps_the_run_and_marks_its_mlflow_run_failed(project):
    """MLflow waits 20 s on a locked SQLite file: the lock outlasts that, then frees up before the mark."""
    locker = LockAfterTraining(project / "mlflow.db", seconds=26)
    with pytest.raises(TrackingFailedError) as failed:
        with KedroSession.create(project_path=project) as session:
            session._hook_manager.register(locker)
            session.run()
    locker.holder.wait(timeout=60)
    message = str(failed.value)
    assert message.startswith("the run ran and is kept as any complete run, but tracking it failed at the MLflow "
                              "tracking store ")
    assert "database is locked" in message and "is marked FAILED" in message and "Nothing was run" not in message
    (version,) = versions(project, "07_model_output/synthetic/iclfs/selections.csv")  # kept, once, with its record
    record = project / "data/08_reporting/synthetic/run_record.json" / version / "run_record.json"
    assert json.loads(record.read_text())["pipelines"] == ["select"]
    assert (project / "data/latest/synthetic/iclfs/feature_list.csv").is_file()
    (run,) = mlflow_runs(project)
    assert run.info.status == "FAILED" and run.info.run_name == f"synthetic · iclfs · {version}"


def test_the_first_use_of_a_sqlite_store_waits_for_the_process_that_holds_it_and_names_it(tmp_path):
    store = tmp_path / "mlflow.db"
    script = (f"from iclfs.project._store import opened_alone; import time\n"
              f"with opened_alone('sqlite:///{store}'):\n    print('held', flush=True); time.sleep(30)\n")
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(TrackingUnavailableError, match=rf"^the MLflow tracking store {store} is being opened "
                                                           rf"by another process \(process {holder.pid} on "):
            with opened_alone(f"sqlite:///{store}", timeout=1):
                pass
        assert time.monotonic() - started < 10
    finally:
        holder.kill()
        holder.wait()
    with opened_alone(f"sqlite:///{store}", timeout=5):  # the holder is gone: its lock with it
        assert json.loads((tmp_path / ".mlflow.db.lock.holder").read_text())["pid"] == os.getpid()
    assert not (tmp_path / ".mlflow.db.lock.holder").exists()
    with pytest.raises(RuntimeError, match="opening failed"), opened_alone(f"sqlite:///{store}", timeout=5):
        raise RuntimeError("opening failed")
    with opened_alone(f"sqlite:///{store}", timeout=0):  # let go after an exception too
        pass



def test_a_run_creates_names_and_tags_its_mlflow_run_holding_the_sqlite_stores_lock(project, monkeypatch, tmp_path):
    """Two runs that start at once on one SQLite store take turns there: each of those calls reads, then writes, and
    SQLite refuses such a write at once while another process writes ("database is locked")."""
    store = tmp_path / "store.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store}")
    holder = tmp_path / ".store.db.lock.holder"  # written while the lock is held (iclfs.io._lock), by its holder
    held: dict[str, list[bool]] = {}

    def watched(name: str):
        call = getattr(mlflow.MlflowClient, name)

        def wrapper(*args, **kwargs):
            held.setdefault(name, []).append(holder.is_file()
                                             and json.loads(holder.read_text())["pid"] == os.getpid())
            return call(*args, **kwargs)
        return wrapper

    for name in ("create_run", "update_run"):  # kedro-mlflow creates the run; the companion hook names it
        monkeypatch.setattr(mlflow.MlflowClient, name, watched(name))
    run_session(project)
    assert held == {"create_run": [True], "update_run": [True]}
    assert not holder.exists()  # let go once the run is started: the nodes' logging does not wait on it


class FailAfterTraining(LockAfterTraining):
    """The store locked once the members are trained, then the next node fails."""

    @hook_impl
    def before_node_run(self, node) -> None:
        if self.holder is not None:
            raise RuntimeError(f"{node.name} broke")


def test_a_run_that_fails_while_the_store_is_locked_removes_its_versions(project):
    """kedro-mlflow cannot mark its run FAILED on a locked store and raises from its own error hook: the run's
    versions are removed all the same, and the node's error is the one shown."""
    breaker = FailAfterTraining(project / "mlflow.db", seconds=26)
    with pytest.raises(RuntimeError, match="broke"):
        with KedroSession.create(project_path=project) as session:
            session._hook_manager.register(breaker)
            session.run()
    breaker.holder.wait(timeout=60)
    left = [path for path in (project / "data").rglob("*") if path.is_file() and VERSION.fullmatch(
        path.name if path.parent.name.startswith(".") else path.parent.name)]  # a version's files, its lease
    assert left == []
    while mlflow.active_run() is not None:
        mlflow.end_run()


def test_kedro_mlflow_ui_shows_the_projects_store(project):
    """kedro-mlflow's own command, in the project: its UI serves the store mlflow.yml names, with the run in it."""
    import json as json_module
    import os
    import urllib.request

    from tests.distributed._support import environment, free_port, stop, wait_for_port

    run_session(project)
    port = free_port()
    env = environment(MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # its `mlflow ui`
    ui = subprocess.Popen([sys.executable, "-m", "kedro", "mlflow", "ui", "--host", "127.0.0.1", "--port", str(port)],
                          cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                          start_new_session=True)
    try:
        wait_for_port(port, ui, timeout=90)
        query = f"http://127.0.0.1:{port}/api/2.0/mlflow/runs/search"
        request = urllib.request.Request(query, data=json_module.dumps({"experiment_ids": ["1"]}).encode(),
                                         headers={"Content-Type": "application/json"})
        found = json_module.loads(urllib.request.urlopen(request, timeout=30).read())  # noqa: S310 (loopback)
    finally:
        stop(ui)
    (run,) = found["runs"]
    assert run["info"]["run_name"].startswith("synthetic · iclfs · ")


def test_two_projects_sessions_in_one_process_each_track_into_their_own_store(project, tmp_path):
    """MLflow exports the store and experiment a session sets (MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_ID) and keeps
    a run left open: the next session, of another project in the same process (a notebook), starts from its own
    mlflow.yml all the same."""
    other = tmp_path / "other"
    local = copy_project(other)
    for name in ("parameters.yml", "catalog.yml"):
        (local / name).write_text((project / "conf/local" / name).read_text())
    conf = yaml.safe_load((local / "mlflow.yml").read_text())
    conf["tracking"]["experiment"]["name"] = "other"
    write_mlflow_yml(other, conf)
    variance = {"selection": {"method": "variance"}}

    run_session(project, runtime_params=variance)
    (first,) = all_runs(f"sqlite:///{project / 'mlflow.db'}")
    mlflow.start_run(run_id=first.info.run_id)  # as if the session had left its run open
    run_session(other, runtime_params=variance)
    run_session(project, runtime_params=variance)

    assert mlflow.active_run() is None  # the open run was ended: it showed RUNNING, so it is marked FAILED
    ours = {run.info.run_id: run.info.status for run in all_runs(f"sqlite:///{project / 'mlflow.db'}")}
    assert len(ours) == 2 and ours.pop(first.info.run_id) == "FAILED" and list(ours.values()) == ["FINISHED"]
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{other / 'mlflow.db'}")
    assert client.get_experiment_by_name("iclfs") is None  # neither the first project's experiment
    (theirs,) = client.search_runs([client.get_experiment_by_name("other").experiment_id])
    (version,) = versions(other, "07_model_output/synthetic/variance/selections.csv")
    assert theirs.info.status == "FINISHED" and theirs.info.run_name == f"synthetic · variance · {version}"
