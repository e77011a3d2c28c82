"""The benchmark pipeline through the project's session, on tiny stand-in .mat files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.io
import yaml
from kedro.framework.session import KedroSession

from iclfs.session import BenchmarkDataMissingError, IclfsSession
from tests.test_integration import project, run_session, versions  # noqa: F401  (fixture)


def _stand_in(path, seed):
    """A 40 x 30 labelled table (3 classes, 6 informative columns) in scikit-feature's layout."""
    rng = np.random.default_rng(seed)
    y = np.repeat([1, 2, 3], [14, 13, 13])
    X = rng.integers(0, 50, size=(40, 30)).astype(np.uint8)
    X[:, :6] += (40 * (y[:, None] - 1)).astype(np.uint8)
    scipy.io.savemat(path, {"X": X, "Y": y[:, None]})


@pytest.fixture
def bench(project):  # noqa: F811
    data = project / "mats"
    data.mkdir()
    _stand_in(data / "COIL20.mat", 0)
    _stand_in(data / "warpPIE10P.mat", 1)
    (project / "conf" / "local" / "globals.yml").write_text(yaml.safe_dump({"datasets_dir": str(data)}))
    return project


def run(root, **kwargs):
    run_session(root, session_class=IclfsSession, **kwargs)


def test_full_benchmark_skips_absent_files_and_reports_every_dataset(bench, caplog):
    run(bench, pipeline_names=["benchmark"])

    assert "Skipping 8 benchmark dataset(s)" in caplog.text and "nci9.mat not found" in caplog.text
    table = pd.read_csv(bench / "docs" / "benchmark" / "COIL20.csv")
    # The default schedule is fast, which the method name says.
    assert set(table["method"]) == {"ICLFS [fast]", "LS", "SPEC", "MCFS", "NDFS", "random", "all features"}
    assert set(table.loc[table["method"] == "ICLFS [fast]", "k"]) == {5, 10}
    assert (table["dataset"] == "COIL20").all() and (table["n_runs"].isin([3, 15])).all()
    assert not (bench / "docs" / "benchmark" / "nci9.csv").exists()

    report = (bench / "docs" / "benchmark.md").read_text()
    assert "| COIL20 | " in report and "| warpPIE10P | " in report
    assert f"**nci9**: source file {bench / 'mats' / 'nci9.mat'} not found" in report
    assert (bench / "docs" / "benchmark" / "figures" / "COIL20.png").stat().st_size > 0
    assert len(versions(bench, "08_reporting/benchmark/benchmark.md")) == 1
    assert len(versions(bench, "06_models/benchmark/warpPIE10P/model_state.pt")) == 1


def test_one_namespace_and_an_ablation_add_rows_without_touching_the_rest(bench, monkeypatch):
    contexts = []
    build = KedroSession.load_context
    monkeypatch.setattr(KedroSession, "load_context", lambda self: contexts.append(build(self)) or contexts[-1])
    run(bench, pipeline_names=["benchmark"], namespaces=["COIL20"])
    assert len(contexts) == 1  # the file check and the run share one context
    assert not (bench / "docs" / "benchmark" / "warpPIE10P.csv").exists()
    assert not (bench / "docs" / "benchmark.md").exists()  # the report is a step of the full run
    first = pd.read_csv(bench / "docs" / "benchmark" / "COIL20.csv")

    run(bench, pipeline_names=["benchmark"], namespaces=["COIL20"], runtime_params={"lgrc": {"enabled": False}})
    merged = pd.read_csv(bench / "docs" / "benchmark" / "COIL20.csv")
    assert set(merged["method"]) == set(first["method"]) | {"ICLFS-WL [fast]"}
    assert len(merged) == len(first) + 2  # baselines replaced, not repeated
    pd.testing.assert_frame_equal(merged[merged["method"] == "ICLFS [fast]"].reset_index(drop=True),
                                  first[first["method"] == "ICLFS [fast]"].reset_index(drop=True))
    assert len(versions(bench, "07_model_output/benchmark/COIL20/selected_features.csv")) == 2

    run(bench, pipeline_names=["benchmark_report"])
    report = (bench / "docs" / "benchmark.md").read_text()
    assert "| COIL20 | ICLFS-WL [fast] |" in report and "**warpPIE10P**: no results" in report


def test_rerunning_one_baseline_trains_nothing_and_replaces_only_its_rows(bench):
    run(bench, pipeline_names=["benchmark"], namespaces=["COIL20"])
    first = pd.read_csv(bench / "docs" / "benchmark" / "COIL20.csv")

    run(bench, pipeline_names=["benchmark_baselines"], namespaces=["COIL20"],
        runtime_params={"benchmark": {"baselines": ["mcfs"]}})
    merged = pd.read_csv(bench / "docs" / "benchmark" / "COIL20.csv")
    assert len(versions(bench, "06_models/benchmark/COIL20/model_state.pt")) == 1  # nothing trained
    assert len(versions(bench, "07_model_output/benchmark/COIL20/baseline_rankings.npz")) == 2
    untouched = merged[merged["method"] != "MCFS"].reset_index(drop=True)
    pd.testing.assert_frame_equal(untouched, first[first["method"] != "MCFS"].reset_index(drop=True))
    mcfs = merged[merged["method"] == "MCFS"]
    assert list(mcfs["k"]) == [5, 10] and mcfs["run_at"].min() >= first["run_at"].max()
    # the same fits on the same data: the same accuracies
    np.testing.assert_array_equal(mcfs["accuracy_mean"], first.loc[first["method"] == "MCFS", "accuracy_mean"])
    assert not (bench / "docs" / "benchmark.md").exists()  # as for benchmark: the report is a step of a full run


def test_asking_for_a_missing_dataset_names_its_file(bench):
    with pytest.raises(BenchmarkDataMissingError, match=r"nci9: .*mats/nci9.mat not found"):
        run(bench, pipeline_names=["benchmark"], namespaces=["nci9"])
    assert not (bench / "data").exists()


def test_no_benchmark_file_at_all_is_an_error_before_anything_runs(bench):
    (bench / "conf" / "local" / "globals.yml").write_text(yaml.safe_dump({"datasets_dir": str(bench / "nowhere")}))
    with pytest.raises(BenchmarkDataMissingError, match="none of the benchmark files was found"):
        run(bench, pipeline_names=["benchmark"])
    assert not (bench / "data").exists() and not (bench / "docs").exists()


def test_the_full_run_command_gives_the_pipelines_iclfs_result(bench):
    """``iclfs.apps.benchmark`` (no Kedro, for GPU machines) chains the same core functions
    with the same parameters as the benchmark pipeline: the same accuracy and NMI at every k."""
    from iclfs.apps import benchmark as full_run

    run(bench, pipeline_names=["benchmark"], namespaces=["COIL20"])
    table = pd.read_csv(bench / "docs" / "benchmark" / "COIL20.csv")
    pipeline = table[table["method"] == "ICLFS [fast]"].sort_values("k")

    record = full_run.run_one(bench / "mats" / "COIL20.mat", "COIL20", full_run.load_parameters(bench / "conf"),
                              "fast", 42)
    assert [row["k"] for row in record["rows"]] == pipeline["k"].tolist()
    for column in ("accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std"):
        assert [row[column] for row in record["rows"]] == pytest.approx(pipeline[column].tolist(), abs=1e-12), column
