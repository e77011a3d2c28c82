"""Laplacian score of every feature (docs/method.md §6)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.method._config import LaplacianConfig
from iclfs.method._laplacian import laplacian_scores


def compute_laplacian_scores(standardized_data: np.ndarray, feature_names: list[str], laplacian: dict) -> pd.DataFrame:
    """One row per feature: index, name and Laplacian score (+inf for flat features)."""
    config = LaplacianConfig.from_dict(laplacian)
    return pd.DataFrame(
        {
            "feature_index": np.arange(len(feature_names)),
            "feature_name": feature_names,
            "laplacian_score": laplacian_scores(standardized_data, n_neighbors=config.n_neighbors),
        }
    )
