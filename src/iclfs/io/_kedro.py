"""The one place iclfs reads or sets what Kedro keeps private on a dataset.

Kedro's versioned datasets know their folder, their save version and the
file of a version, but say so only through private attributes. The run
records, the tracking hook and the Dask runner need them; they go through
these functions, and ``tests/io/test_kedro_adapter.py`` fails, naming the
attribute, the day a Kedro release moves one.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from kedro.io.core import Version

__all__ = ["artifact_folder", "ephemeral", "null_hook_manager", "pin_load_version", "save_version", "version_file",
           "wrapped"]


def artifact_folder(dataset: Any) -> PurePosixPath:
    """The folder that holds a versioned artifact's versions (``data/<layer>/<source>/<file>``)."""
    return PurePosixPath(str(dataset._filepath))


def save_version(dataset: Any) -> str | None:
    """The version this run saves the artifact as (the session's), or None for an unversioned one."""
    version = getattr(dataset, "_version", None)
    return None if version is None else version.save


def version_file(dataset: Any, version: str) -> Path:
    """The file of ``version`` of a versioned artifact."""
    return Path(str(dataset._get_versioned_path(version)))


def pin_load_version(dataset: Any, version: str) -> None:
    """Make the artifact load ``version`` (a stage run reads one complete run's versions); its save version
    stays."""
    dataset._version = Version(version, save_version(dataset))


def wrapped(dataset: Any) -> Any:
    """The dataset a ``CachedDataset`` wraps."""
    return dataset._dataset


def ephemeral(dataset: Any) -> bool:
    """Whether a dataset lives in memory only (Kedro's ``MemoryDataset`` and its kin)."""
    return bool(getattr(dataset, "_EPHEMERAL", False))


def null_hook_manager() -> Any:
    """Kedro's hook manager that calls nothing, for a runner run without a session."""
    from kedro.framework.hooks.manager import _NullPluginManager

    return _NullPluginManager()
