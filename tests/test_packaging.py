"""The cron route: `kedro package`, then the installed entry point with --conf-source."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile

from tests.conftest import PROJECT_ROOT


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
    done = subprocess.run(
        [sys.executable, "-m", "iclfs", f"--conf-source={conf_archive}", "--pipeline", "select",
         "--params", "training.epochs=2"],
        cwd=workdir, env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    listings = list((workdir / "data" / "07_model_output" / "synthetic" / "selected_feature_list.csv").glob("*/*.csv"))
    assert len(listings) == 1
    assert (workdir / "mlflow.db").exists()
    imported = subprocess.run([sys.executable, "-c", "import iclfs, sys; print(iclfs.__file__)"], cwd=workdir,
                              env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert str(site) in imported.stdout  # the run used the packaged wheel, not the checkout
