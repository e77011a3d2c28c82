"""The member history of a data source: the carried consensus of scheduled refreshes."""

from __future__ import annotations

import numpy as np


def member_seed(seed: int, index: int) -> int:
    """The seed of the ``index``-th member ever added to a history of runs seeded ``seed``.

    Member 0 is the run's own seed, so the first run on a data source is the
    run ``seed`` gives without a history; each later member is an independent
    draw from ``numpy.random.SeedSequence([seed, index])``, and a history
    replays to the same members.
    """
    if index < 0:
        raise ValueError(f"a member index is >= 0, got {index}")
    if index == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])
