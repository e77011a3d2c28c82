"""``kedro run --pipeline benchmark [--namespaces COIL20,...]``.

One namespace per dataset; every dataset and node name is prefixed with it
(``COIL20.model_state``), and ``conf/base/catalog_benchmark.yml`` maps those
names with dataset factories. Parameters are shared: every namespace runs
the same settings.
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline

from iclfs.pipelines import data_processing, laplacian, lgrc, ranking, training

from .nodes import benchmark_metrics, evaluate_baselines, evaluate_methods, merge_results, rank_baselines

# The scikit-feature files of SPEC §10, read as <benchmark_datasets_dir>/<name>.mat.
BENCHMARK_DATASETS = ("ALLAML", "arcene", "BASEHOCK", "COIL20", "nci9", "PCMAC", "Prostate_GE", "RELATHE",
                      "TOX_171", "warpPIE10P")


def _rank_baselines_node() -> Node:
    return Node(rank_baselines,
                inputs=["standardized_data", "labels", "laplacian_scores", "params:benchmark", "params:lgrc",
                        "params:seed"],
                outputs=["baseline_rankings", "baseline_seconds"], name="rank_baselines")


def _record_nodes() -> list[Node]:
    return [
        Node(merge_results, inputs=["benchmark_evaluation", "previous_benchmark_result"],
             outputs="benchmark_result", name="merge_results"),
        Node(benchmark_metrics, inputs="benchmark_evaluation", outputs="benchmark_metrics",
             name="benchmark_metrics"),
    ]


def dataset_pipeline() -> Pipeline:
    """Everything one dataset needs, un-namespaced: ICLFS, the baselines, one protocol."""
    iclfs = sum((stage.create_pipeline() for stage in (data_processing, training, ranking, laplacian, lgrc)),
                Pipeline([]))
    evaluate = Node(evaluate_methods,
                    inputs=["standardized_data", "labels", "ground_truth", "selected_features", "training_history",
                            "baseline_rankings", "baseline_seconds", "parameters"],
                    outputs="benchmark_evaluation", name="evaluate_methods")
    return iclfs + Pipeline([_rank_baselines_node(), evaluate, *_record_nodes()], tags="benchmark")


def baselines_pipeline() -> Pipeline:
    """The baselines alone, un-namespaced: no training; their rows replace theirs in the result table.

    For a new or changed baseline: ``kedro run --pipeline benchmark_baselines
    [--namespaces COIL20] [--params "benchmark.baselines=[mcfs]"]``.
    """
    stages = sum((stage.create_pipeline() for stage in (data_processing, laplacian)), Pipeline([]))
    evaluate = Node(evaluate_baselines,
                    inputs=["standardized_data", "labels", "ground_truth", "baseline_rankings", "baseline_seconds",
                            "parameters"],
                    outputs="benchmark_evaluation", name="evaluate_baselines")
    return stages + Pipeline([_rank_baselines_node(), evaluate, *_record_nodes()], tags="benchmark")


def _per_dataset(template: Pipeline, datasets: tuple[str, ...]) -> Pipeline:
    shared = {name for name in template.inputs() if name.startswith("params:")}
    return sum(
        (Pipeline(template, namespace=name, parameters=shared, tags=["benchmark", name]) for name in datasets),
        Pipeline([]),
    )


def create_pipeline(datasets: tuple[str, ...] = BENCHMARK_DATASETS, **kwargs) -> Pipeline:
    return _per_dataset(dataset_pipeline(), datasets)


def create_baselines_pipeline(datasets: tuple[str, ...] = BENCHMARK_DATASETS) -> Pipeline:
    return _per_dataset(baselines_pipeline(), datasets)
