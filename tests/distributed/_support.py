"""Helpers of the distributed tests: tiny tables, project copies, ports and server processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.io
import yaml

from tests.project_copy import copy_project

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable

# A tiny benchmark: one epoch (per member too), k in {5, 10} (50 stays in the grid, left out on 30
# features), two k-means runs, one torch thread, two cheap baselines.
PARAMETERS = {
    "training": {"epochs": 1},
    "members": {"epochs": 1},
    "runtime": {"device": "cpu", "num_threads": 1, "progress": False},
    "selection": {"k": 5, "k_values": [5, 10, 50]},
    "evaluation": {"n_runs": 2},
    "benchmark": {"datasets": ["COIL20", "Isolet"], "baselines": ["ls", "random"]},
}
CELLS = Path("data/08_reporting/benchmark/cells")
# Columns that record when and how long, not what: left out when two runs are compared.
TIMING_COLUMNS = ["run_at", "seconds", "evaluation_seconds"]


def stand_in(path: Path, seed: int, n_samples: int = 40, n_features: int = 30) -> None:
    """A labelled table (3 classes, 6 informative columns) in scikit-feature's layout (X, Y)."""
    rng = np.random.default_rng(seed)
    y = np.repeat([1, 2, 3], [n_samples - 2 * (n_samples // 3), n_samples // 3, n_samples // 3])
    X = rng.integers(0, 50, size=(n_samples, n_features)).astype(np.uint8)
    X[:, :6] += (40 * (y[:, None] - 1)).astype(np.uint8)
    scipy.io.savemat(path, {"X": X, "Y": y[:, None]})


def make_project(root: Path, data: Path, parameters: dict = PARAMETERS, tracking_uri: str | None = None) -> Path:
    """A throw-away copy of the project (conf, pyproject) whose conf/local points at ``data`` and its own store.

    ``tracking_uri``: the MLflow store (default: a SQLite file in the copy, by absolute path).
    """
    local = copy_project(root, tracking_uri)
    (local / "globals.yml").write_text(yaml.safe_dump({"datasets_dir": str(data), "validation_dir": str(data)}))
    (local / "parameters.yml").write_text(yaml.safe_dump(parameters))
    return root


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 40.0) -> None:
    """Until something answers on 127.0.0.1:``port``; fails if ``process`` ends or the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server ended (exit code {process.returncode}) before its port answered")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing answered on 127.0.0.1:{port} within {timeout:.0f} s")


def stop(process: subprocess.Popen) -> None:
    """End ``process`` and everything it started (it leads its own process group), then reap it."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, 15)
            process.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    if process.poll() is None:
        try:
            os.killpg(process.pid, 9)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)


def environment(**extra: str) -> dict[str, str]:
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1", **extra}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env
