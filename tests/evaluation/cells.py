"""Result cells for the report and rule tests: one method at one seed, one row per k."""

from __future__ import annotations

import pandas as pd

from iclfs.evaluation.benchmark import RESULT_COLUMNS


def cell(method, seed, accs, dataset="COIL20", ks=(50, 100), seconds=10.0, selected=None):
    """One cell: a method at one seed, one row per k; ``selected`` at k = 50 (then a fixed list)."""
    picks = [selected or " ".join(map(str, range(50))), " ".join(map(str, range(100)))][:len(ks)]
    return pd.DataFrame({
        "dataset": dataset, "method": method, "seed": seed, "k": list(ks), "accuracy_mean": accs,
        "accuracy_std": 0.01, "nmi_mean": 0.5, "nmi_std": 0.01, "n_runs": 20, "seconds": seconds,
        "evaluation_seconds": 1.0, "device": "cpu", "schedule": "fast", "epochs": 100,
        "run_at": "2026-11-22T00:00:00Z", "versions": "iclfs=0.2.0", "selected": picks,
    })[RESULT_COLUMNS]
