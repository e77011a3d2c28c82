"""notebooks/inspect_run.ipynb executed, cell by cell, after a real run in a throw-away project copy.

Once after ``__default__`` (labelled synthetic data) and once after ``select``
on an unlabelled CSV given as ``--params input=...``, with the notebook's
``parameters`` cell overridden as papermill would (``DATA_SOURCE``).
"""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import pandas as pd
import pytest

from tests.conftest import PROJECT_ROOT
from tests.pipelines.conftest import run_session

pytestmark = pytest.mark.slow  # a browser, subprocesses or whole Kedro sessions: seconds each

NOTEBOOK = PROJECT_ROOT / "notebooks" / "inspect_run.ipynb"


def execute_notebook(path: Path, parameters: dict | None = None) -> dict:
    """Run every code cell in order in one namespace; ``parameters`` replace the ``parameters`` cell's values."""
    import matplotlib.pyplot as plt

    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    namespace: dict = {"__name__": "__main__"}
    try:
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            exec(compile(cell.source, f"{path.name} [{cell.get('id', '?')}]", "exec"), namespace)
            if "parameters" in cell.metadata.get("tags", []):
                namespace.update(parameters or {})
    finally:
        plt.close("all")
    return namespace


@pytest.fixture(autouse=True)
def _agg_backend():
    matplotlib.use("Agg")


def test_notebook_has_a_parameters_cell_and_names_only_current_artifacts():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    (parameters,) = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert "DATA_SOURCE = None" in parameters.source and "ENV = None" in parameters.source
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    for name in ("member_scores", "feature_ranking", "feature_list", "k_choice", "run_report"):
        assert f'"{name}"' in code, name
    for gone in ("embeddings", "feature_scores"):
        assert gone not in code, gone
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code"), "commit it without outputs"


def test_notebook_runs_after_a_default_run(project):
    run_session(project)
    ns = execute_notebook(NOTEBOOK)

    assert ns["k_choice"] == {"k": 5, "reason": "selection.k = 5"}
    assert list(ns["listing"]["rank"]) == [1, 2, 3, 4, 5]
    assert len(ns["log"]) == 2 and ns["method"] == "ICLFS"  # one member, 2 epochs
    assert ns["member_scores"]["z_norm"].shape == (1, 40)
    assert len(ns["swapped_in"]) == len(ns["swapped_out"])
    assert ns["summary"]["labels"] is True and ns["summary"]["best_k"] in (5, 10)
    assert "accuracy_mean" in ns["table"]
    assert ns["stability"]["previous_version"] is None

    report_path = ns["report_path"]
    assert report_path.is_file() and report_path.name == "run_report.html"
    assert report_path.parent.parent == project / "data/08_reporting/synthetic/iclfs/run_report.html"
    # the report is the one this run wrote: same version folder as the list it shows
    (version,) = [p.name for p in (project / "data/07_model_output/synthetic/iclfs/feature_list.csv").iterdir()]
    assert report_path.parent.name == version
    page = report_path.read_text()
    assert all(str(name) in page for name in ns["listing"]["feature_name"])
    assert "k-means accuracy against k" in page


def test_notebook_runs_after_a_select_run_without_labels(project):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(30, 24)), columns=[f"gene_{j}" for j in range(24)])
    frame.insert(0, "sample_id", [f"s{i}" for i in range(30)])
    frame.to_csv(project / "expression.csv", index=False)
    (project / "conf/local/catalog.yml").unlink()  # the production path: conf/base's raw_data, --params input=...
    run_session(project, pipeline_names=["select"],
                runtime_params={"input": str(project / "expression.csv"), "id_column": "sample_id"})
    assert not (project / "data/02_intermediate").exists(), "select inspects no views"

    ns = execute_notebook(NOTEBOOK, {"DATA_SOURCE": "expression"})

    assert ns["k_choice"]["k"] == 5
    assert ns["listing"]["feature_name"].str.startswith("gene_").all()
    assert ns["summary"] == {"labels": False, "best_k": None, "reason": "no labels: the k-means protocol was skipped"}
    assert "accuracy_mean" not in ns["table"]
    assert "/expression/" in str(ns["report_path"])
    page = ns["report_path"].read_text()
    assert "no labels: the k-means accuracy was not evaluated" in page
    assert "30 samples \N{MULTIPLICATION SIGN} 24 features" in html.unescape(page)  # as a browser shows it


@pytest.mark.parametrize("method", ["ls", "ndfs"])
def test_notebook_runs_after_another_methods_run(project, method):
    """Another method's log has no epochs, seconds or device, and its member scores are its own."""
    params = {"selection": {"method": method, **({"n_clusters": 2} if method == "ndfs" else {})}}
    run_session(project, pipeline_names=["select"], runtime_params=params)
    ns = execute_notebook(NOTEBOOK)
    assert ns["k_choice"]["k"] == 5 and len(ns["listing"]) == 5
    assert ns["method"] == {"ls": "LS", "ndfs": "NDFS"}[method]
    assert set(ns["scores"]) == {method}
