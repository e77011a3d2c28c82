from kedro.pipeline import Node, Pipeline

from .nodes import rank_features


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(rank_features,
                 inputs=["member_scores", "feature_names", "laplacian_scores", "params:ranking", "params:consensus",
                         "params:selection"],
                 outputs=["feature_ranking", "consensus_metrics"], name="rank_features"),
        ]
    )
