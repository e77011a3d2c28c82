"""Load, validate, standardize and invert (docs/method.md §1)."""

from __future__ import annotations

import numpy as np

from iclfs.chain import prepare_checked
from iclfs.method._config import Settings
from iclfs.method._preprocessing import FeatureTable, invert


def validate_and_standardize(raw_data: FeatureTable, training: dict, runtime: dict, laplacian: dict, selection: dict,
                             members: dict, baselines: dict, keep_measured: bool = False
                             ) -> tuple[np.ndarray, np.ndarray, dict, list[str], dict]:
    """Validate the table, check the settings against its shape, then standardize.

    Every check that needs the data (k against d, neighbours against n, the
    memory one member needs) happens here, in the first node, so a bad input
    stops the run before any artifact is written.

    Parameters
    ----------
    keep_measured : bool
        Keep the table as measured for every method (the benchmark's baselines); by default only for a
        ``selection.method`` that reads it.

    Returns
    -------
    standardized_data : ndarray of shape (n_samples, n_features), float32
    measured_data : ndarray of shape (n_samples, n_features) or (n_samples, 0), float64
        The validated values before standardization, which variance and dispersion rank; for the other
        methods an empty (n_samples, 0) array, so that no second copy of the table is held or saved.
    labels : dict
        ``{"classes": [...], "codes": [...]}``; both empty without labels.
    feature_names : list of str
    ground_truth : dict
        ``source``, ``informative_features`` (synthetic data only, else None),
        ``fingerprint`` (of the table, so later stages can refuse a changed
        input), the table's ``samples`` and ``features``, its ``sample_ids``
        (None without), ``k_values`` (the k grid of this table, worked out once here: every later stage reads
        it) and the reader's metadata.
    """
    settings = Settings.from_parameters({"training": training, "runtime": runtime, "laplacian": laplacian,
                                         "selection": selection, "members": members})
    method = settings.selection.method
    prepared, grid = prepare_checked(raw_data, settings, (baselines or {}).get(method) if method != "iclfs" else None,
                               keep_measured=keep_measured)
    labels = {"classes": [], "codes": []}
    if prepared.labels is not None:
        labels = {"classes": prepared.classes, "codes": prepared.labels.tolist()}
    ground_truth = {"source": raw_data.source, "informative_features": prepared.informative_features,
                    "fingerprint": raw_data.fingerprint(), "samples": int(prepared.standardized.shape[0]),
                    "features": int(prepared.standardized.shape[1]),
                    "sample_ids": None if raw_data.sample_ids is None else [str(s) for s in raw_data.sample_ids],
                    "k_values": grid, **raw_data.metadata}
    measured = prepared.measured
    if measured is None:
        measured = np.empty((prepared.standardized.shape[0], 0))
    return prepared.standardized, measured, labels, prepared.feature_names, ground_truth


def invert_data(standardized_data: np.ndarray) -> np.ndarray:
    """The inverted map A (n_features x n_samples): one training instance per feature."""
    return invert(standardized_data)
