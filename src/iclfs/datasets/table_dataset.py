"""Files that may not exist yet: the benchmark's merged result tables and its notes."""

from __future__ import annotations

from typing import Any

import pandas as pd
from kedro_datasets.pandas import CSVDataset
from kedro_datasets.text import TextDataset


class TableDataset(CSVDataset):
    """``pandas.CSVDataset`` that, with ``missing_ok: true``, loads an absent file as an empty table.

    Used for a record that a run reads and then extends, such as
    ``docs/benchmark/<dataset>.csv``: the first run finds nothing to extend.
    """

    def __init__(self, *, filepath: str, missing_ok: bool = False, **kwargs: Any) -> None:
        super().__init__(filepath=filepath, **kwargs)
        self._missing_ok = missing_ok

    def load(self) -> pd.DataFrame:
        if self._missing_ok and not self._exists():
            return pd.DataFrame()
        return super().load()


class OptionalTextDataset(TextDataset):
    """``text.TextDataset`` that loads an absent file as ``""`` (optional hand-written notes)."""

    def load(self) -> str:
        if not self._exists():
            return ""
        return super().load()
