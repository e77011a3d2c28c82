"""Shared fixtures: tiny synthetic data and the project's parameters, shrunk for speed."""

from __future__ import annotations

import copy
import os
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"

# Overrides that make a full run take seconds: 2 epochs, small k, 3 k-means runs.
FAST_OVERRIDES = {
    "training": {"epochs": 2, "progress": False},
    "lgrc": {"k_values": [5, 10]},
    "evaluation": {"n_runs": 3},
    "select": {"k": 5},
}


@pytest.fixture(scope="session")
def base_parameters() -> dict:
    """The parameters exactly as conf/base defines them."""
    from kedro.config import OmegaConfigLoader

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = OmegaConfigLoader(str(PROJECT_ROOT / "conf"), base_env="base", default_run_env="base")
        return dict(loader["parameters"])


@pytest.fixture
def fast_parameters(base_parameters) -> dict:
    params = copy.deepcopy(base_parameters)
    for section, values in FAST_OVERRIDES.items():
        params[section] = {**params[section], **values}
    return params


@pytest.fixture
def tiny_table():
    """40 samples x 40 features, 2 classes, 6 informative features."""
    from iclfs.io.synthetic import make_synthetic

    return make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
