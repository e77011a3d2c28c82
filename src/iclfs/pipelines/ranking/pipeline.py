from kedro.pipeline import Node, Pipeline

from .nodes import rank_features, rank_one_run

_INPUTS = ["member_scores", "feature_names", "laplacian_scores"]
_PARAMS = ["params:ranking", "params:consensus", "params:selection"]


def create_pipeline(carry_history: bool = True, **kwargs) -> Pipeline:
    """The order; with ``carry_history`` (``select``) from every carried member when params history.carry is on.

    The benchmark builds it with ``carry_history=False``: one run's members only.
    """
    if carry_history:
        return Pipeline([Node(rank_features,
                              inputs=[*_INPUTS, "ground_truth", "previous_member_history", *_PARAMS, "params:history"],
                              outputs=["feature_ranking", "consensus_metrics", "member_history"],
                              name="rank_features")])
    return Pipeline([Node(rank_one_run, inputs=[*_INPUTS, *_PARAMS], outputs=["feature_ranking", "consensus_metrics"],
                          name="rank_features")])
