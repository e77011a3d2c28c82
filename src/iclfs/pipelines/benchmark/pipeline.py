"""``kedro run --pipeline benchmark [--namespaces COIL20,...]``.

One namespace per dataset; every dataset and node name is prefixed with it
(``COIL20.model_state``), and ``conf/base/catalog_benchmark.yml`` maps those
names with dataset factories. Parameters are shared: every namespace runs
the same settings.
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline

from iclfs.pipelines import data_processing, laplacian, lgrc, ranking, training

from .nodes import benchmark_metrics, evaluate_methods, merge_results, rank_baselines

# The scikit-feature files of SPEC §10, read as <benchmark_datasets_dir>/<name>.mat.
BENCHMARK_DATASETS = ("ALLAML", "arcene", "BASEHOCK", "COIL20", "nci9", "PCMAC", "Prostate_GE", "RELATHE",
                      "TOX_171", "warpPIE10P")


def dataset_pipeline() -> Pipeline:
    """Everything one dataset needs, un-namespaced: ICLFS, the baselines, one protocol."""
    iclfs = sum((stage.create_pipeline() for stage in (data_processing, training, ranking, laplacian, lgrc)),
                Pipeline([]))
    return iclfs + Pipeline(
        [
            Node(rank_baselines,
                 inputs=["standardized_data", "labels", "laplacian_scores", "params:benchmark", "params:seed"],
                 outputs=["baseline_rankings", "baseline_seconds"], name="rank_baselines"),
            Node(evaluate_methods,
                 inputs=["standardized_data", "labels", "ground_truth", "selected_features", "training_history",
                         "baseline_rankings", "baseline_seconds", "parameters"],
                 outputs="benchmark_evaluation", name="evaluate_methods"),
            Node(merge_results, inputs=["benchmark_evaluation", "previous_benchmark_result"],
                 outputs="benchmark_result", name="merge_results"),
            Node(benchmark_metrics, inputs="benchmark_evaluation", outputs="benchmark_metrics",
                 name="benchmark_metrics"),
        ],
        tags="benchmark",
    )


def create_pipeline(datasets: tuple[str, ...] = BENCHMARK_DATASETS, **kwargs) -> Pipeline:
    template = dataset_pipeline()
    shared = {name for name in template.inputs() if name.startswith("params:")}
    return sum(
        (Pipeline(template, namespace=name, parameters=shared, tags=["benchmark", name]) for name in datasets),
        Pipeline([]),
    )
