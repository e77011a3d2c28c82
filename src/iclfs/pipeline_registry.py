"""The project's pipelines: one per ICLFS stage, chained in ``__default__``."""

from __future__ import annotations

from kedro.pipeline import Pipeline

from iclfs.pipelines import (
    benchmark,
    benchmark_report,
    data_processing,
    evaluation,
    laplacian,
    lgrc,
    publish,
    ranking,
    training,
    views,
)

STAGES = {
    "data_processing": data_processing,
    "views": views,
    "training": training,
    "ranking": ranking,
    "laplacian": laplacian,
    "lgrc": lgrc,
    "evaluation": evaluation,
    "publish": publish,
}
# The production path: no view inspection, no evaluation (labels are optional).
SELECT = ("data_processing", "training", "ranking", "laplacian", "lgrc", "publish")


def register_pipelines() -> dict[str, Pipeline]:
    """Every stage by name, ``select`` (the production path) and ``__default__`` (all of them)."""
    pipelines = {name: module.create_pipeline() for name, module in STAGES.items()}
    pipelines["select"] = sum((pipelines[name] for name in SELECT), Pipeline([]))
    pipelines["__default__"] = sum((pipelines[name] for name in STAGES), Pipeline([]))
    # One namespace per dataset (kedro run --pipeline benchmark --namespaces COIL20), then the report.
    pipelines["benchmark_report"] = benchmark_report.create_pipeline()
    pipelines["benchmark"] = benchmark.create_pipeline() + pipelines["benchmark_report"]
    # The baselines alone (no training), e.g. after a baseline changed; their rows replace theirs.
    pipelines["benchmark_baselines"] = benchmark.create_baselines_pipeline() + pipelines["benchmark_report"]
    return pipelines
