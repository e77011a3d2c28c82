"""How much a selection changed between two refreshes of the same data source."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import spearmanr


def compare_selections(previous: Sequence[str], current: Sequence[str]) -> dict:
    """Compare two ranked selections of feature names (best first).

    Returns
    -------
    dict
        ``jaccard`` (overlap / union), ``overlap`` (count), ``rank_correlation``
        (Spearman correlation of the ranks of the features in both; None when
        fewer than 2 are shared or the ranks are constant), ``entered`` (in the
        current selection only, in its order) and ``left`` (in the previous
        only, in its order).
    """
    prev, curr = list(previous), list(current)
    shared = [name for name in curr if name in set(prev)]
    union = set(prev) | set(curr)
    correlation = None
    if len(shared) >= 2:
        prev_rank = {name: i for i, name in enumerate(prev)}
        curr_rank = {name: i for i, name in enumerate(curr)}
        rho = spearmanr([prev_rank[n] for n in shared], [curr_rank[n] for n in shared]).statistic
        correlation = None if np.isnan(rho) else float(rho)
    return {
        "jaccard": len(shared) / len(union) if union else 1.0,
        "overlap": len(shared),
        "rank_correlation": correlation,
        "entered": [name for name in curr if name not in set(prev)],
        "left": [name for name in prev if name not in set(curr)],
    }
