from kedro.pipeline import Node, Pipeline

from .nodes import choose_k, list_at_k, reduce_data, select_every_k


def select_node() -> Node:
    """LGRC at every k, each list held to the last one handed on when the run's start says it holds."""
    return Node(select_every_k, inputs=["feature_ranking", "laplacian_scores", "ground_truth", "previous_selections",
                                        "history_start", "params:selection", "params:members"],
                outputs="selections", name="select_every_k")


def create_pipeline(**kwargs) -> Pipeline:
    """The selection at every k; then k, the list at k and the input reduced to it (the hand-off)."""
    return Pipeline([
        select_node(),
        Node(choose_k, inputs=["selections", "feature_ranking", "params:selection"], outputs="k_choice",
             name="choose_k"),
        Node(list_at_k, inputs=["selections", "k_choice"], outputs="feature_list", name="list_at_k"),
        Node(reduce_data, inputs=["raw_data", "feature_list", "ground_truth"], outputs="reduced_data",
             name="reduce_data"),
    ])
