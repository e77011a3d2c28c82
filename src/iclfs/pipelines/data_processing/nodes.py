"""Load, validate, standardize and invert (docs/method.md §1)."""

from __future__ import annotations

import numpy as np

from iclfs.chain import prepare_checked
from iclfs.method._config import Settings
from iclfs.method._preprocessing import FeatureTable, invert


def validate_and_standardize(raw_data: FeatureTable, training: dict, runtime: dict, laplacian: dict, selection: dict,
                 members: dict) -> tuple[np.ndarray, dict, list[str], dict]:
    """Validate the table, check the settings against its shape, then standardize.

    Every check that needs the data (k against d, neighbours against n, the
    memory one member needs) happens here, in the first node, so a bad input
    stops the run before any artifact is written.

    Returns
    -------
    standardized_data : ndarray of shape (n_samples, n_features), float32
    labels : dict
        ``{"classes": [...], "codes": [...]}``; both empty without labels.
    feature_names : list of str
    ground_truth : dict
        ``source``, ``informative_features`` (synthetic data only, else None),
        ``fingerprint`` (of the table, so later stages can refuse a changed
        input), the table's ``samples`` and ``features``, its ``sample_ids``
        (None without) and the reader's metadata.
    """
    settings = Settings.from_parameters({"training": training, "runtime": runtime, "laplacian": laplacian,
                                         "selection": selection, "members": members})
    prepared = prepare_checked(raw_data, settings)
    labels = {"classes": [], "codes": []}
    if prepared.labels is not None:
        labels = {"classes": prepared.classes, "codes": prepared.labels.tolist()}
    ground_truth = {"source": raw_data.source, "informative_features": prepared.informative_features,
                    "fingerprint": raw_data.fingerprint(), "samples": int(prepared.standardized.shape[0]),
                    "features": int(prepared.standardized.shape[1]),
                    "sample_ids": None if raw_data.sample_ids is None else [str(s) for s in raw_data.sample_ids],
                    **raw_data.metadata}
    return prepared.standardized, labels, prepared.feature_names, ground_truth


def invert_data(standardized_data: np.ndarray) -> np.ndarray:
    """The inverted map A (n_features x n_samples): one training instance per feature."""
    return invert(standardized_data)
