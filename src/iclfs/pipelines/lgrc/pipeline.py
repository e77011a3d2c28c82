from kedro.pipeline import Node, Pipeline

from .nodes import select_every_k


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                select_every_k,
                inputs=["feature_ranking", "laplacian_scores", "params:selection"],
                outputs="selected_features",
                name="select_every_k",
            )
        ]
    )
