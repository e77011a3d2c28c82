"""Load, validate, standardize and invert (SPEC §1)."""

from __future__ import annotations

import numpy as np

from iclfs.core.preprocessing import FeatureTable, invert, prepare

from .._params import validate_for_data, validate_parameters


def prepare_data(raw_data: FeatureTable, parameters: dict) -> tuple[np.ndarray, dict, list[str], dict]:
    """Validate the raw table and every parameter, then standardize.

    Every check of the run's input and parameters happens here, in the first
    node, so a bad input or a typo stops the run before any artifact is written.

    Returns:
        standardized_data: (n_samples, n_features) float32 z-scores.
        labels: ``{"classes": [...], "codes": [...]}``; both empty without labels.
        feature_names: one name per column.
        ground_truth: ``{"informative_features": [...] or None (synthetic data only),
            "source": where the table was read from}``.
    """
    validate_parameters(parameters)
    prepared = prepare(raw_data, min_features=min(parameters["lgrc"]["k_values"]))
    validate_for_data(parameters, *prepared.standardized.shape)
    labels = {"classes": [], "codes": []}
    if prepared.labels is not None:
        labels = {"classes": prepared.classes, "codes": prepared.labels.tolist()}
    ground_truth = {"informative_features": prepared.informative_features, "source": raw_data.source,
                    **raw_data.metadata}
    return prepared.standardized, labels, prepared.feature_names, ground_truth


def invert_data(standardized_data: np.ndarray) -> np.ndarray:
    """The inverted map A (n_features x n_samples): one training instance per feature."""
    return invert(standardized_data)
