"""One chain: the selector, ``iclfs.chain.run`` and ``kedro run --pipelines select`` give the same lists and scores.

On one tiny table, bit for bit: a first run, a carried second and third run (``partial_fit`` for the
selector; each refresh on its own subset of the samples), one run of another method (NDFS), and one of
variance, which reads the table before standardization. The three
entry points read the same file through the project's reader, so they start from the same values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from kedro.framework.startup import bootstrap_project

from iclfs import BaselineSelector, ICLFSSelector, chain
from iclfs.io._synthetic import make_synthetic
from iclfs.io._tables import read_feature_table
from iclfs.method._config import Settings
from iclfs.method._ranking import MemberHistory
from tests.project_copy import copy_project, run_session

pytestmark = pytest.mark.slow

K, K_VALUES, SEED = 5, [5, 10], 42
PARAMETERS = {"seed": SEED, "training": {"epochs": 2}, "runtime": {"num_threads": 1, "progress": False},
              "selection": {"k": K, "k_values": K_VALUES}, "evaluation": {"n_runs": 2}}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Three refreshes of one table (each its own 36 of 40 samples), as CSV files."""
    folder = tmp_path_factory.mktemp("tables")
    table = make_synthetic(n_samples=40, n_classes=2, n_informative=6, n_redundant=4, n_noise=30, seed=3)
    frame = pd.DataFrame(np.asarray(table.X), columns=list(table.feature_names))
    paths = []
    for refresh in range(3):
        rows = np.sort(np.random.default_rng(refresh).choice(40, size=36, replace=False))
        path = folder / f"refresh_{refresh}.csv"
        frame.iloc[rows].to_csv(path, index=False)
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def kedro_runs(files, tmp_path_factory):
    """The artifacts of ``kedro run --pipelines select``: three refreshes of ICLFS, then NDFS on the first file."""
    root = tmp_path_factory.mktemp("equivalence") / "project"
    local = copy_project(root)
    (local / "parameters.yml").write_text(yaml.safe_dump(PARAMETERS))
    bootstrap_project(root)
    out = {}
    for refresh, path in enumerate(files):
        run_session(root, pipeline_names=["select"], runtime_params={"input": str(path), "data_source": "eq"})
        out[refresh] = _artifacts(root, "eq", "iclfs")
    run_session(root, pipeline_names=["select"],
                runtime_params={"input": str(files[0]), "data_source": "eq_ndfs",
                                "selection": {"method": "ndfs", "n_clusters": 2}})
    out["ndfs"] = _artifacts(root, "eq_ndfs", "ndfs")
    run_session(root, pipeline_names=["select"],
                runtime_params={"input": str(files[0]), "data_source": "eq_variance",
                                "selection": {"method": "variance"}})
    out["variance"] = _artifacts(root, "eq_variance", "variance")
    return out


def _latest(root, layer: str, source: str, artifact: str, reader):
    folder = root / "data" / layer / source / artifact  # source: <data source>/<method>
    version = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))[-1]
    return reader(folder / version / artifact)


def _artifacts(root, source: str, method: str) -> dict:
    from iclfs.io.datasets import CSVDataset

    def csv(path):
        return CSVDataset(filepath=str(path)).load()

    source = f"{source}/{method}"  # each method's artifacts are in its folder
    selections = _latest(root, "07_model_output", source, "selections.csv", csv)
    ranking = _latest(root, "07_model_output", source, "feature_ranking.csv", csv).sort_values("feature_index")
    laplacian = _latest(root, "07_model_output", source, "laplacian_scores.csv", csv).sort_values("feature_index")
    return {"lists": {int(k): g.sort_values("rank")["feature_name"].tolist() for k, g in selections.groupby("k")},
            "scores": ranking["score"].to_numpy(), "laplacian": laplacian["laplacian_score"].to_numpy()}


def _chain_runs(files) -> list[chain.ChainResult]:
    settings = Settings.from_parameters(PARAMETERS)
    history, previous, results = MemberHistory(), None, []
    for path in files:
        result = chain.run(read_feature_table(path), settings, history=history, previous=previous)
        history, previous = result.history, result.lists
        results.append(result)
    return results


def _names(result: chain.ChainResult) -> dict[int, list[str]]:
    return {k: list(names) for k, names in result.lists.items()}


def test_the_three_entry_points_give_the_same_lists_and_scores_over_three_carried_refreshes(files, kedro_runs):
    results = _chain_runs(files)
    selector = ICLFSSelector(K, epochs=2, random_state=SEED, settings={"runtime": {"num_threads": 1}})
    for refresh, (path, result) in enumerate(zip(files, results, strict=True)):
        kedro = kedro_runs[refresh]
        assert kedro["lists"] == _names(result), refresh  # every k, in order
        np.testing.assert_array_equal(kedro["scores"], result.ranking.scores)  # bit for bit
        np.testing.assert_array_equal(kedro["laplacian"], result.laplacian_scores)
        table = read_feature_table(path)
        frame = pd.DataFrame(np.asarray(table.X, dtype=np.float64), columns=list(table.feature_names))
        selector.partial_fit(frame)
        assert list(frame.columns[selector.selected_features_]) == _names(result)[K], refresh
        np.testing.assert_array_equal(selector.scores_, result.ranking.scores)
        np.testing.assert_array_equal(selector.laplacian_scores_, result.laplacian_scores)
    assert selector.n_members_ == 3 and len(results[-1].history.members) == 3
    # the carried runs are not one run each: the list holds to the last one and the order is every member's
    alone = chain.run(read_feature_table(files[2]), Settings.from_parameters(PARAMETERS))
    assert not np.array_equal(alone.ranking.scores, results[2].ranking.scores)


def test_a_first_run_through_fit_is_the_chains_first_run(files):
    [first, *_] = _chain_runs(files[:1])
    table = read_feature_table(files[0])
    frame = pd.DataFrame(np.asarray(table.X, dtype=np.float64), columns=list(table.feature_names))
    selector = ICLFSSelector(K, epochs=2, random_state=SEED, settings={"runtime": {"num_threads": 1}}).fit(frame)
    assert list(frame.columns[selector.selected_features_]) == _names(first)[K]
    np.testing.assert_array_equal(selector.scores_, first.ranking.scores)


def test_another_method_gives_the_same_list_and_scores_through_every_entry_point(files, kedro_runs):
    settings = Settings.from_parameters({**PARAMETERS, "selection": {**PARAMETERS["selection"], "method": "ndfs",
                                                                      "n_clusters": 2}})
    result = chain.run(read_feature_table(files[0]), settings)
    kedro = kedro_runs["ndfs"]
    assert kedro["lists"] == _names(result)
    np.testing.assert_array_equal(kedro["scores"], result.ranking.scores)
    table = read_feature_table(files[0])
    frame = pd.DataFrame(np.asarray(table.X, dtype=np.float64), columns=list(table.feature_names))
    selector = BaselineSelector("ndfs", K, n_clusters=2, random_state=SEED).fit(frame)
    assert list(frame.columns[selector.selected_features_]) == _names(result)[K]
    np.testing.assert_array_equal(selector.scores_, result.ranking.scores)


def test_variance_reads_the_table_as_measured_through_every_entry_point(files, kedro_runs):
    table = read_feature_table(files[0])
    raw = np.asarray(table.X, dtype=np.float64)
    expected = raw.var(axis=0, ddof=1)  # the variance standardizing would set to 1
    settings = Settings.from_parameters({**PARAMETERS, "selection": {**PARAMETERS["selection"], "method": "variance"}})
    result = chain.run(table, settings)
    np.testing.assert_allclose(result.ranking.scores, expected, rtol=1e-12)
    kedro = kedro_runs["variance"]
    assert kedro["lists"] == _names(result)
    np.testing.assert_array_equal(kedro["scores"], result.ranking.scores)
    assert kedro["lists"][K] == [table.feature_names[j] for j in np.argsort(-expected, kind="stable")[:K]]
    frame = pd.DataFrame(raw, columns=list(table.feature_names))
    selector = BaselineSelector("variance", K).fit(frame)
    assert list(frame.columns[selector.selected_features_]) == _names(result)[K]
    np.testing.assert_array_equal(selector.scores_, result.ranking.scores)
