from kedro.pipeline import Node, Pipeline

from .nodes import rank_features, rank_one_run

_INPUTS = ["member_scores", "feature_names", "laplacian_scores"]
_PARAMS = ["params:ranking", "params:members", "params:selection"]


def create_pipeline(carry_history: bool = True, **kwargs) -> Pipeline:
    """The order; with ``carry_history`` (``select``) from every kept member when params members.carry is on.

    The benchmark builds it with ``carry_history=False``: one run's members only.
    """
    if carry_history:
        return Pipeline([Node(rank_features,
                              inputs=[*_INPUTS, "ground_truth", "previous_member_history", *_PARAMS],
                              outputs=["feature_ranking", "member_history"],
                              name="rank_features")])
    return Pipeline([Node(rank_one_run, inputs=[*_INPUTS, *_PARAMS], outputs="feature_ranking",
                          name="rank_features")])
