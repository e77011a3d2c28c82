"""Reading tables, the embedded synthetic data, and the project's Kedro datasets (:mod:`iclfs.io.datasets`)."""

from ._synthetic import make_synthetic
from ._tables import TableReadError, find_dataset, parse_feature_table, read_feature_table

__all__ = ["TableReadError", "find_dataset", "make_synthetic", "parse_feature_table", "read_feature_table"]
