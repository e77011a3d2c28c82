from kedro.pipeline import Node, Pipeline

from .nodes import build_run_report, compare_tables, compare_with_previous, plot_score_distribution


def create_pipeline(**kwargs) -> Pipeline:
    """The run report: what changed since the last run, how steady the list is, and the HTML page."""
    return Pipeline(
        [
            Node(compare_tables, inputs=["feature_names", "ground_truth", "previous_feature_names",
                                         "previous_ground_truth"], outputs="table_changes", name="compare_tables"),
            Node(compare_with_previous,
                 inputs=["selections", "previous_selections", "feature_list", "previous_lists", "feature_ranking",
                         "history_start", "table_changes", "params:selection", "params:members"],
                 outputs="selection_stability", name="compare_with_previous"),
            Node(plot_score_distribution, inputs=["feature_ranking", "feature_list"],
                 outputs="score_distribution_plot", name="plot_score_distribution"),
            Node(build_run_report,
                 inputs=["ground_truth", "standardized_data", "labels", "k_choice", "feature_list",
                         "training_log", "feature_ranking", "laplacian_scores", "evaluation_table",
                         "selection_stability", "params:selection"],
                 outputs="run_report", name="build_run_report"),
        ]
    )
