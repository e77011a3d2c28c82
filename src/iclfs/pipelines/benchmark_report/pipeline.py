"""``kedro run --pipeline benchmark_report``: every cell in one report, under data/08_reporting/benchmark/."""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline

from .nodes import build_benchmark_report, collect_cells


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(collect_cells, inputs=["benchmark_cells", "published_cells"], outputs="benchmark_results",
                 name="collect_cells"),
            Node(build_benchmark_report,
                 inputs=["benchmark_results", "parameters", "params:benchmark", "params:benchmark_report"],
                 outputs=["benchmark_report", "benchmark_figures"], name="build_report"),
        ],
        tags="benchmark_report",
    )
