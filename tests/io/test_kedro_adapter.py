"""What iclfs reads of Kedro's private attributes, all through iclfs.io._kedro, still exists in this Kedro.

A Kedro release that moves one fails here, naming it, not deep inside a run.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest
from kedro.io import CachedDataset, MemoryDataset
from kedro.io.core import Version

from iclfs.io import _kedro
from iclfs.io.datasets import JSONDataset


@pytest.fixture
def artifact(tmp_path):
    return JSONDataset(filepath=str(tmp_path / "k_choice.json"), version=Version(None, "2026-01-01T00.00.00.000Z"))


@pytest.mark.parametrize("name", ["_filepath", "_version", "_get_versioned_path"])
def test_a_versioned_dataset_still_has_the_private_attribute(artifact, name):
    assert hasattr(artifact, name), f"kedro's versioned datasets no longer have {name}: update iclfs/io/_kedro.py"


def test_the_adapter_reads_a_versioned_artifacts_folder_version_and_file(artifact, tmp_path):
    assert _kedro.artifact_folder(artifact) == PurePosixPath(str(tmp_path / "k_choice.json"))
    assert _kedro.save_version(artifact) == "2026-01-01T00.00.00.000Z"
    assert _kedro.version_file(artifact, "v1") == Path(tmp_path / "k_choice.json" / "v1" / "k_choice.json")
    artifact.save({"k": 5})
    _kedro.pin_load_version(artifact, "2026-01-01T00.00.00.000Z")
    assert artifact.load() == {"k": 5} and _kedro.save_version(artifact) == "2026-01-01T00.00.00.000Z"
    assert _kedro.save_version(MemoryDataset()) is None


def test_the_adapter_unwraps_a_cached_dataset_and_knows_what_is_in_memory():
    inner = MemoryDataset()
    assert hasattr(CachedDataset(dataset=inner), "_dataset"), "CachedDataset no longer has _dataset"
    assert _kedro.wrapped(CachedDataset(dataset=inner)) is inner
    assert _kedro.ephemeral(MemoryDataset()) and not _kedro.ephemeral(JSONDataset(filepath="x.json"))


def test_the_null_hook_manager_still_exists():
    manager = _kedro.null_hook_manager()
    assert hasattr(manager, "hook"), "kedro's _NullPluginManager moved: update iclfs/io/_kedro.py"
