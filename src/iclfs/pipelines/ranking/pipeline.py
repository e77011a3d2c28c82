from kedro.pipeline import Node, Pipeline

from .nodes import rank_features


def create_pipeline(**kwargs) -> Pipeline:
    """The order: this run's members, with those of the stored history its ``history_start`` names."""
    return Pipeline([Node(rank_features,
                          inputs=["member_scores", "feature_names", "laplacian_scores", "ground_truth", "history_start",
                                  "previous_member_history", "params:ranking", "params:members", "params:selection"],
                          outputs=["feature_ranking", "member_history"], name="rank_features")])
