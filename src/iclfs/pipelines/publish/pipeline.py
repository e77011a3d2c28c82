from kedro.pipeline import Node, Pipeline

from .nodes import compare_with_previous, feature_list, plot_score_distribution, reduce_data


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(feature_list, inputs=["selected_features", "params:select"], outputs="selected_feature_list",
                 name="feature_list"),
            Node(reduce_data, inputs=["raw_data", "selected_feature_list"], outputs="reduced_data",
                 name="reduce_data"),
            Node(compare_with_previous, inputs=["selected_features", "previous_selected_features"],
                 outputs=["selection_stability", "stability_metrics"], name="compare_with_previous"),
            Node(plot_score_distribution, inputs=["feature_ranking", "selected_feature_list"],
                 outputs="score_distribution_plot", name="plot_score_distribution"),
        ]
    )
