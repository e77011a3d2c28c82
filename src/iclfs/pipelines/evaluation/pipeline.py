from kedro.pipeline import Node, Pipeline

from .nodes import evaluate_with_kmeans, plot_accuracy_vs_k, summarize_evaluation


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                evaluate_with_kmeans,
                inputs=["standardized_data", "labels", "selections", "ground_truth",
                        "params:evaluation", "params:seed"],
                outputs="evaluation_table",
                name="evaluate_with_kmeans",
            ),
            Node(summarize_evaluation, inputs="evaluation_table",
                 outputs="evaluation_summary", name="summarize_evaluation"),
            Node(plot_accuracy_vs_k, inputs="evaluation_table", outputs="accuracy_vs_k", name="plot_accuracy_vs_k"),
        ]
    )
