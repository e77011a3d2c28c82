"""The project's pipelines: one per ICLFS stage, chained in ``__default__``."""

from __future__ import annotations

from kedro.pipeline import Pipeline

from iclfs.pipelines import data_processing, evaluation, laplacian, lgrc, ranking, training, views

STAGES = {
    "data_processing": data_processing,
    "views": views,
    "training": training,
    "ranking": ranking,
    "laplacian": laplacian,
    "lgrc": lgrc,
    "evaluation": evaluation,
}


def register_pipelines() -> dict[str, Pipeline]:
    """Every stage by name, and ``__default__`` running them all in dependency order."""
    pipelines = {name: module.create_pipeline() for name, module in STAGES.items()}
    pipelines["__default__"] = sum(pipelines.values(), Pipeline([]))
    return pipelines
