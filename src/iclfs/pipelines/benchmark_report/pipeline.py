"""``kedro run --pipeline benchmark_report``: rebuild docs/benchmark.md from docs/benchmark/*.csv."""

from __future__ import annotations

import warnings

from kedro.pipeline import Node, Pipeline

from iclfs.pipelines.benchmark import BENCHMARK_DATASETS

from .nodes import build_report, plot_benchmark, publish_report, summary_metrics


def create_pipeline(datasets: tuple[str, ...] = BENCHMARK_DATASETS, **kwargs) -> Pipeline:
    results = {name: f"{name}.benchmark_result" for name in datasets}
    with warnings.catch_warnings():
        # Kedro warns about dotted names made outside a namespace; these are the
        # namespaced outputs of the benchmark pipeline, named on purpose.
        warnings.filterwarnings("ignore", message="One or more dataset names contain '.'")
        return _pipeline(results)


def _pipeline(results: dict[str, str]) -> Pipeline:
    return Pipeline(
        [
            Node(build_report, inputs={"benchmark_report": "params:benchmark_report",
                                       "benchmark_notes": "benchmark_notes", **results},
                 outputs=["benchmark_report", "benchmark_summary"], name="build_report"),
            Node(plot_benchmark, inputs={"benchmark_report": "params:benchmark_report", **results},
                 outputs=["benchmark_figures", "benchmark_figures_published"], name="plot_benchmark"),
            Node(publish_report, inputs="benchmark_report", outputs="benchmark_report_published",
                 name="publish_report"),
            Node(summary_metrics, inputs="benchmark_summary", outputs="benchmark_summary_metrics",
                 name="summary_metrics"),
        ],
        tags="benchmark_report",
    )
