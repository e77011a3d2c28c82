"""Shared fixtures: tiny synthetic data and the project's parameters, shrunk for speed."""

from __future__ import annotations

import copy
import os
import shutil
import warnings
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")
# CI lands a change only when green, so there (HYPOTHESIS_PROFILE=ci, set by .ci/run) hypothesis draws the same
# examples on every run; elsewhere it draws new ones, to find what those miss.
hypothesis_settings.register_profile("ci", derandomize=True)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Workers share the cores: one thread each (their subprocesses inherit it), since OpenMP threads
    # spinning against another worker's make both many times slower. Set before anything imports torch.
    os.environ["OMP_NUM_THREADS"] = "1"

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"

# Overrides that make a full run take seconds: one 2-epoch run, small k, 3 k-means runs, one thread; with
# ICLFS_TEST_DEFAULT_THREADS set (CI's serial run of the tests marked `threads`) torch's default thread count, so
# the code paths of two threads or more (the warm-up) run too.
DEFAULT_THREADS = bool(os.environ.get("ICLFS_TEST_DEFAULT_THREADS"))
FAST_OVERRIDES = {
    "training": {"epochs": 2},
    "runtime": {"progress": False, **({} if DEFAULT_THREADS else {"num_threads": 1})},
    "members": {"per_run": 1},
    "selection": {"k": 5, "k_values": [5, 10]},
    "evaluation": {"n_runs": 3},
}
# Several members that still take seconds: three 2-epoch members on half the samples.
CONSENSUS_OVERRIDES = {"members": {"per_run": 3, "epochs": 2, "subsample": 0.5}}


@pytest.fixture(scope="session", autouse=True)
def conf_of_their_own(tmp_path_factory) -> Path:
    """Tests run on a conf of their own, never the developer's ``conf/local``: the session works in a copy of the
    project (its conf/ with an empty local/, pyproject.toml, and ``../shared`` beside it as beside the checkout), so
    what reads ``./conf`` (the pipeline registry, the Dask conf, a command run without ``cwd``) reads the copy. A
    source with a bad name declared in one's own conf/local fails no test."""
    base = tmp_path_factory.mktemp("session")
    home = base / "project"
    shutil.copytree(PROJECT_ROOT / "conf", home / "conf", ignore=shutil.ignore_patterns("local"))
    (home / "conf" / "local").mkdir()
    shutil.copy(PROJECT_ROOT / "pyproject.toml", home / "pyproject.toml")
    if SHARED_DATASETS.parent.is_dir():  # conf/base's benchmark.folders are ../shared/...
        (base / "shared").symlink_to(SHARED_DATASETS.parent, target_is_directory=True)
    before = Path.cwd()
    os.chdir(home)
    yield home
    os.chdir(before)


def config_loader(conf: Path = PROJECT_ROOT / "conf", env: str = "base"):
    """Kedro's config loader as the project's settings build it (the data_source resolver included)."""
    from iclfs.project._conf import ProjectConfigLoader
    from iclfs.settings import CONFIG_LOADER_ARGS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ProjectConfigLoader(str(conf), **{**CONFIG_LOADER_ARGS, "default_run_env": env})


@pytest.fixture(scope="session")
def base_parameters() -> dict:
    """The parameters exactly as conf/base defines them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict(config_loader()["parameters"])


@pytest.fixture
def fast_parameters(base_parameters) -> dict:
    params = copy.deepcopy(base_parameters)
    for section, values in FAST_OVERRIDES.items():
        params[section] = {**params[section], **values}
    return params


@pytest.fixture
def tiny_table():
    """40 samples x 40 features, 2 classes, 6 informative features."""
    from iclfs.io._synthetic import make_synthetic

    return make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
