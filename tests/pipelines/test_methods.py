"""`select` with another method (selection.method): the same artifacts, the registry's selection, refusals."""

from __future__ import annotations

import pytest

from iclfs import baselines
from iclfs.method._config import ParameterError
from iclfs.method._ranking import MemberHistory
from iclfs.method._preprocessing import prepare
from tests.pipelines.test_pipelines import StoredHistories, run_pipeline


def with_method(parameters: dict, method: str, **selection) -> dict:
    parameters = {**parameters, "selection": {**parameters["selection"], "method": method, **selection}}
    parameters["baselines"] = {**parameters["baselines"], "cae": {**parameters["baselines"]["cae"], "epochs": 2},
                               "lscae": {**parameters["baselines"]["lscae"], "epochs": 2}}
    return parameters


@pytest.mark.parametrize("method", ["ndfs", "cae"])
def test_select_hands_on_the_methods_own_selection_with_every_artifact(tiny_table, fast_parameters, method):
    parameters = with_method(fast_parameters, method, n_clusters=2)
    catalog = run_pipeline("select", parameters, raw_data=tiny_table)
    X = prepare(tiny_table).standardized
    direct = baselines.run(method, X, [5, 10], n_clusters=2, seed=42, options=parameters["baselines"][method])
    listing = catalog.load("feature_list")
    assert sorted(listing["feature_index"]) == sorted(direct.selections[5].tolist())  # the registry's, exactly
    assert listing["selection_frequency"].tolist() == [1.0] * 5
    selected = catalog.load("selections")
    assert sorted(selected.loc[selected["k"] == 10, "feature_index"]) == sorted(direct.selections[10].tolist())
    ranking = catalog.load("feature_ranking")
    assert ranking["score_name"].iloc[0] == f"{baselines.REGISTRY[method].name} score"
    history = catalog.load("training_log")
    assert set(history["method"]) == {baselines.REGISTRY[method].name} and catalog.load("model_state") == {}
    assert catalog.load("run_report").count(baselines.REGISTRY[method].name) >= 1
    assert catalog.load("k_choice") == {"k": 5, "reason": "selection.k = 5"}


def test_a_method_that_needs_the_number_of_clusters_is_refused_before_any_node(tiny_table, fast_parameters):
    with pytest.raises(ParameterError, match=r"'mcfs' \(MCFS\) needs the number of clusters: set "
                                             r"selection.n_clusters"):
        run_pipeline("select", with_method(fast_parameters, "mcfs"), raw_data=tiny_table)
    with pytest.raises(ParameterError, match="selection.k 'auto' chooses k from ICLFS members' agreement"):
        run_pipeline("select", with_method(fast_parameters, "ls", k="auto"), raw_data=tiny_table)
    with pytest.raises(ParameterError, match=r"'ndsf' is not a method \(did you mean 'ndfs'\?\)"):
        run_pipeline("select", with_method(fast_parameters, "ndsf"), raw_data=tiny_table)


def test_a_seeded_method_carries_its_members_and_another_method_sets_them_aside(tiny_table, fast_parameters):
    parameters = with_method(fast_parameters, "ndfs", n_clusters=2)
    parameters["members"] = {**parameters["members"], "carry": True}
    first = run_pipeline("select", parameters, raw_data=tiny_table)
    history = first.load("member_history")
    assert [m.method for m in history.members] == ["ndfs"]
    second = run_pipeline("select", parameters, raw_data=tiny_table,
                          previous_member_history=_stored(history))
    assert [m.method for m in second.load("member_history").members] == ["ndfs", "ndfs"]
    assert second.load("history_start")["seed"] != 42  # the second member's own seed
    iclfs = {**fast_parameters, "members": {**fast_parameters["members"], "carry": True}}
    third = run_pipeline("select", iclfs, raw_data=tiny_table,
                         previous_member_history=_stored(second.load("member_history")))
    assert "holds members of ndfs" in third.load("history_start")["note"]


def _stored(history: MemberHistory) -> StoredHistories:
    from dataclasses import replace

    return StoredHistories(replace(history, read_runs=history.runs, version="v"))
