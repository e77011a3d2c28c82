"""What a person sees, rendered by a real headless browser (chromium).

(a) The run's HTML report, from a tiny run in a throw-away project copy,
    opened as a file URL: its DOM and a screenshot.
(b) kedro-viz's page served from a project copy: the flowchart, rendered by
    the browser's JavaScript, draws the pipeline's nodes.

Each test skips, saying why, where no chromium can be run (CI installs it
with ``apt-get install -y chromium``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import urllib.request
from functools import cache

import mlflow
import pandas as pd
import pytest

from iclfs.pipeline_registry import register_pipelines
from iclfs.pipelines.report._report import SECTIONS
from tests.pipelines.conftest import mlflow_runs, run_session
from tests.pipelines.test_viz import running_viz

pytestmark = pytest.mark.slow  # a browser, subprocesses or whole Kedro sessions: seconds each

# The flags every call uses: headless, no sandbox (root in a container), nothing fetched in the background.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


@cache
def chromium_or_reason() -> tuple[str | None, str]:
    """The chromium executable and "", or None and why it cannot be run."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            break
    else:
        return None, "no chromium on PATH (apt-get install -y chromium)"
    try:
        done = subprocess.run([path, "--headless", "--no-sandbox", "--version"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{path} cannot be run: {err}"
    if done.returncode != 0:
        return None, f"{path} --version failed: {(done.stderr or done.stdout)[-300:]}"
    return path, ""


@pytest.fixture
def chromium():
    path, reason = chromium_or_reason()
    if path is None:
        pytest.skip(reason)
    return path


def browse(chromium: str, *args: str, timeout: float = 180) -> str:
    """Run headless chromium with :data:`CHROMIUM_FLAGS`, a fresh profile and ``args``; its stdout.

    The browser runs in its own process group, killed whole if it outlives ``timeout``.
    """
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    try:
        process = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        assert process.returncode == 0, f"chromium exited with {process.returncode}: {err[-2000:]}"
        return out
    finally:
        shutil.rmtree(profile, ignore_errors=True)


# --- (a) the run report ------------------------------------------------------------


def test_the_run_report_renders_in_a_browser(chromium, project, tmp_path):
    run_session(project)
    (report,) = (project / "data/08_reporting/synthetic/iclfs/run_report.html").glob("*/run_report.html")
    (listing,) = (project / "data/07_model_output/synthetic/iclfs/feature_list.csv").glob("*/*.csv")
    assert report.parent.name == listing.parent.name  # one run, one version

    dom = browse(chromium, "--dump-dom", report.as_uri())
    assert "<title>ICLFS run report: synthetic" in dom
    names = pd.read_csv(listing)["feature_name"].astype(str).tolist()
    assert len(names) == 5
    for name in names:
        assert f">{name}<" in dom, name
    for title in SECTIONS.values():
        assert f">{title}</h2>" in dom, title
    # one inline PNG per figure: loss, score distribution, LGRC, accuracy (labels), PCA
    assert dom.count('<img alt="') == 5 and dom.count('src="data:image/png;base64,') == 5
    assert "no labels" not in dom

    screenshot = tmp_path / "run_report.png"
    browse(chromium, f"--screenshot={screenshot}", "--window-size=1280,2000", report.as_uri())
    png = screenshot.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000, len(png)

    # the same file is in the run's MLflow artifacts, under reports/
    (run,) = mlflow_runs(project)
    assert "reports/run_report.html" in {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id,
                                                                                             "reports")}


def test_a_hostile_feature_name_in_the_report_is_text_to_the_browser(chromium, tmp_path):
    """Names that would run script or add elements if they were markup: the browser shows them as text."""
    from iclfs.pipelines.report._report import run_report
    from tests.pipelines.test_run_report import hand_made_inputs, ranking_of, selection_of, LAPLACIAN, NAMES

    hostile = ["<script>document.title='taken'</script>", '<img src=x onerror="document.title=1">']
    names = [hostile[0], hostile[1], *NAMES[2:]]
    inputs = hand_made_inputs()
    ranking = ranking_of(list(range(8)), names)
    inputs.update(feature_ranking=ranking, feature_list=selection_of(ranking, [0, 1, 3], LAPLACIAN))
    inputs["laplacian_scores"]["feature_name"] = names
    page = tmp_path / "run_report.html"
    page.write_text(run_report(**inputs), encoding="ascii")
    dom = browse(chromium, "--dump-dom", page.as_uri())
    assert "<title>ICLFS run report: data/&lt;in&gt;&amp;out.csv</title>" in dom  # no script changed it
    assert "<script" not in dom and "<img src=\"x\"" not in dom and dom.count("<img") == 5  # only the figures
    assert "&lt;script&gt;document.title='taken'&lt;/script&gt;" in dom
    assert '&lt;img src=x onerror="document.title=1"&gt;' in dom


# --- (b) kedro-viz ---------------------------------------------------------------------


@pytest.fixture
def viz_in_project(project):
    """``kedro viz run`` serving the project copy, on a free loopback port; its base URL."""
    with running_viz(project, project / "viz.log") as base:
        yield base


def test_kedro_viz_draws_the_pipeline_nodes_in_a_browser(chromium, viz_in_project):
    with urllib.request.urlopen(viz_in_project + "/", timeout=10) as response:
        served = response.read().decode()
    # The served page is an empty shell: the nodes below can only come from the app's JavaScript.
    assert "train_members" not in served

    dom = browse(chromium, "--virtual-time-budget=15000", "--dump-dom", viz_in_project + "/")
    # The flowchart draws each node as <g class="pipeline-node ..." data-node-fullname="NAME">
    # with a <text> label; the node list in the sidebar names them too.
    assert "pipeline-node--task" in dom, dom[-2000:]
    for name in ("train_members", "select_every_k", "rank_features", "build_run_report"):
        assert f'data-node-fullname="{name}"' in dom, name
        assert f'title="{name}"' in dom, name
    for node in register_pipelines()["__default__"].nodes:
        assert f'data-node-fullname="{node.name}"' in dom, node.name
    for dataset in ("run_report", "feature_list", "evaluation_table"):
        assert f'data-node-fullname="{dataset}"' in dom, dataset
