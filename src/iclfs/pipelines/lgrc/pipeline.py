from kedro.pipeline import Node, Pipeline

from .nodes import select_every_k, select_one_run


def create_pipeline(carry_history: bool = True, **kwargs) -> Pipeline:
    """LGRC at every k; with ``carry_history`` (``select``) each list held to the last list handed on.

    The benchmark builds it with ``carry_history=False``: one run, no last lists.
    """
    if carry_history:
        node = Node(select_every_k, inputs=["feature_ranking", "laplacian_scores", "previous_selections",
                                            "history_start", "params:selection"],
                    outputs="selections", name="select_every_k")
    else:
        node = Node(select_one_run, inputs=["feature_ranking", "laplacian_scores", "params:selection"],
                    outputs="selections", name="select_every_k")
    return Pipeline([node])
