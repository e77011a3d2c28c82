from kedro.pipeline import Node, Pipeline

from .nodes import (
    build_run_report,
    choose_production_k,
    compare_with_previous,
    feature_list,
    plot_score_distribution,
    reduce_data,
)


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(choose_production_k, inputs=["selected_features", "feature_ranking", "params:selection"],
                 outputs=["k_choice", "selection_metrics"], name="choose_production_k"),
            Node(feature_list, inputs=["selected_features", "k_choice"], outputs="selected_feature_list",
                 name="feature_list"),
            Node(reduce_data, inputs=["raw_data", "selected_feature_list", "ground_truth"], outputs="reduced_data",
                 name="reduce_data"),
            Node(compare_with_previous,
                 inputs=["selected_features", "previous_selected_features", "selected_feature_list",
                         "previous_feature_lists", "feature_ranking", "history_start"],
                 outputs=["selection_stability", "stability_metrics"], name="compare_with_previous"),
            Node(plot_score_distribution, inputs=["feature_ranking", "selected_feature_list"],
                 outputs="score_distribution_plot", name="plot_score_distribution"),
            Node(build_run_report,
                 inputs=["ground_truth", "standardized_data", "labels", "k_choice", "selected_feature_list",
                         "training_history", "feature_ranking", "laplacian_scores", "evaluation_table",
                         "selection_stability"],
                 outputs="run_report", name="build_run_report"),
        ]
    )
