"""The cron route: `kedro package`, then the installed entry point with --conf-source."""

from __future__ import annotations

import pytest

import os
import shutil
import subprocess
import sys
import tarfile

from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.slow  # a browser, subprocesses or whole Kedro sessions: seconds each


def test_packaged_project_runs_select_on_the_default_data(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    for item in ("src", "conf", "pyproject.toml", "README.md"):
        source = PROJECT_ROOT / item
        if source.is_dir():
            shutil.copytree(source, build / item, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "local"))
        else:
            shutil.copy(source, build / item)
    (build / "conf" / "local").mkdir()
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"}
    done = subprocess.run([sys.executable, "-m", "kedro", "package"], cwd=build, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = (build / "dist").glob("iclfs-*.whl")
    conf_archive = build / "dist" / "conf-iclfs.tar.gz"
    with tarfile.open(conf_archive) as archive:
        assert "conf/base/catalog.yml" in archive.getnames()

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, env=env)
    workdir = tmp_path / "run"  # no pyproject.toml above it: a deployed job, not a checkout
    workdir.mkdir()
    for _ in range(2):  # two scheduled runs that carry their members
        done = subprocess.run(
            [sys.executable, "-m", "iclfs", f"--conf-source={conf_archive}", "--pipeline", "select",
             "--params", "training.epochs=2,members.carry=true"],
            cwd=workdir, env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    output = workdir / "data" / "07_model_output" / "synthetic"
    assert len(list((output / "iclfs" / "feature_list.csv").glob("*/*.csv"))) == 2
    from iclfs.io.datasets import MemberHistoryView

    history = MemberHistoryView(filepath=str(output / "member_history.npz"),
                                data_source="synthetic").load().of("iclfs")
    assert len(history.members) == 2 and history.problem is None
    assert (workdir / "mlflow.db").exists()
    imported = subprocess.run([sys.executable, "-c", "import iclfs, sys; print(iclfs.__file__)"], cwd=workdir,
                              env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert str(site) in imported.stdout  # the run used the packaged wheel, not the checkout


def test_the_core_install_gives_a_working_selector_without_kedro(tmp_path):
    """`pip install .` with no extras: ICLFSSelector works and nothing of Kedro, MLflow or matplotlib is there.

    A fresh venv and a real install take a minute or two, so this runs where ICLFS_TEST_CORE_INSTALL=1
    (.ci/run sets it).
    """
    import pytest

    if os.environ.get("ICLFS_TEST_CORE_INSTALL") != "1":
        pytest.skip("set ICLFS_TEST_CORE_INSTALL=1 to build a fresh venv with the core install (CI does)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    done = subprocess.run([*pip, "-c", str(PROJECT_ROOT / "constraints.txt"), str(PROJECT_ROOT)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    code = ("import importlib.util as u, numpy as np; from iclfs import ICLFSSelector; "
            "X = np.random.default_rng(0).normal(size=(30, 20)); "
            "s = ICLFSSelector(5, members=2, epochs=1, device='cpu').fit(X); "
            "print(s.transform(X).shape, [m for m in ('kedro', 'mlflow', 'matplotlib') if u.find_spec(m)])")
    ran = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip().splitlines()[-1] == "(30, 5) []"
