"""Versioned numpy arrays: ``.npy`` for one array, ``.npz`` for a dict of arrays."""

from __future__ import annotations

import io
from pathlib import PurePosixPath
from typing import Any

import fsspec
import numpy as np
from kedro.io.core import (
    AbstractVersionedDataset,
    DatasetError,
    Version,
    get_filepath_str,
    get_protocol_and_path,
)

from ._versioned import VersionedArtifact


class _NumpyFile(AbstractVersionedDataset[Any, Any]):
    """Save/load a numpy array (``.npy``) or a ``{name: array}`` dict (``.npz``).

    Torch tensors are converted to numpy on save. Pickled objects are refused
    on load (``allow_pickle=False``), so loading an untrusted file is safe.
    Versions are whole or absent (:class:`~iclfs.io.datasets._versioned.VersionedArtifact`).

    Example ``catalog.yml`` entry::

        embeddings:
          type: iclfs.io.datasets.NumpyDataset
          filepath: data/07_model_output/embeddings.npz
          versioned: true
    """

    def __init__(
        self,
        *,
        filepath: str,
        version: Version | None = None,
        credentials: dict[str, Any] | None = None,
        fs_args: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        protocol, path = get_protocol_and_path(filepath, version)
        suffix = PurePosixPath(path).suffix
        if suffix not in (".npy", ".npz"):
            raise DatasetError(f"NumpyDataset: filepath must end in .npy or .npz, got {filepath!r}")
        fs_args = dict(fs_args or {})
        if protocol == "file":
            fs_args.setdefault("auto_mkdir", True)
        self._protocol = protocol
        self._compressed = suffix == ".npz"
        self._fs = fsspec.filesystem(protocol, **(credentials or {}), **fs_args)
        self.metadata = metadata
        super().__init__(
            filepath=PurePosixPath(path),
            version=version,
            exists_function=self._fs.exists,
            glob_function=self._fs.glob,
        )

    def load(self) -> Any:
        path = get_filepath_str(self._get_load_path(), self._protocol)
        with self._fs.open(path, "rb") as handle:
            content = np.load(io.BytesIO(handle.read()), allow_pickle=False)
        if self._compressed:
            with content:
                return {name: content[name] for name in content.files}
        return content

    def save(self, data: Any) -> None:
        buffer = io.BytesIO()
        if self._compressed:
            if not isinstance(data, dict):
                raise DatasetError(f"NumpyDataset({self._filepath}): .npz needs a dict of arrays, "
                                   f"got {type(data).__name__}")
            np.savez(buffer, **{name: _to_numpy(value) for name, value in data.items()})
        else:
            np.save(buffer, _to_numpy(data), allow_pickle=False)
        path = get_filepath_str(self._get_save_path(), self._protocol)
        with self._fs.open(path, "wb") as handle:
            handle.write(buffer.getvalue())
        self._fs.invalidate_cache(path)

    def _exists(self) -> bool:
        try:
            path = get_filepath_str(self._get_load_path(), self._protocol)
        except DatasetError:
            return False
        return self._fs.exists(path)

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath, "protocol": self._protocol, "version": self._version}


def _to_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # torch.Tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value)


class NumpyDataset(VersionedArtifact, _NumpyFile):
    __doc__ = _NumpyFile.__doc__
