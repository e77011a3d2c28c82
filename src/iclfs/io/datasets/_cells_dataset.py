"""The benchmark's cells: a folder with one small table per (dataset, method, seed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from kedro_datasets.partitions import PartitionedDataset


class CellsDataset(PartitionedDataset):
    """``partitions.PartitionedDataset`` of CSV cells that loads an empty or absent folder as ``{}``.

    Saving writes only the cells given (each whole or not at all: the
    partitions are :class:`~iclfs.io.datasets.CSVDataset`), so runs of other
    seeds or methods never touch each other's files.

    Example ``catalog.yml`` entry::

        benchmark_cells:
          type: iclfs.io.datasets.CellsDataset
          path: data/08_reporting/benchmark/cells
    """

    def __init__(self, *, path: str, **kwargs: Any) -> None:
        kwargs.setdefault("dataset", {"type": "iclfs.io.datasets.CSVDataset", "save_args": {"index": False},
                                      "load_args": {"keep_default_na": False, "na_values": [""]}})
        kwargs.setdefault("filename_suffix", ".csv")
        super().__init__(path=path, **kwargs)

    def load(self) -> dict[str, Callable[[], pd.DataFrame]]:
        if not self._list_partitions():
            return {}
        return super().load()
