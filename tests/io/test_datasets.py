"""The project's Kedro datasets and the scikit_feature environment."""

from __future__ import annotations

import csv
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse
from kedro.config import OmegaConfigLoader
from kedro.io import DatasetError
from kedro.io.core import Version

from iclfs.method._preprocessing import prepare
from iclfs.io.datasets import FeatureTableDataset, NumpyDataset, SyntheticDataset
from tests.conftest import PROJECT_ROOT, SHARED_DATASETS


def test_numpy_dataset_versions_never_overwrite(tmp_path):
    path = str(tmp_path / "a.npy")
    NumpyDataset(filepath=path, version=Version(None, "v1")).save(np.arange(3))
    NumpyDataset(filepath=path, version=Version(None, "v2")).save(np.arange(4))
    np.testing.assert_array_equal(NumpyDataset(filepath=path, version=Version(None, None)).load(), np.arange(4))
    np.testing.assert_array_equal(NumpyDataset(filepath=path, version=Version("v1", None)).load(), np.arange(3))
    with pytest.raises(DatasetError, match="must not exist"):
        NumpyDataset(filepath=path, version=Version(None, "v1")).save(np.arange(5))


def test_numpy_dataset_npz_round_trips_a_dict(tmp_path):
    import torch

    dataset = NumpyDataset(filepath=str(tmp_path / "e.npz"))
    dataset.save({"H": np.ones((2, 3), np.float32), "Z": torch.zeros(2, 1)})
    loaded = dataset.load()
    assert set(loaded) == {"H", "Z"} and loaded["H"].dtype == np.float32 and loaded["Z"].shape == (2, 1)
    with pytest.raises(DatasetError, match="needs a dict"):
        dataset.save(np.ones(3))


def test_numpy_dataset_refuses_other_suffixes(tmp_path):
    with pytest.raises(DatasetError, match=r"\.npy or \.npz"):
        NumpyDataset(filepath=str(tmp_path / "a.csv"))


def test_synthetic_dataset_is_deterministic_and_read_only():
    a = SyntheticDataset(n_samples=20, n_noise=10, seed=5).load()
    b = SyntheticDataset(n_samples=20, n_noise=10, seed=5).load()
    np.testing.assert_array_equal(a.X, b.X)
    assert a.informative_features == b.informative_features
    with pytest.raises(DatasetError, match="read-only"):
        SyntheticDataset().save(np.ones(1))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.float64])
def test_mat_files_of_any_dtype_and_label_coding(tmp_path, dtype, sparse):
    X = (np.arange(60).reshape(6, 10) % 7).astype(dtype)
    y = np.array([[-1], [1], [1], [-1], [1], [-1]])
    path = tmp_path / "d.mat"
    scipy.io.savemat(path, {"X": scipy.sparse.csc_matrix(X) if sparse else X, "Y": y})
    table = FeatureTableDataset(filepath=str(path)).load()
    prepared = prepare(table, min_features=5)
    assert prepared.standardized.shape == (6, 10)
    assert prepared.labels.tolist() == [0, 1, 1, 0, 1, 0] and prepared.classes == [-1, 1]


def test_mat_without_labels_gives_none(tmp_path):
    scipy.io.savemat(tmp_path / "d.mat", {"X": np.ones((5, 3))})
    assert FeatureTableDataset(filepath=str(tmp_path / "d.mat")).load().y is None


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "file not found"),
        (b"", "the file is empty"),
        (b"not a mat file at all", "not a readable MATLAB .mat file"),
    ],
)
def test_unreadable_mat_files_are_named(tmp_path, content, message):
    path = tmp_path / "broken.mat"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(DatasetError, match=f"broken.mat: {message}"):
        FeatureTableDataset(filepath=str(path)).load()


def test_csv_with_label_and_id_columns_keeps_feature_names(tmp_path):
    path = tmp_path / "t.csv"
    frame = pd.DataFrame({"sample": list("abcdef"), "g1": np.arange(6.0), "label": [0, 1] * 3, "g2": np.ones(6)})
    frame.to_csv(path, index=False)
    table = FeatureTableDataset(filepath=str(path), label_column="label", id_column="sample").load()
    assert table.feature_names == ["g1", "g2"] and list(table.y) == [0, 1] * 3
    with pytest.raises(DatasetError, match=r"no column named 'target' \(label_column\)"):
        FeatureTableDataset(filepath=str(path), label_column="target").load()


def test_parquet_round_trip(tmp_path):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"a": np.arange(5.0), "b": np.arange(5.0) ** 2}).to_parquet(path)
    table = FeatureTableDataset(filepath=str(path)).load()
    assert table.feature_names == ["a", "b"] and table.y is None


def test_unsupported_suffix_is_refused(tmp_path):
    with pytest.raises(DatasetError, match=r"t\.xlsx: the format \.xlsx is not supported; supported: "
                                           r"\.csv, \.tsv, \.tab, \.txt, \.parquet, \.h5ad, \.mat"):
        FeatureTableDataset(filepath=str(tmp_path / "t.xlsx"))


def test_scikit_feature_environment_points_at_the_named_file():
    from iclfs.settings import CONFIG_LOADER_ARGS  # the loader kedro run builds, custom resolvers included

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = OmegaConfigLoader(str(PROJECT_ROOT / "conf"), **CONFIG_LOADER_ARGS,
                                   env="scikit_feature", runtime_params={"data_source": "COIL20"})
        catalog = loader["catalog"]
    assert catalog["raw_data"]["type"] == "iclfs.io.datasets.FeatureTableDataset"
    assert catalog["raw_data"]["filename"] == "COIL20.mat"
    assert catalog["raw_data"]["search_dirs"] == ["../shared/datasets", "../shared/validation"]
    assert catalog["standardized_data"]["filepath"] == "data/03_primary/COIL20/standardized_data.npy"


def manifest_rows() -> list[dict]:
    path = SHARED_DATASETS / "MANIFEST.csv"
    if not path.exists():
        return []
    with path.open() as handle:
        return list(csv.DictReader(handle))


@pytest.mark.skipif(not manifest_rows(), reason="the benchmark files (../shared/datasets) are not present")
@pytest.mark.parametrize("row", manifest_rows(), ids=lambda r: r["file"])
def test_every_benchmark_file_loads_with_the_manifest_shape(row):
    table = FeatureTableDataset(filepath=str(SHARED_DATASETS / row["file"])).load()
    prepared = prepare(table, min_features=50)
    assert prepared.standardized.shape == (int(row["n_samples"]), int(row["n_features"]))
    assert len(prepared.classes) == int(row["n_classes"])
    assert np.isfinite(prepared.standardized).all()


def test_previous_version_dataset_skips_the_current_runs_version(tmp_path):
    from iclfs.io.datasets import PreviousVersionDataset

    path = str(tmp_path / "s.csv")
    assert PreviousVersionDataset(filepath=path, version=Version(None, "2026-01-02")).load().empty
    for version, value in (("2026-01-01", 1), ("2026-01-02", 2), ("2026-01-03", 3)):
        (tmp_path / "s.csv" / version).mkdir(parents=True)
        pd.DataFrame({"v": [value]}).to_csv(tmp_path / "s.csv" / version / "s.csv", index=False)
    previous = PreviousVersionDataset(filepath=path, version=Version(None, "2026-01-03")).load()
    assert previous["v"].tolist() == [2] and previous["version"].tolist() == ["2026-01-02"]
    assert PreviousVersionDataset(filepath=path, version=Version(None, "2026-01-01")).load().empty


def test_previous_versions_are_each_methods_newest_by_its_run_record(tmp_path):
    """The last lists of each method, so a run compares with its own method's only; JSON artifacts too."""
    import json

    from iclfs.io.datasets import PreviousVersionDataset
    from iclfs.project._frames import previous_of

    records = tmp_path / "run_record.json"
    for version, method in (("v1", "iclfs"), ("v2", "ndfs"), ("v3", "iclfs"), ("v4", None), ("v5", "iclfs")):
        (tmp_path / "s.csv" / version).mkdir(parents=True)
        pd.DataFrame({"v": [version]}).to_csv(tmp_path / "s.csv" / version / "s.csv", index=False)
        (tmp_path / "n.json" / version).mkdir(parents=True)
        (tmp_path / "n.json" / version / "n.json").write_text(json.dumps(["a", version]))
        if method is not None:  # v4: a killed run, no record
            (records / version).mkdir(parents=True)
            (records / version / "run_record.json").write_text(json.dumps({"run": version, "method": method}))
    every = PreviousVersionDataset(filepath=str(tmp_path / "s.csv"), version=Version(None, "v5"),
                                   records={"filepath": str(records)}, count=2).load()
    assert list(zip(every["version"], every["method"])) == [("v1", "iclfs"), ("v2", "ndfs"), ("v3", "iclfs")]
    assert previous_of(every, "iclfs")["v"].tolist() == ["v3"] and previous_of(every, "iclfs").attrs["version"] == "v3"
    assert previous_of(every, "iclfs", count=2)["v"].tolist() == ["v1", "v3"]
    assert previous_of(every, "ndfs")["v"].tolist() == ["v2"] and previous_of(every, "ls").empty
    assert previous_of(every, None)["v"].tolist() == ["v3"]  # any method's newest
    names = PreviousVersionDataset(filepath=str(tmp_path / "n.json"), version=Version(None, "v5"),
                                   records={"filepath": str(records)}).load()
    assert previous_of(names, None)["content"].iloc[0] == ["a", "v3"]


@pytest.mark.parametrize("name", ["COIL20", "Isolet"])
def test_scikit_feature_environment_finds_paper_and_validation_files(name):
    """A paper dataset is in datasets_dir, a validation one in validation_dir: the same entry finds both."""
    from iclfs.io.datasets import FeatureTableDataset

    shared = PROJECT_ROOT.parent / "shared"
    if not (shared / "datasets").is_dir():
        pytest.skip("the scikit-feature files are not beside the project")
    dataset = FeatureTableDataset(filename=f"{name}.mat",
                                  search_dirs=[str(shared / "datasets"), str(shared / "validation")])
    assert dataset.exists()


def test_a_csv_artifact_reads_back_every_float_exactly_without_a_warning(tmp_path):
    from iclfs.io.datasets import CSVDataset

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.random(2000) * 10.0 ** rng.integers(-300, 300, 2000), rng.normal(size=2000),
                             [np.nextafter(1.0, 2.0), 5e-324, 1.7976931348623157e308]])
    dataset = CSVDataset(filepath=str(tmp_path / "t.csv"), version=Version(None, "2026-01-01T00.00.00.000Z"))
    dataset.save(pd.DataFrame({"score": values}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas 3.1 deprecates float_precision: the default is exact
        loaded = dataset.load()
    assert (loaded["score"].to_numpy() == values).all()
