"""``kedro run --pipeline benchmark [--namespaces COIL20,...] [--params seed=43]``.

One namespace per dataset of ``benchmark.datasets`` whose file exists; every
dataset and node name is prefixed with it (``COIL20.model_state``), and
``conf/base/catalog_benchmark.yml`` maps those names with dataset factories.
Parameters are shared: every namespace runs the same settings. Each run
writes one cell per (dataset, method, seed) (``{namespace}.iclfs_cells``,
``{namespace}.baseline_cells``), never touching another seed's or another
method's; ``benchmark_report`` gathers them.
"""

from __future__ import annotations

from collections.abc import Sequence

from kedro.pipeline import Node, Pipeline

from iclfs.pipelines import data_processing, laplacian, ranking, training
from iclfs.pipelines.selection import pipeline as selection
from iclfs.pipelines.training.nodes import start_without_history

from .nodes import evaluate_baselines, evaluate_iclfs

_COMMON = ["standardized_data", "labels", "ground_truth"]


def _baselines_node() -> Node:
    return Node(evaluate_baselines,
                inputs=[*_COMMON, "measured_data", "params:benchmark", "params:baselines", "params:selection",
                        "params:evaluation", "params:runtime", "params:seed"],
                outputs="baseline_cells", name="evaluate_baselines")


def dataset_pipeline() -> Pipeline:
    """Everything one dataset needs, un-namespaced: ICLFS, the baselines, their cells."""
    # The benchmark's method is one run: its start says so (no member history is read or kept, no list held),
    # and the stages after it are select's own.
    trained = training.create_pipeline()
    trained = trained.only_nodes(*(node.name for node in trained.nodes if node.name != "start_history"))
    no_history = Node(start_without_history, inputs="params:seed", outputs="history_start", name="start_history")
    stages = (data_processing.create_pipeline(keep_measured=True) + Pipeline([no_history]) + trained
              + laplacian.create_pipeline() + ranking.create_pipeline() + Pipeline([selection.select_node()]))
    return stages + Pipeline([
        Node(evaluate_iclfs, inputs=[*_COMMON, "selections", "training_log", "parameters"],
             outputs="iclfs_cells", name="evaluate_iclfs"),
        _baselines_node(),
    ], tags="benchmark")


def baselines_pipeline() -> Pipeline:
    """The baselines alone, un-namespaced: no training (``kedro run --pipeline benchmark_baselines``)."""
    return data_processing.create_pipeline(keep_measured=True) + Pipeline([_baselines_node()], tags="benchmark")


def per_dataset(template: Pipeline, datasets: Sequence[str]) -> Pipeline:
    shared = {name for name in template.inputs() if name.startswith("params:") or name == "parameters"}
    return sum(
        (Pipeline(template, namespace=name, parameters=shared, tags=["benchmark", name]) for name in datasets),
        Pipeline([]),
    )


def create_pipeline(datasets: Sequence[str] = (), **kwargs) -> Pipeline:
    return per_dataset(dataset_pipeline(), datasets)


def create_baselines_pipeline(datasets: Sequence[str] = ()) -> Pipeline:
    return per_dataset(baselines_pipeline(), datasets)
