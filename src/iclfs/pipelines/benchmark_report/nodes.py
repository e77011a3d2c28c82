"""Gather every benchmark cell into the report and its figures (``kedro run --pipeline benchmark_report``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import matplotlib.pyplot as plt
import pandas as pd

from iclfs.evaluation._benchmark import gather
from iclfs.evaluation._report import build_report, figure, spec_for
from iclfs.io._tables import TableReadError, find_dataset
from iclfs.method._config import Settings
from iclfs.project._frames import partitions

Partitions = Mapping[str, Callable[[], pd.DataFrame] | pd.DataFrame]


def collect_cells(benchmark_cells: Partitions, published_cells: Partitions) -> pd.DataFrame:
    """Every cell in one table: this machine's cells over the published ones (a working cell replaces its twin)."""
    return gather({**partitions(published_cells), **partitions(benchmark_cells)})


def build_benchmark_report(benchmark_results: pd.DataFrame, parameters: dict, benchmark: dict,
          benchmark_report: dict) -> tuple[str, dict[str, plt.Figure]]:
    """The Markdown report and one figure per dataset with results.

    The report compares the project's default settings (``parameters``) with
    the baselines over ``benchmark_report.seeds``; a dataset whose file is in
    none of ``benchmark.folders`` is listed as not run.
    """
    spec = spec_for(Settings.from_parameters(parameters), benchmark_report["seeds"], benchmark["datasets"])
    missing = {}
    for dataset in spec.datasets:
        try:
            find_dataset(dataset, benchmark["folders"])
        except TableReadError as err:
            missing[dataset] = str(err)
    report = build_report(benchmark_results, spec, "kedro run --pipeline benchmark_report", missing, figures=None,
                          cells="data/08_reporting/benchmark/cells/ and benchmarks/results/cells/")
    figures = {f"{d}.png": figure(benchmark_results, d, spec) for d in sorted(set(benchmark_results["dataset"]))}
    return report, figures
