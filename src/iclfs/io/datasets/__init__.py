"""Kedro datasets of the iclfs project (referenced from ``conf/*/catalog.yml``).

Every versioned artifact uses a class from here: its versions are whole or
absent, and a run reads the versions it wrote itself (:mod:`.versioned`).
"""

from ._cells_dataset import CellsDataset
from ._feature_table_dataset import FeatureTableDataset
from ._member_history_dataset import MemberHistories, MemberHistoryDataset, MemberHistoryView
from ._numpy_dataset import NumpyDataset
from ._previous_version_dataset import PreviousVersionDataset
from ._state_dict_dataset import StateDictDataset
from ._synthetic_dataset import SyntheticDataset
from ._versioned import CSVDataset, JSONDataset, MatplotlibDataset, ParquetDataset, TextDataset, VersionedArtifact

__all__ = [
    "CSVDataset",
    "CellsDataset",
    "FeatureTableDataset",
    "JSONDataset",
    "MatplotlibDataset",
    "MemberHistories",
    "MemberHistoryDataset",
    "MemberHistoryView",
    "NumpyDataset",
    "ParquetDataset",
    "PreviousVersionDataset",
    "StateDictDataset",
    "SyntheticDataset",
    "TextDataset",
    "VersionedArtifact",
]
