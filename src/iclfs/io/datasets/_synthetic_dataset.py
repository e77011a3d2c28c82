"""The embedded default input: a deterministic synthetic table, generated on load."""

from __future__ import annotations

from typing import Any

from kedro.io import AbstractDataset, DatasetError

from iclfs.method._preprocessing import FeatureTable
from iclfs.io._synthetic import make_synthetic


class SyntheticDataset(AbstractDataset[None, FeatureTable]):
    """Read-only dataset returning :func:`iclfs.io._synthetic.make_synthetic` output.

    Example ``catalog.yml`` entry::

        raw_data:
          type: iclfs.io.datasets.SyntheticDataset
          n_samples: 200
          seed: 0
    """

    def __init__(self, metadata: dict[str, Any] | None = None, **generator_args: Any) -> None:
        self._generator_args = generator_args
        self.metadata = metadata

    def load(self) -> FeatureTable:
        try:
            return make_synthetic(**self._generator_args)
        except TypeError as err:
            raise DatasetError(f"SyntheticDataset: bad generator argument ({err})") from err

    def save(self, data: None) -> None:
        raise DatasetError("SyntheticDataset is read-only: it generates its data on load")

    def _describe(self) -> dict[str, Any]:
        return dict(self._generator_args)
