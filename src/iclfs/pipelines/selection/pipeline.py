from kedro.pipeline import Node, Pipeline

from .nodes import choose_k, list_at_k, reduce_data, select_every_k, select_one_run


def create_pipeline(carry_history: bool = True, **kwargs) -> Pipeline:
    """LGRC at every k; with ``carry_history`` (``select``) each list held to the last list handed on; then k, the
    list at k and the input reduced to it.

    The benchmark builds it with ``carry_history=False``: one run, no last lists, and no list handed on.
    """
    if carry_history:
        node = Node(select_every_k, inputs=["feature_ranking", "laplacian_scores", "previous_selections",
                                            "history_start", "params:selection"],
                    outputs="selections", name="select_every_k")
    else:
        return Pipeline([Node(select_one_run, inputs=["feature_ranking", "laplacian_scores", "params:selection"],
                              outputs="selections", name="select_every_k")])
    return Pipeline([
        node,
        Node(choose_k, inputs=["selections", "feature_ranking", "params:selection"], outputs="k_choice",
             name="choose_k"),
        Node(list_at_k, inputs=["selections", "k_choice"], outputs="feature_list", name="list_at_k"),
        Node(reduce_data, inputs=["raw_data", "feature_list", "ground_truth"], outputs="reduced_data",
             name="reduce_data"),
    ])
