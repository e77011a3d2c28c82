"""Throw-away copies of the project for tests that run Kedro sessions, and the session runner they share."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import yaml
from kedro.framework.session import KedroSession

from tests.conftest import PROJECT_ROOT


def copy_project(root: Path, tracking_uri: str | None = None) -> Path:
    """Copy conf/ (without local/) and pyproject.toml to ``root``; return its empty ``conf/local``.

    ``conf/local/mlflow.yml`` points MLflow at ``tracking_uri``, by default a
    SQLite file in the copy by absolute path: mlflow caches stores by URI, so
    the relative ``sqlite:///mlflow.db`` of conf/base would reach an earlier
    test's file.
    """
    shutil.copytree(PROJECT_ROOT / "conf", root / "conf", ignore=shutil.ignore_patterns("local"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "src").mkdir()  # iclfs itself is imported from the installed package
    local = root / "conf" / "local"
    local.mkdir()
    mlflow_conf = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "mlflow.yml").read_text())
    mlflow_conf["server"]["mlflow_tracking_uri"] = tracking_uri or f"sqlite:///{root / 'mlflow.db'}"
    (local / "mlflow.yml").write_text(yaml.safe_dump(mlflow_conf))
    return local


def run_session(root: Path, session_class: type[KedroSession] = KedroSession, **kwargs) -> None:
    """One ``session.run(**kwargs)`` in the project at ``root`` (``runtime_params`` go to the session).

    Nothing of MLflow is reset between sessions: the tracking companion starts each from its own project's
    mlflow.yml, whatever an earlier session in this process left (tests/pipelines/test_tracking.py).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with session_class.create(project_path=root, runtime_params=kwargs.pop("runtime_params", None)) as session:
            session.run(**kwargs)
