"""kedro-viz serves every registered pipeline and its nodes (loopback only)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from iclfs.pipeline_registry import register_pipelines
from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.slow  # a browser, subprocesses or whole Kedro sessions: seconds each


def free_port() -> int:
    """A free loopback port below 49152 (kedro-viz refuses the ephemeral range)."""
    for port in random.Random().sample(range(20000, 49000), 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port found")


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@contextlib.contextmanager
def running_viz(project: Path, log: Path) -> Iterator[str]:
    """``kedro viz run`` serving ``project`` on a free loopback port, its output in ``log``; yields the base URL."""
    port = free_port()
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"}
    with log.open("w") as handle:  # a file, not a pipe: a full pipe would stall the server
        process = subprocess.Popen(
            [sys.executable, "-m", "kedro", "viz", "run", "--no-browser", "--host", "127.0.0.1", "--port", str(port)],
            cwd=project, env=env, stdout=handle, stderr=subprocess.STDOUT,
            start_new_session=True,  # the server spawns a worker: stop the whole group at the end
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    try:
        while True:
            try:
                get_json(f"{base}/api/main")
                break
            except OSError:
                if process.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"kedro viz did not start: {log.read_text()[-2000:]}")
                time.sleep(1)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def viz_server(tmp_path):
    with running_viz(PROJECT_ROOT, tmp_path / "viz.log") as base:
        yield base


def test_viz_api_lists_every_pipeline_and_node(viz_server):
    registered = register_pipelines()
    main = get_json(f"{viz_server}/api/main")
    assert {p["id"] for p in main["pipelines"]} == set(registered)
    for name, pipeline in registered.items():
        served = get_json(f"{viz_server}/api/pipelines/{name}")
        # Viz names a namespaced node by its short name, inside its namespace's modular pipeline.
        task_names = Counter(n["name"] for n in served["nodes"] if n["type"] == "task")
        assert task_names == Counter(node.name.rsplit(".", 1)[-1] for node in pipeline.nodes), name
        namespaces = {node.namespace for node in pipeline.nodes if node.namespace}
        served_namespaces = {n["id"] for n in served["nodes"] if n["type"] == "modularPipeline"}
        assert namespaces == served_namespaces, name
