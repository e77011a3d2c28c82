"""``kedro run --pipeline benchmark_report``: publish the cells and rebuild docs/reports/benchmark.md."""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline

from .nodes import build, collect_cells


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(collect_cells, inputs=["benchmark_cells", "published_cells"],
                 outputs=["cells_to_publish", "benchmark_results"], name="collect_cells"),
            Node(build, inputs=["benchmark_results", "parameters", "params:benchmark", "params:benchmark_report"],
                 outputs=["benchmark_report", "benchmark_figures"], name="build_report"),
        ],
        tags="benchmark_report",
    )
