"""Gather every benchmark cell into the report (docs/reports/benchmark.md) and its figures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from iclfs.evaluation.benchmark import gather
from iclfs.evaluation.report import build_report, figure, spec_for
from iclfs.method.config import Settings
from iclfs.pipelines.frames import partitions

Partitions = Mapping[str, Callable[[], pd.DataFrame] | pd.DataFrame]


def collect_cells(benchmark_cells: Partitions, published_cells: Partitions) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """The working cells (this machine's runs) over the published ones: a working cell replaces its published twin.

    Returns
    -------
    cells_to_publish : dict
        The working cells, ``{<dataset>/<method slug>/seed_<seed>: table}``, to publish under docs/.
    benchmark_results : DataFrame
        Every cell's rows, working and published (:func:`iclfs.evaluation.benchmark.gather`).
    """
    working = partitions(benchmark_cells)
    everything = {**partitions(published_cells), **working}
    return working, gather(everything)


def build(benchmark_results: pd.DataFrame, parameters: dict, benchmark: dict,
          benchmark_report: dict) -> tuple[str, dict[str, plt.Figure]]:
    """The Markdown report and one figure per dataset with results.

    The report compares the project's default settings (``parameters``) with
    one run of them and the best baseline over ``benchmark_report.seeds``; a
    dataset whose file is in none of ``benchmark_report.datasets_dirs`` is listed as not run.
    """
    datasets_dirs = list(benchmark_report["datasets_dirs"])
    spec = spec_for(Settings.from_parameters(parameters), benchmark_report["seeds"], benchmark["datasets"])
    missing = {}
    for dataset in spec.datasets:
        if not any((Path(d) / f"{dataset}.mat").exists() for d in datasets_dirs):
            missing[dataset] = f"{dataset}.mat is in none of {', '.join(datasets_dirs)}"
    report = build_report(benchmark_results, spec, "kedro run --pipeline benchmark_report", missing)
    figures = {f"{d}.png": figure(benchmark_results, d, spec) for d in sorted(set(benchmark_results["dataset"]))}
    return report, figures
