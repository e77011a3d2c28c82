"""The list's evidence (docs/method.md §10) everywhere the list goes: through ``kedro run`` and the selectors."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pandas as pd
import pytest
import yaml

from iclfs import BaselineSelector, ICLFSSelector
from iclfs.method._evidence import COMPLEMENTARY
from tests.pipelines.conftest import mlflow_runs, run_session, versions

PAIRS = {"per_run": 4, "epochs": 2, "sampling": "complementary", "threshold": 0.75}


def read(project, layer_file: str):
    (version,) = versions(project, layer_file)
    path = project / "data" / layer_file / version / layer_file.rsplit("/", 1)[-1]
    return json.loads(path.read_text()) if path.suffix == ".json" else pd.read_csv(path)


@pytest.mark.slow  # one kedro run of 4 members at 2 epochs on 40 x 40
def test_kedro_run_hands_on_the_evidence_with_the_list_the_summary_and_mlflow(project, caplog):
    local = project / "conf" / "local" / "parameters.yml"
    parameters = yaml.safe_load(local.read_text())
    parameters["members"] = {**parameters.get("members", {}), **PAIRS}
    local.write_text(yaml.safe_dump(parameters))
    with caplog.at_level("INFO", logger="iclfs.summary"):
        run_session(project)

    ranking = read(project, "07_model_output/synthetic/iclfs/feature_ranking.csv")
    stable = ranking["selection_frequency_5"] >= 0.75
    assert ranking["stable"].tolist() == stable.tolist()
    listing = read(project, "07_model_output/synthetic/iclfs/feature_list.csv")
    assert listing["stable"].tolist() == (listing["selection_frequency"] >= 0.75).tolist()
    by_name = ranking.set_index("feature_name")
    assert listing["stable"].tolist() == by_name.loc[listing["feature_name"], "stable"].tolist()

    evidence = read(project, "08_reporting/synthetic/iclfs/selection_stability.json")["evidence"]
    assert evidence["members"] == 4 and evidence["q"] == 5 and evidence["threshold"] == 0.75
    assert evidence["bound_kind"] == COMPLEMENTARY
    assert evidence["bound"] == pytest.approx(5 / 40 * 5 / (2 * 0.75 - 1))  # theta q / (2 pi - 1), theta = q / p
    assert sorted(evidence["stable"]) == sorted(ranking.loc[stable, "feature_name"])
    said = [r.getMessage() for r in caplog.records if r.name == "iclfs.summary"]
    expected = f"evidence: of the 5 listed, {int(listing['stable'].sum())} are selected by >= 75 % of 4 members"
    assert any(line.strip().startswith(expected) for line in said), said

    (run,) = mlflow_runs(project)
    assert run.data.metrics["stable_features"] == evidence["stable_count"]
    assert ("expected_false_selections_bound" in run.data.metrics) == evidence["claims"]
    mlflow.set_tracking_uri(None)


def test_the_selector_exposes_the_stable_support_and_the_bound(tiny_table):
    X = np.asarray(tiny_table.X)
    selector = ICLFSSelector(5, members=4, epochs=2, settings={"members": {"sampling": "complementary",
                                                                            "threshold": 0.75},
                                                               "runtime": {"num_threads": 1}}).fit(X)
    assert selector.evidence_.members == 4 and selector.evidence_.kind == COMPLEMENTARY
    np.testing.assert_array_equal(selector.stable_support_, selector.selection_frequency_ >= 0.75)
    np.testing.assert_array_equal(selector.evidence_.selection_frequency, selector.selection_frequency_)

    carried = ICLFSSelector(5, members=2, epochs=2, settings={"members": {"sampling": "complementary"},
                                                              "runtime": {"num_threads": 1}})
    carried.partial_fit(X).partial_fit(X)
    assert carried.evidence_.members == 4 and carried.evidence_.bound is None
    assert "carried from earlier runs" in carried.evidence_.reason


def test_a_deterministic_method_says_it_has_no_members(tiny_table):
    selector = BaselineSelector("variance", 5).fit(np.asarray(tiny_table.X))
    assert selector.evidence_.members == 0 and not selector.stable_support_.any()
    assert "deterministic" in selector.evidence_.summary(selector.selected_features_)
