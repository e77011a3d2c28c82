"""Kedro datasets of the iclfs project (referenced from ``conf/*/catalog.yml``).

Every versioned artifact uses a class from here: its versions are whole or
absent, and a run reads the versions it wrote itself (:mod:`.versioned`).
"""

from .cells_dataset import CellsDataset
from .feature_table_dataset import FeatureTableDataset
from .member_history_dataset import MemberHistoryDataset, MemberHistoryView
from .numpy_dataset import NumpyDataset
from .previous_version_dataset import PreviousVersionDataset
from .state_dict_dataset import StateDictDataset
from .synthetic_dataset import SyntheticDataset
from .versioned import CSVDataset, JSONDataset, MatplotlibDataset, ParquetDataset, TextDataset, VersionedArtifact

__all__ = [
    "CSVDataset",
    "CellsDataset",
    "FeatureTableDataset",
    "JSONDataset",
    "MatplotlibDataset",
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
