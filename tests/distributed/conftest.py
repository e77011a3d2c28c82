"""Past one machine: the Dask runner, consensus members as tasks, concurrent writers, faults, a tracking server.

Every test here is marked ``distributed`` and ``slow`` (``pytest -m distributed``
selects them, ``-m "not slow"`` leaves them out). Tiny synthetic tables, one or two
epochs, CPU, one torch thread.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.distributed._support import stand_in

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.distributed)
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def data(tmp_path) -> Path:
    """Two tiny benchmark tables, COIL20 and Isolet (benchmark names, stand-in contents)."""
    folder = tmp_path / "mats"
    folder.mkdir()
    stand_in(folder / "COIL20.mat", 0)
    stand_in(folder / "Isolet.mat", 1)
    return folder


@pytest.fixture(scope="session")
def stray_store(tmp_path_factory) -> Path:
    """The MLflow store the shared cluster's workers would write to: it must never appear (no stray runs)."""
    return tmp_path_factory.mktemp("workers") / "stray-mlflow.db"


@pytest.fixture
def nanny_environment_restored():
    """For a test that starts a LocalCluster of worker processes: its nanny writes OMP_NUM_THREADS=1 and more into
    this process and leaves them there (iclfs.runner.driver_environment); put back afterwards."""
    from iclfs.runner import driver_environment, restore_environment

    before = driver_environment()
    yield
    restore_environment(before)


@pytest.fixture(scope="session")
def dask_cluster(stray_store):
    """A LocalCluster of two single-threaded worker processes, shared by the tests that only submit to it.

    Its workers' MLflow tracking URI is :func:`stray_store`: a run a worker opened would land there.
    """
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    from iclfs.runner import driver_environment, restore_environment

    before = driver_environment()  # the nanny would leave OMP_NUM_THREADS=1 and more in this process for good
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       env={"MLFLOW_TRACKING_URI": f"sqlite:///{stray_store}"})
    restore_environment(before)
    try:
        yield cluster
    finally:
        cluster.close()
        restore_environment(before)
