from kedro.pipeline import Node, Pipeline

from .nodes import select_features


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                select_features,
                inputs=["feature_ranking", "laplacian_scores", "params:lgrc"],
                outputs="selected_features",
                name="select_features",
            )
        ]
    )
