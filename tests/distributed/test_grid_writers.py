"""The grid command (benchmarks.grid) with several writers: two processes at once, a worker killed mid-cell."""

from __future__ import annotations

import subprocess
from pathlib import Path

import dask
import pandas as pd
import pytest

from benchmarks import grid as benchmark
from iclfs.baselines import REGISTRY
from iclfs.evaluation._benchmark import cell_key, method_name
from iclfs.method._config import Settings
from iclfs.project._conf import project_conf
from tests.distributed._support import PROJECT_ROOT, PYTHON, environment, make_project

# One epoch (per member too), k in {5, 10} on the 30-feature stand-ins, two k-means runs, one torch thread.
SET = ("training.epochs=1,members.epochs=1,evaluation.n_runs=2,runtime.num_threads=1,runtime.device=cpu,"
       "selection.k=5,selection.k_values=[5,10,50]")
BASELINES = ("ls", "random")


def expected(datasets, seeds) -> list[str]:
    iclfs = method_name(Settings().with_overrides(SET))
    return sorted(f"{cell_key(dataset, method, seed)}.csv" for dataset in datasets for seed in seeds
                  for method in (iclfs, *(REGISTRY[key].name for key in BASELINES)))


def conf_for(data: Path, tmp_path: Path) -> Path:
    """A project copy whose benchmark files are in ``data``: its conf folder."""
    return make_project(tmp_path / "project", data) / "conf"


def parameters_of(conf: Path) -> dict:
    parameters = project_conf(conf)
    return {**parameters, **Settings.from_parameters(parameters).with_overrides(SET).to_parameters()}


def files(cells: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``cells`` (temporary ones too): its mtime and bytes."""
    return {str(p.relative_to(cells)): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(cells.rglob("*"))
            if p.is_file()}


def cell_names(cells: Path) -> list[str]:
    return sorted(str(p.relative_to(cells)) for p in cells.glob("*/*/seed_*.csv"))


def test_two_processes_writing_other_seeds_of_one_dataset_at_once_lose_nothing(data, tmp_path):
    cells = tmp_path / "cells"
    command = [PYTHON, "-m", "benchmarks.grid", "--conf-source", str(conf_for(data, tmp_path)), "run", "--datasets",
               "COIL20", "--set", SET, "--cells", str(cells), "--baselines", *BASELINES]
    runs = [subprocess.Popen([*command, "--seeds", seed], cwd=PROJECT_ROOT, env=environment(), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            for seed in ("42", "43")]
    try:
        outputs = [run.communicate(timeout=120)[0] for run in runs]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.wait()
    for run, output in zip(runs, outputs, strict=True):
        assert run.returncode == 0, output[-3000:]
    # both seeds' cells, whole (every file is a cell: no temporary file left), each with its own seed
    assert sorted(files(cells)) == expected(["COIL20"], [42, 43])
    table = benchmark.read_cells(cells)
    assert len(table) == 6
    for key, cell in table.items():
        assert (cell["seed"] == int(key.rsplit("_", 1)[1])).all() and (cell["dataset"] == "COIL20").all()
        assert list(cell["k"]) == [5, 10]


def _killer(dataset: str, method: str, log: Path, others: list[Path]):
    """A worker plugin: the worker that writes the cell of (dataset, method) dies half-way through the file.

    It dies only once the cells ``others`` exist (or after a minute), so that no other worker is half-way through a
    file of its own when the test looks. Before dying it leaves its pid in the folder ``log``.

    Defined in a function so that cloudpickle sends it by value (the workers cannot import this test module).
    """
    import os
    import signal
    import time

    import pandas
    from distributed import WorkerPlugin

    class KillMidCell(WorkerPlugin):
        name = "kill-mid-cell"

        def setup(self, worker):
            original = pandas.DataFrame.to_csv
            self.original = original

            def to_csv(frame, path_or_buf=None, *args, **kwargs):
                if (hasattr(path_or_buf, "write") and {"dataset", "method"} <= set(frame.columns)
                        and frame["dataset"].iloc[0] == dataset and frame["method"].iloc[0] == method):
                    text = original(frame, None, *args, **kwargs)
                    path_or_buf.write(text[: len(text) // 2])
                    path_or_buf.flush()
                    os.fsync(path_or_buf.fileno())
                    deadline = time.monotonic() + 60
                    while not all(other.exists() for other in others) and time.monotonic() < deadline:
                        time.sleep(0.1)
                    (log / str(os.getpid())).touch()
                    os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no exception handler: as the OOM killer
                return original(frame, path_or_buf, *args, **kwargs)

            pandas.DataFrame.to_csv = to_csv

        def teardown(self, worker):
            pandas.DataFrame.to_csv = self.original

    return KillMidCell()


def test_a_worker_killed_mid_cell_leaves_no_cell_and_a_rerun_completes_the_table(data, tmp_path,
                                                                             nanny_environment_restored):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    cells, kills = tmp_path / "cells", tmp_path / "kills"
    kills.mkdir()
    parameters = parameters_of(conf_for(data, tmp_path))
    jobs = benchmark.plan(parameters, ["COIL20", "Isolet"], [42], cells, iclfs=True, baseline_keys=BASELINES,
                          force=False)
    # A worker that dies fails its task at once: no allowed failures (Dask's default, 3, would run the cell again
    # on another worker; the grid's retries=1 covers an error raised in a task, not a dead worker).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=60)  # one job per worker: the killer's wait must not hold up the other
        pids = client.run(lambda: __import__("os").getpid())
        # Isolet's last cell: that job's others are written, and the killer waits for COIL20's job to finish
        coil20 = [cells / name for name in expected(["COIL20"], [42])]
        client.register_plugin(_killer("Isolet", "random", kills, coil20))
        with pytest.raises(distributed.KilledWorker):
            benchmark.execute(jobs, cells, scheduler=cluster.scheduler_address)
        killed_pids = {int(p.name) for p in kills.iterdir()}
        assert len(killed_pids) == 1 and killed_pids <= set(pids.values())  # a Dask worker process, SIGKILLed

        # no cell under the killed cell's name; the half-written text is only in a hidden temporary file
        killed = f"{cell_key('Isolet', 'random', 42)}.csv"
        before = files(cells)
        assert killed not in before
        partial = [name for name in before if name.endswith(".partial")]
        assert partial and all(Path(name).parent == Path(killed).parent for name in partial)
        finished = cell_names(cells)
        assert f"{cell_key('Isolet', 'LS', 42)}.csv" in finished  # written before the kill
        assert sorted(benchmark.read_cells(cells)) == [name[:-4] for name in finished]  # only whole cells read

        # the rerun, on the same cluster without the killer, computes exactly the missing cells
        client.unregister_worker_plugin("kill-mid-cell")
        client.wait_for_workers(2, timeout=60)  # the nannies restart the killed workers
        again = benchmark.plan(parameters, ["COIL20", "Isolet"], [42], cells, iclfs=True,
                               baseline_keys=BASELINES, force=False)
        assert ("Isolet", 42, False, ("random",)) in [(j.dataset, j.seed, j.iclfs, j.baselines) for j in again]
        benchmark.execute(again, cells, scheduler=cluster.scheduler_address)

    assert cell_names(cells) == expected(["COIL20", "Isolet"], [42])  # the table is complete
    after = files(cells)
    for name in finished:  # the finished cells: untouched, to the nanosecond and the byte
        assert after[name] == before[name], name
    table = pd.concat(benchmark.read_cells(cells).values())
    assert len(table) == 2 * 3 * 2  # two datasets x three methods x k in {5, 10}
