"""Kedro datasets of the iclfs project (referenced from ``conf/*/catalog.yml``)."""

from .feature_table_dataset import FeatureTableDataset
from .numpy_dataset import NumpyDataset
from .previous_version_dataset import PreviousVersionDataset
from .synthetic_dataset import SyntheticDataset
from .table_dataset import OptionalTextDataset, TableDataset

__all__ = [
    "FeatureTableDataset",
    "NumpyDataset",
    "OptionalTextDataset",
    "PreviousVersionDataset",
    "SyntheticDataset",
    "TableDataset",
]
