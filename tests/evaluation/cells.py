"""Result cells for the benchmark's tests: one method at one seed, one row per k."""

from __future__ import annotations

import pandas as pd

from iclfs.evaluation._benchmark import RESULT_COLUMNS


def cell(method, seed, accs, dataset="COIL20", ks=(50, 100), seconds=10.0, selected=None, n_runs=20, epochs=100):
    """One cell with a row per k of ``ks``.

    ``selected``: the selection at the first k as text (None: features 0..49), the
    later ks then select their first k features; or a list with one text per k.
    """
    if selected is None or isinstance(selected, str):
        first = " ".join(map(str, range(50))) if selected is None else selected
        selected = [first, *(" ".join(map(str, range(k))) for k in ks[1:])]
    return pd.DataFrame({
        "dataset": dataset, "method": method, "seed": seed, "k": list(ks), "accuracy_mean": accs,
        "accuracy_std": 0.01, "nmi_mean": 0.5, "nmi_std": 0.01, "n_runs": n_runs, "seconds": seconds,
        "evaluation_seconds": 1.0, "device": "cpu", "schedule": "fast", "epochs": epochs,
        "run_at": "2026-11-22T00:00:00Z", "versions": "iclfs=0.2.0", "selected": list(selected),
    })[RESULT_COLUMNS]
