"""The embedded default dataset: deterministic, with known informative features.

Samples fall into ``n_classes`` equal clusters. Informative features carry the
cluster signal (class-dependent means plus unit noise); redundant features are
noisy copies of informative ones; the rest is pure noise on assorted scales.
Columns are shuffled so position says nothing about role.
"""

from __future__ import annotations

import numpy as np

from iclfs.method._preprocessing import FeatureTable


def make_synthetic(
    n_samples: int = 200,
    n_classes: int = 4,
    n_informative: int = 30,
    n_redundant: int = 30,
    n_noise: int = 740,
    class_separation: float = 1.5,
    redundant_noise: float = 0.3,
    seed: int = 0,
) -> FeatureTable:
    """Generate the synthetic table.

    Returns
    -------
    FeatureTable
        A :class:`FeatureTable` with ``X`` of shape
        (n_samples, n_informative + n_redundant + n_noise), labels ``y``,
        names ``feature_0000`` ..., ``informative_features`` (the columns of
        the informative features), and in ``metadata`` the redundant columns
        and the informative column each one copies.
    """
    if n_samples < n_classes:
        raise ValueError(f"n_samples ({n_samples}) must be >= n_classes ({n_classes})")
    if n_informative < 1 and n_redundant > 0:
        raise ValueError("redundant features need at least one informative feature to copy")
    rng = np.random.default_rng(seed)
    y = np.arange(n_samples) % n_classes
    rng.shuffle(y)

    centers = rng.normal(0.0, class_separation, size=(n_classes, n_informative))
    informative = centers[y] + rng.normal(size=(n_samples, n_informative))
    sources = rng.integers(0, n_informative, size=n_redundant)
    redundant = informative[:, sources] + rng.normal(0.0, redundant_noise, size=(n_samples, n_redundant))
    scales = rng.lognormal(0.0, 1.0, size=n_noise)
    noise = rng.normal(size=(n_samples, n_noise)) * scales

    X = np.hstack([informative, redundant, noise])
    d = X.shape[1]
    order = rng.permutation(d)  # column j of the output is column order[j] of X
    X = X[:, order]
    position = np.empty(d, dtype=np.int64)
    position[order] = np.arange(d)
    width = len(str(d - 1))
    return FeatureTable(
        X=X.astype(np.float32),
        y=y,
        feature_names=[f"feature_{j:0{width}d}" for j in range(d)],
        informative_features=sorted(position[:n_informative].tolist()),
        source=f"synthetic(seed={seed})",
        metadata={
            "redundant_features": position[n_informative:n_informative + n_redundant].tolist(),
            "redundant_copies_of": position[sources].tolist(),
        },
    )
