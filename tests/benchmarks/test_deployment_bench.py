"""benchmarks/deployment.py: two refreshes of a declared source, as the DAG's task runs them, timed."""

from __future__ import annotations

import json

import pytest

from benchmarks import deployment

pytestmark = pytest.mark.slow  # two runs, each a real process


def test_two_refreshes_are_timed_and_the_second_reports_the_changed_table(tmp_path):
    out = tmp_path / "deployment.md"
    quick = "training.epochs=2,runtime.num_threads=1,selection.k=10,selection.k_values=[10,20]"
    deployment.main(["--synthetic", "120x24", "--set", quick, "--out", str(out), "--keep", str(tmp_path / "project")])
    result = json.loads(out.with_suffix(".json").read_text())
    first, second = result["first"], result["second"]
    assert first["seconds"] > first["training_seconds"] > 0 and second["seconds"] > 0
    assert first["version"] < second["version"] and len(first["list"]) == len(second["list"]) == 10
    assert len(result["dropped"]) == deployment.DROPPED and len(result["added"]) == deployment.ADDED
    assert set(first["list"][:deployment.ON_THE_LIST]) <= set(result["dropped"])  # listed genes left the table
    summary = "\n".join(second["summary"])
    assert "20 feature(s) dropped from the table" in summary and "5 feature(s) new to the table" in summary
    assert "left the table, and so the list of 10" in summary
    page = out.read_text()
    assert "| first |" in page and "| second (carried, on the changed table) |" in page
    assert (tmp_path / "project" / "mlflow.db").is_file()  # kept: the MLflow store of both refreshes
