"""Trained weights: a state dict, or a dict of them (one per member)."""

from __future__ import annotations

import io
from pathlib import PurePosixPath
from typing import Any

import fsspec
from kedro.io.core import AbstractVersionedDataset, Version, get_filepath_str, get_protocol_and_path

from ._versioned import VersionedArtifact


class _StateDictFile(AbstractVersionedDataset[dict, dict]):
    """Save/load a (nested) dict of tensors with ``torch.save``; loads with ``weights_only=True``.

    ``weights_only`` refuses anything but tensors and plain containers, so
    loading an untrusted file cannot run code. A ``torch.nn.Module`` is saved
    as its state dict.

    Example ``catalog.yml`` entry::

        model_state:
          type: iclfs.io.datasets.StateDictDataset
          filepath: data/06_models/model_state.pt
          versioned: true
    """

    def __init__(self, *, filepath: str, version: Version | None = None, credentials: dict[str, Any] | None = None,
                 fs_args: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> None:
        protocol, path = get_protocol_and_path(filepath, version)
        fs_args = dict(fs_args or {})
        if protocol == "file":
            fs_args.setdefault("auto_mkdir", True)
        self._protocol = protocol
        self._fs = fsspec.filesystem(protocol, **(credentials or {}), **fs_args)
        self.metadata = metadata
        super().__init__(filepath=PurePosixPath(path), version=version, exists_function=self._fs.exists,
                         glob_function=self._fs.glob)

    def load(self) -> dict:
        import torch

        path = get_filepath_str(self._get_load_path(), self._protocol)
        with self._fs.open(path, "rb") as handle:
            return torch.load(io.BytesIO(handle.read()), weights_only=True)

    def save(self, data: Any) -> None:
        import torch

        if hasattr(data, "state_dict"):
            data = data.state_dict()
        buffer = io.BytesIO()
        torch.save(data, buffer)
        path = get_filepath_str(self._get_save_path(), self._protocol)
        with self._fs.open(path, "wb") as handle:
            handle.write(buffer.getvalue())

    def _exists(self) -> bool:
        try:
            path = get_filepath_str(self._get_load_path(), self._protocol)
        except Exception:
            return False
        return self._fs.exists(path)

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath, "protocol": self._protocol, "version": self._version}


class StateDictDataset(VersionedArtifact, _StateDictFile):
    __doc__ = _StateDictFile.__doc__
