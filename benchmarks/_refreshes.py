"""A refresh's samples: the draw that :mod:`benchmarks.refresh` and :mod:`benchmarks.agreement` share.

Both studies must train refresh r of a deployment on the very same samples (the
agreement study compares its lists with the refresh study's stored runs), so the
draw lives here once. Only numpy and the method's table: the agreement study runs
on a machine with nothing but torch, numpy, scipy, scikit-learn and pandas.
"""

from __future__ import annotations

import numpy as np

from iclfs.method._preprocessing import FeatureTable

KEEP = 0.9  # each refresh keeps this share of the samples
DRAW_STREAM = 2  # tags the seed stream of a refresh's sample draw


def refresh_samples(n_samples: int, deployment: int, refresh: int) -> np.ndarray:
    """The samples refresh ``refresh`` (from 0) of a deployment seeded ``deployment`` sees, ascending."""
    rng = np.random.default_rng(np.random.SeedSequence([deployment, refresh, DRAW_STREAM]))
    return np.sort(rng.choice(n_samples, size=round(KEEP * n_samples), replace=False))


def refresh_table(table: FeatureTable, samples: np.ndarray) -> FeatureTable:
    """``table`` restricted to ``samples`` (rows), its labels with it."""
    y = None if table.y is None else np.asarray(table.y)[samples]
    return FeatureTable(X=np.asarray(table.X)[samples], y=y, feature_names=table.feature_names, source=table.source)
