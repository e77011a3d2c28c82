from kedro.pipeline import Node, Pipeline

from .nodes import plot_training_log, start_history, train_members, train_one_run

_OUTPUTS = ["model_state", "training_log", "member_scores"]


def create_pipeline(carry_history: bool = True, **kwargs) -> Pipeline:
    """Training; with ``carry_history`` (``select``) its seed comes from the member history (params members.carry).

    The benchmark builds it with ``carry_history=False``: its method is one run at ``params:seed``.
    """
    if carry_history:
        nodes = [
            Node(start_history, inputs=["previous_member_history", "feature_names", "params:members",
                                        "params:selection", "params:seed"],
                 outputs="history_start", name="start_history"),
            Node(train_members, inputs=["inverted_data", "feature_names", "params:training", "params:views",
                                        "params:runtime", "params:members", "params:ranking", "history_start",
                                        "params:selection", "params:baselines", "measured_data"],
                 outputs=_OUTPUTS, name="train_members"),
        ]
    else:
        nodes = [Node(train_one_run, inputs=["inverted_data", "params:training", "params:views", "params:runtime",
                                             "params:members", "params:seed"],
                      outputs=_OUTPUTS, name="train_members")]
    return Pipeline([*nodes, Node(plot_training_log, inputs="training_log", outputs="training_loss_plot",
                                  name="plot_training_log")])
