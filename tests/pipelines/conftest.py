"""A throw-away copy of the project to run Kedro sessions in (fixture ``project``), and its helpers.

The copy has its own data/ and mlflow.db, so tests never touch the user's.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import mlflow
import pytest
import yaml
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project

from tests.conftest import FAST_OVERRIDES, PROJECT_ROOT

SMALL_SYNTHETIC = {
    "type": "iclfs.io.datasets.SyntheticDataset",
    "n_samples": 40,
    "n_classes": 2,
    "n_informative": 6,
    "n_redundant": 4,
    "n_noise": 30,
    "seed": 1,
}


def versions(root: Path, layer_file: str) -> list[str]:
    """Version folders of one artifact, oldest first."""
    return sorted(p.name for p in (root / "data" / layer_file).iterdir())


@pytest.fixture
def project(tmp_path, monkeypatch, base_parameters) -> Path:
    """A copy of the project with fast local overrides, as the working directory."""
    root = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "conf", root / "conf", ignore=shutil.ignore_patterns("local"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "src").mkdir()  # iclfs itself is imported from the installed package
    (root / "conf" / "local").mkdir()
    params = {section: {**base_parameters[section], **FAST_OVERRIDES[section]} for section in FAST_OVERRIDES}
    (root / "conf" / "local" / "parameters.yml").write_text(yaml.safe_dump(params))
    (root / "conf" / "local" / "catalog.yml").write_text(yaml.safe_dump({"raw_data": SMALL_SYNTHETIC}))
    # An absolute store path: mlflow caches stores by URI, so the relative
    # sqlite:///mlflow.db of conf/base would reach an earlier test's file.
    mlflow_conf = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "mlflow.yml").read_text())
    mlflow_conf["server"]["mlflow_tracking_uri"] = f"sqlite:///{root / 'mlflow.db'}"
    (root / "conf" / "local" / "mlflow.yml").write_text(yaml.safe_dump(mlflow_conf))
    monkeypatch.chdir(root)
    bootstrap_project(root)
    yield root
    mlflow.set_tracking_uri(None)


def run_session(root: Path, session_class: type[KedroSession] = KedroSession, **kwargs) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with session_class.create(project_path=root, runtime_params=kwargs.pop("runtime_params", None)) as session:
                session.run(**kwargs)
        finally:
            # kedro-mlflow marks its run FINISHED in the store but leaves it on
            # mlflow's in-process run stack; a second session in the same
            # process would otherwise attach to it.
            while mlflow.active_run() is not None:
                mlflow.end_run()


def mlflow_runs(root: Path) -> list:
    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    return mlflow.search_runs(experiment_names=["iclfs"], output_format="list", order_by=["start_time ASC"])
