"""A throw-away copy of the project to run Kedro sessions in (fixture ``project``), and its helpers.

The copy has its own data/ and mlflow.db, so tests never touch the user's.
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
import yaml
from kedro.framework.startup import bootstrap_project

from tests.conftest import FAST_OVERRIDES
from tests.project_copy import copy_project, run_session  # noqa: F401  (run_session: the pipeline tests import it here)

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
    local = copy_project(root)
    params = {section: {**base_parameters[section], **FAST_OVERRIDES[section]} for section in FAST_OVERRIDES}
    (local / "parameters.yml").write_text(yaml.safe_dump(params))
    (local / "catalog.yml").write_text(yaml.safe_dump({"raw_data": SMALL_SYNTHETIC}))
    monkeypatch.chdir(root)
    bootstrap_project(root)
    yield root
    mlflow.set_tracking_uri(None)


def mlflow_runs(root: Path) -> list:
    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    return mlflow.search_runs(experiment_names=["iclfs"], output_format="list", order_by=["start_time ASC"])
