from kedro.pipeline import Node, Pipeline

from .nodes import rank_by_score, score_features


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(score_features, inputs=["embeddings", "feature_names"], outputs="feature_scores",
                 name="score_features"),
            Node(rank_by_score, inputs=["feature_scores", "params:ranking"], outputs="feature_ranking",
                 name="rank_features"),
        ]
    )
